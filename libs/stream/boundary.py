"""WL#4162 transaction boundary parser: a pure two-step state machine (STYLE practice 6).

    classify(event, flavour, context) -> BoundaryType     what kind of boundary this event is
    step(state, boundary)             -> (state, ok)      the seed's transition table, exactly
    advance(context, event, flavour)  -> Advance          both, plus the seed's reset on error

`classify` reads the three marker bits first (WL#4162 D1/D2, mask in libs/binlog/constants.py).
Unmarked events (every real server) are classified "on the same assumptions the master does for
marking" (transition table note *1), following the seed's table "Transaction boundary types for
log event types" plus its binlog.cc modifications M1 (an event written after a GTID: START ->
INSIDE, SELF -> END) and M2 (Intvar/Rand/User_var before a self-contained statement: the first
one START, the statement END). That needs to know what opened the current group, so the parser
context is (state, opening); `classify` stays a pure function of (event, flavour, context).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, IntEnum

from libs.binlog import Dummy, Ignorable, MariaGtid, Query, XaPrepare
from libs.binlog.constants import LOG_EVENT_ARTIFICIAL_F, BoundaryType, EventType, boundary_marker
from libs.binlog.event_class import ROWS_EVENT_TYPES, EventClass, event_class

B = BoundaryType

# WL#4162 D2 names, as the seed's warning prints them ("... from Not Defined to Inside Transaction").
BOUNDARY_NAMES = {
    B.NOT_DEFINED: "Not Defined",
    B.IGNORE: "Ignore Boundary",
    B.SELF_CONTAINED: "Self Contained",
    B.START: "Start Transaction",
    B.INSIDE: "Inside Transaction",
    B.END: "End Transaction",
}

# The seed's "Transaction Boundary Parser Transition Table": (from state, to boundary) pairs that
# are Ok. Every other pair with a state-changing boundary is Err. IGNORE keeps the state (*2).
_OK = frozenset({
    (B.NOT_DEFINED, B.SELF_CONTAINED), (B.SELF_CONTAINED, B.SELF_CONTAINED), (B.END, B.SELF_CONTAINED),
    (B.NOT_DEFINED, B.START), (B.SELF_CONTAINED, B.START), (B.END, B.START),
    (B.START, B.INSIDE), (B.INSIDE, B.INSIDE),
    (B.START, B.END), (B.INSIDE, B.END),
})
PARSER_STATES = (B.NOT_DEFINED, B.SELF_CONTAINED, B.START, B.INSIDE, B.END)


def step(state: BoundaryType, boundary: BoundaryType) -> tuple[BoundaryType, bool]:
    """Advance the parser by one classified event (WL#4162 transition table, exactly).

     ====================================================================
     |From boundary type ->|   0    |   2    |   3    |   4    |   5    |
     |                     |  Not   |Self Con| Start  | Inside |  End   |
     |To boundary type     |Defined | tained | Trans  | Trans  | Trans  |
     |=====================|========|========|========|========|========|
     |0) Not Defined       |      This is the parser starting type      |*1
     |1) Ignore Boundary   |   The parser is never set to this type     |*2
     |2) Self Contained    |   Ok   |   Ok   |  Err   |  Err   |   Ok   |
     |3) Start Transaction |   Ok   |   Ok   |  Err   |  Err   |   Ok   |
     |4) Inside Transaction|  Err   |  Err   |   Ok   |   Ok   |  Err   |
     |5) End Transaction   |  Err   |  Err   |   Ok   |   Ok   |  Err   |
     ====================================================================
    *2: IGNORE keeps the current state (ok). Row 0: only reset() sets Not Defined; `classify`
    never yields it (*1 resolves unmarked events), so feeding it is an Err like the other Err
    cells. On Err the parser resets (rpl_slave.cc M3, mysqlbinlog.cc M3b2): the returned state is
    NOT_DEFINED and `transition_warning` gives the seed's message.

    >>> step(BoundaryType.START, BoundaryType.INSIDE)
    (<BoundaryType.INSIDE: 4>, True)
    >>> step(BoundaryType.NOT_DEFINED, BoundaryType.INSIDE)
    (<BoundaryType.NOT_DEFINED: 0>, False)
    """
    if state not in PARSER_STATES:
        raise ValueError(f"the parser is never in state {state!r}")
    if boundary is B.IGNORE:
        return state, True
    if (state, boundary) in _OK:
        return boundary, True
    return B.NOT_DEFINED, False


def transition_warning(state: BoundaryType, boundary: BoundaryType) -> str:
    """The seed's warning (rpl_slave.cc M3 / mysqlbinlog.cc M3b1) for an invalid transition."""
    return f"Unable to change boundary parser from {BOUNDARY_NAMES[state]} to {BOUNDARY_NAMES[boundary]}."


