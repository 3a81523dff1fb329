"""Binlog codec: framing, one decoder registry, immutable records, encoders.

    from libs.binlog import iter_events
    for event in iter_events(open("mdb-bin.000001", "rb").read(), file="mdb-bin.000001"):
        print(event.pos, event.type_name, event.body)

Pure Python, no Spark. Errors are typed `BinlogError`s carrying file/pos/type_code/raw.
"""
from libs.binlog.constants import EventType
from libs.binlog.context import DecodeContext
from libs.binlog.dummy import Dummy, DummyEvent, make_begin, make_dummy, substitute_for_replica
from libs.binlog.errors import (BinlogError, ChecksumError, LimitError, MalformedError,
                     NoFormatDescriptionError, TruncatedError, UnknownEventError, UnsupportedError)
from libs.binlog.envelope import Event, Header, Ignorable, Opaque
from libs.binlog.events_control import (FormatDescription, Heartbeat, Incident, Rotate, StartV3, Stop,
                             XaPrepare, Xid)
from libs.binlog.events_mariadb import BinlogCheckpoint, GtidList, GtidListEntry, MariaGtid, RowsQuery
from libs.binlog.events_mysql_group import TransactionContext, TransactionPayload, ViewChange
from libs.binlog.events_mysql_gtid import GtidInterval, MysqlGtid, PreviousGtids
from libs.binlog.events_statement import (CompressedQuery, ExecuteLoadQuery, Intvar, LoadBlock, LoadFileRef,
                               Query, Rand, UserVar)
from libs.binlog.limits import DecodeLimits
from libs.binlog.framing import check_magic, decode_event, encode_event, iter_events, iter_frames
from libs.binlog.rows import RowChange, Rows, RowsWireDetail
from libs.binlog.rows_partial import JsonDiff
from libs.binlog.registry import CODECS
from libs.binlog.tablemap import TableMap


def decode_headers(frames):
    """Vectorised 19-byte header decode (see vectorized.py); imported lazily (pyarrow/numpy)."""
    from libs.binlog.vectorized import decode_headers as _decode_headers

    return _decode_headers(frames)


__all__ = [
    "iter_events", "iter_frames", "decode_event", "encode_event", "decode_headers", "check_magic",
    "make_dummy", "make_begin", "substitute_for_replica", "CODECS", "DecodeContext", "DecodeLimits",
    "EventType",
    "BinlogError", "ChecksumError", "LimitError", "MalformedError", "NoFormatDescriptionError",
    "TruncatedError", "UnknownEventError", "UnsupportedError",
    "Event", "Header", "FormatDescription", "Rotate", "Stop", "Xid", "MysqlGtid", "MariaGtid",
    "XaPrepare", "Query", "RowsQuery", "Dummy", "Ignorable", "RowChange", "TableMap", "Rows",
    "RowsWireDetail", "JsonDiff",
    "BinlogCheckpoint", "CompressedQuery", "DummyEvent", "ExecuteLoadQuery", "GtidInterval",
    "GtidList", "GtidListEntry", "Heartbeat", "Incident", "Intvar", "LoadBlock", "LoadFileRef",
    "Opaque", "PreviousGtids", "Rand", "StartV3", "TransactionContext", "TransactionPayload",
    "UserVar", "ViewChange",
]
