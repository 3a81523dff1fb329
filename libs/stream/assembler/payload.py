"""Which frames of a group are its content (kept in Transaction.payload) and which only delimit
it (GTID, BEGIN, COMMIT, Xid, XA control statements, XA_prepare)."""
from __future__ import annotations

from libs.binlog.constants import EventType
from libs.stream.boundary import INSIDE_TYPES, PRE_STATEMENT_TYPES, QueryKind, query_kind, query_text

from libs.stream.assembler.model import Frame

# Intvar/Rand/User_var are the context a statement-format statement needs to be replayed.
# A Transaction_payload (MySQL 8.0.20+ binlog_transaction_compression) holds the whole group's
# events compressed; change_records expands them.
_CONTENT_TYPES = ((INSIDE_TYPES | PRE_STATEMENT_TYPES | {EventType.TRANSACTION_PAYLOAD})
                  - {EventType.TRANSACTION_CONTEXT, EventType.VIEW_CHANGE})
_CONTENT_QUERIES = (QueryKind.STATEMENT, QueryKind.SAVEPOINT)


def is_payload(frame: Frame) -> bool:
    event = frame.event
    sql = query_text(event)
    if sql is not None:
        return query_kind(sql) in _CONTENT_QUERIES
    return event.header.type_code in _CONTENT_TYPES