# ---- Query text ---------------------------------------------------------------------------------

class QueryKind(Enum):
    BEGIN = "begin"  # BEGIN (also START TRANSACTION, which servers log as BEGIN)
    XA_START = "xa_start"
    XA_END = "xa_end"
    XA_PREPARE = "xa_prepare"
    XA_COMMIT = "xa_commit"
    XA_ROLLBACK = "xa_rollback"
    COMMIT = "commit"
    ROLLBACK = "rollback"  # whole-transaction ROLLBACK, not ROLLBACK TO <savepoint>
    SAVEPOINT = "savepoint"  # SAVEPOINT / ROLLBACK TO / RELEASE SAVEPOINT: inside a transaction
    STATEMENT = "statement"  # DDL, statement-format DML, anything else


_QUERY_PATTERNS = (  # first match wins; case-insensitive like trx_boundary_parser.cc
    (re.compile(r"BEGIN\s*(WORK)?\s*;?$|START\s+TRANSACTION\b"), QueryKind.BEGIN),
    (re.compile(r"XA\s+(START|BEGIN)\b"), QueryKind.XA_START),
    (re.compile(r"XA\s+END\b"), QueryKind.XA_END),
    (re.compile(r"XA\s+PREPARE\b"), QueryKind.XA_PREPARE),
    (re.compile(r"XA\s+COMMIT\b"), QueryKind.XA_COMMIT),
    (re.compile(r"XA\s+ROLLBACK\b"), QueryKind.XA_ROLLBACK),
    (re.compile(r"COMMIT\s*(WORK)?\s*;?$"), QueryKind.COMMIT),
    (re.compile(r"ROLLBACK\s+(WORK\s+)?TO\b|SAVEPOINT\b|RELEASE\s+SAVEPOINT\b"), QueryKind.SAVEPOINT),
    (re.compile(r"ROLLBACK\b"), QueryKind.ROLLBACK),
)


def query_kind(sql: str) -> QueryKind:
    """What a Query event's text does to the transaction (Query_log_event is_begin/commit/rollback)."""
    text = sql.lstrip().upper()
    for pattern, kind in _QUERY_PATTERNS:
        if pattern.match(text):
            return kind
    return QueryKind.STATEMENT


# ---- classify -----------------------------------------------------------------------------------

class Opening(IntEnum):
    """What opened the current group: decides how the next statement is classified."""

    NONE = 0  # no group open
    GTID = 1  # MySQL GTID, or MariaDB standalone GTID: a BEGIN follows (INSIDE) or one statement ends it
    PRE_STATEMENT = 2  # Intvar/Rand/User_var began the group (seed *4): the next statement ends it
    EXPLICIT = 3  # BEGIN / XA START / MariaDB transactional GTID: statements are INSIDE until an END


@dataclass(frozen=True, slots=True)
class ParserContext:
    state: BoundaryType = B.NOT_DEFINED
    opening: Opening = Opening.NONE

    @property
    def in_group(self) -> bool:
        return self.state in (B.START, B.INSIDE)


INITIAL = ParserContext()

MYSQL_GTID_TYPES = frozenset({EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED})
QUERY_TYPES = frozenset({EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY})
PRE_STATEMENT_TYPES = frozenset({EventType.INTVAR, EventType.RAND, EventType.USER_VAR})
# Seed table: Table_map, Rows, Rows_query (and MariaDB's Annotate_rows, its twin), Append_block,
# Begin_load_query are INSIDE. Transaction_context / View_change (group replication) are logged
# inside a GTID group; the seed predates them, INSIDE is our decision.
INSIDE_TYPES = ROWS_EVENT_TYPES | {
    EventType.TABLE_MAP, EventType.ROWS_QUERY, EventType.ANNOTATE_ROWS, EventType.APPEND_BLOCK,
    EventType.BEGIN_LOAD_QUERY, EventType.TRANSACTION_CONTEXT, EventType.VIEW_CHANGE,
}
# IGNORE (D2.1: may appear mid-transaction, never part of one): Format_description (seed table),
# heartbeats (sent by the dump thread between events; the seed table row says SELF but D2.1's
# reasoning for fake Rotate applies, and they are not binlog bytes). The seed table's Ignorable
# row is event_class's IGNORABLE, handled before these (type 28 has no case of its own).
IGNORE_TYPES = frozenset({EventType.FORMAT_DESCRIPTION, EventType.HEARTBEAT, EventType.HEARTBEAT_V2})


def is_fake_rotate(event, context: ParserContext = INITIAL) -> bool:
    """rpl_binlog_sender.cc M1: the dump thread's fake Rotate (artificial flag, log_pos 0), or any
    Rotate in the middle of a transaction (D2.1) - a real one is only written between groups."""
    header = event.header
    return header.type_code == EventType.ROTATE and (
        bool(header.flags & LOG_EVENT_ARTIFICIAL_F) or header.log_pos == 0 or context.in_group)


def query_text(event) -> str | None:
    """SQL text of a Query-like body (Query, Query_compressed, Execute_load_query), else None."""
    body = event.body
    if isinstance(body, (Dummy, Ignorable)) or not isinstance(getattr(body, "query", None), bytes):
        return None
    return body.sql if isinstance(body, Query) else body.query.decode("utf-8", errors="replace")


def classify(event, flavour: str, context: ParserContext = INITIAL) -> BoundaryType:
    """The WL#4162 boundary type of `event`, given what the parser saw before it (pure)."""
    marker = boundary_marker(event.header.flags)
    if marker is not B.NOT_DEFINED:
        return marker  # the master marked it (WL#4162 F1): trust the marker
    code, body = event.header.type_code, event.body
    if isinstance(body, (Dummy, Ignorable)):
        return B.IGNORE  # MariaDB dummy placeholders may stand anywhere; WL#4033 ignorable
    known = event_class(code, event.header.flags, flavour)
    if known is not EventClass.KNOWN:
        # Unknown_log_event is SELF (seed table *1); an Ignorable_log_event is IGNORE (WL#4033).
        return B.IGNORE if known is EventClass.IGNORABLE else B.SELF_CONTAINED
    if code in IGNORE_TYPES or is_fake_rotate(event, context):
        return B.IGNORE
    if code in MYSQL_GTID_TYPES or code == EventType.MARIA_GTID:
        return B.START  # Gtid_log_event START (seed table); MariaDB standalone too, see Opening
    if code in (EventType.XID, EventType.XA_PREPARE, EventType.TRANSACTION_PAYLOAD):
        # Xid END (seed table); XA_prepare ends the XA-prepared group (trx_boundary_parser.cc);
        # Transaction_payload carries the whole compressed body of its GTID's transaction.
        return B.END
    if code in PRE_STATEMENT_TYPES:
        return B.INSIDE if context.in_group else B.START  # constructor INSIDE; START by M2 (*4)
    if code in INSIDE_TYPES:
        return B.INSIDE
    sql = query_text(event)
    if code in QUERY_TYPES and sql is not None:
        return _classify_query(query_kind(sql), context)
    # Log_event default SELF (*1): Start_v3, Stop, real Rotate, Load family, Incident,
    # Previous_gtids, MariaDB Gtid_list / Binlog_checkpoint / Start_encryption.
    return B.SELF_CONTAINED


def _classify_query(kind: QueryKind, context: ParserContext) -> BoundaryType:
    if kind in (QueryKind.BEGIN, QueryKind.XA_START):
        # BEGIN START (Query constructor); written after a GTID it is INSIDE (*2, binlog.cc M1a).
        return B.INSIDE if context.opening is Opening.GTID else B.START
    if kind in (QueryKind.COMMIT, QueryKind.ROLLBACK, QueryKind.XA_PREPARE):
        return B.END  # COMMIT/ROLLBACK END (Query constructor)
    if kind in (QueryKind.XA_COMMIT, QueryKind.XA_ROLLBACK):
        # Ends its GTID group (MySQL and MariaDB log GTID + XA COMMIT); without one it is an
        # auto-committed statement of its own (seed silent: SELF).
        return B.END if context.in_group else B.SELF_CONTAINED
    # An ordinary statement (DDL, statement DML, XA END, SAVEPOINT):
    if context.opening is Opening.EXPLICIT:
        return B.INSIDE  # "not immediate logging" INSIDE (Query constructor, M5)
    if context.in_group:
        return B.END  # "immediate logging" after a GTID (*2, M1b) or after pre-statements (M2)
    return B.SELF_CONTAINED  # D2.1a: auto-commit statement without GTID and pre-statements


# ---- advance ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Advance:
    """Result of feeding one event. `boundary` is the type under which the event was accepted
    (None: rejected). `warning` is the seed's text when the transition was invalid; the parser
    was then reset and the event offered once more to the reset parser, which accepts it only
    when it can begin a stream (SELF or START: "until it reaches a new transaction boundary
    parser consistent state (a self contained event or a start transaction)", rpl_slave.cc M3)."""

    context: ParserContext
    boundary: BoundaryType | None
    warning: str | None = None

    @property
    def ok(self) -> bool:
        return self.warning is None


def advance(context: ParserContext, event, flavour: str) -> Advance:
    boundary = classify(event, flavour, context)
    state, ok = step(context.state, boundary)
    if ok:
        opening = _opening_after(context.opening, event, boundary, state)
        # the same context object when nothing changed (most frames inside a group): the
        # assembler then keeps its state as it is instead of copying it
        same = state is context.state and opening is context.opening
        return Advance(context if same else ParserContext(state, opening), boundary)
    warning = transition_warning(context.state, boundary)
    retry = classify(event, flavour, INITIAL)
    state, ok = step(INITIAL.state, retry)
    if ok and retry is not B.IGNORE:
        return Advance(ParserContext(state, _opening_after(Opening.NONE, event, retry, state)), retry,
                       warning)
    return Advance(INITIAL, None, warning)


def _opening_after(opening: Opening, event, boundary: BoundaryType, state: BoundaryType) -> Opening:
    if state not in (B.START, B.INSIDE):
        return Opening.NONE
    body, sql = event.body, query_text(event)
    begins = sql is not None and query_kind(sql) in (QueryKind.BEGIN, QueryKind.XA_START)
    if boundary is B.START:
        if event.header.type_code in MYSQL_GTID_TYPES:
            return Opening.GTID
        if isinstance(body, MariaGtid):
            return Opening.GTID if body.standalone else Opening.EXPLICIT
        if event.header.type_code in PRE_STATEMENT_TYPES:
            return Opening.PRE_STATEMENT
        return Opening.EXPLICIT  # BEGIN / XA START, or a marked START of any other type
    if boundary is B.INSIDE and begins:
        return Opening.EXPLICIT
    return opening


def ends_prepared_xa(event) -> bool:
    """XA_prepare (two-phase) or a Query XA PREPARE: the group is prepared, not committed."""
    if isinstance(event.body, XaPrepare):
        return not event.body.one_phase
    sql = query_text(event)
    return sql is not None and query_kind(sql) is QueryKind.XA_PREPARE


# ---- advance, memoized --------------------------------------------------------------------------
# The assemble stage runs advance() once per frame on one core per source (DESIGN.md "Dataflow":
# assemble). For most events its result is a function of a few header and body facts, so
# advance_cached() looks it up instead of re-deriving it; advance() above stays the rule.

# A Query's boundary depends on its whole text, a Rotate's on its log_pos: always derived.
_DERIVED_TYPES = QUERY_TYPES | {EventType.ROTATE}
_MEMO: dict = {}
_MEMO_MAX = 4096  # distinct keys (flags vary little); a hostile stream must not grow it forever


def advance_cached(context: ParserContext, event, flavour: str) -> Advance:
    """advance(context, event, flavour), equal result. Besides the event's type code and header
    flags, classify() and _opening_after() read of a non-Query, non-Rotate event only its body's
    class (Dummy, Ignorable, MariaGtid), a MariaDB GTID's standalone flag, and whether a body
    with query text (Rows_query, Annotate_rows) begins a group (query_kind BEGIN / XA START);
    those make the key."""
    header, body = event.header, event.body
    code = header.type_code
    if code in _DERIVED_TYPES:
        return advance(context, event, flavour)
    cls = type(body)
    if isinstance(body, MariaGtid):
        extra = body.standalone
    elif isinstance(getattr(body, "query", None), bytes):
        sql = query_text(event)
        extra = (sql is not None and _may_begin(sql)
                 and query_kind(sql) in (QueryKind.BEGIN, QueryKind.XA_START))
    else:
        extra = None
    # the context's two fields, not the context: its dataclass __hash__ is Python code, per frame
    key = (context.state, context.opening, code, header.flags, flavour, cls, extra)
    result = _MEMO.get(key)
    if result is None:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        result = _MEMO[key] = advance(context, event, flavour)
    return result


def _may_begin(sql: str) -> bool:
    """False when query_kind(sql) cannot be BEGIN nor XA START: those patterns match from the
    first character of sql.lstrip().upper(), a literal B, S or X, and str.upper maps character by
    character, so that first character is the first of the first stripped character's upper case."""
    return sql.lstrip()[:1].upper()[:1] in ("B", "S", "X")
