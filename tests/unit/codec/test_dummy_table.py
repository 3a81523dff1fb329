"""MariaDB dummy events (seed 003), form by form: which event a MariaDB master replaces, for a
replica of which @mariadb_slave_capability, by what (libs.binlog.dummy), and how the replacement
decodes and classifies on our side. Transcribed by hand from the seed:

  * the replacement has the SAME size as the event ("old slaves do not tolerate holes");
  * a Query holding only the comment "# Dummy event replacing event type %u that slave cannot
    handle.", padded with spaces or truncated; no status variables, empty db: 19 + 13 + 1 + 1 =
    34 bytes at least (a comment of one '#');
  * shorter: a User_var event for @`!dummyvar`, or a prefix of the name down to @`!`:
    19 + 6 = 25 bytes at least; below that, no dummy is possible;
  * capability >= TOLERATE_HOLES (2): the master may just omit the event;
  * capability IGNORABLE (4, "understands MySQL 5.6 ignorable events"): nothing is replaced.
Server behaviour beyond the seed (sql_repl.cc send_event_to_slave) fills in the GTID rows: a
transactional GTID becomes a same-size BEGIN for a replica below capability 4.

On our side a dummy is a known type (Query 2 / User_var 14: that is the point of the trick,
WL#4033 event_class KNOWN), the WL#4162 parser IGNOREs it, the assembler counts it and applies
nothing.
"""
import struct
import zlib

import pytest

from libs.stream.assembler import Assembler, InMemorySpillStore
from libs.binlog import DecodeContext, Dummy, Query, decode_event, iter_events, substitute_for_replica
from libs.binlog.constants import MARIA_FL_STANDALONE, MARIA_FL_TRANSACTIONAL
from libs.binlog.constants import BoundaryType as B
from libs.binlog.errors import UnsupportedError
from libs.binlog.event_class import EventClass, event_class
from libs.stream.boundary import INITIAL, classify
from tests.unit.assembler.stream import place
from tests.unit.boundary import events as e

from .corpus import MARIADB

ANNOTATE, CHECKPOINT, GTID, GTID_LIST = 160, 161, 162, 163
COMMENT = b"# Dummy event replacing event type 160 that slave cannot handle."  # 64 bytes


def _frame(code: int, body: bytes) -> bytes:
    head = struct.pack("<IBIIIH", 1_700_000_000, code, 1, 19 + len(body) + 4, 1000, 0) + body
    return head + struct.pack("<I", zlib.crc32(head))


def annotate(data_len: int) -> bytes:
    """An Annotate_rows event of `data_len` bytes (header + body, without the CRC)."""
    return _frame(ANNOTATE, b"x" * (data_len - 19))


def gtid(flags: int) -> bytes:
    return _frame(GTID, struct.pack("<QIB", 5, 0, flags) + bytes(6))  # 19-byte post-header


CHECKPOINT_EV = _frame(CHECKPOINT, struct.pack("<I", 14) + b"mdb-bin.000001")
GTID_LIST_EV = _frame(GTID_LIST, struct.pack("<I", 1) + struct.pack("<IIQ", 0, 1, 5))

# event, capability -> what is sent: "same" | "omitted" | "error" | ("query", comment) |
# ("user_var", name) | "begin"; replaced type the decoder reads back (None: cut off)
TABLE = [
    ("Annotate_rows 100 B", annotate(100), 0, ("query", COMMENT + b"   "), 160),  # padded
    ("Annotate_rows 83 B", annotate(83), 0, ("query", COMMENT[:50]), 160),  # the number survives...
    ("Annotate_rows 71 B", annotate(71), 0, ("query", COMMENT[:38]), None),  # ...not when cut after it
    ("Annotate_rows 40 B", annotate(40), 0, ("query", b"# Dummy"), None),
    ("Annotate_rows 37 B", annotate(37), 0, ("query", b"# Du"), None),  # as short as servers send
    ("Annotate_rows 34 B", annotate(34), 0, ("query", b"#"), None),  # the smallest Query dummy
    ("Annotate_rows 33 B", annotate(33), 0, ("user_var", b"!dummyvar"), None),
    ("Annotate_rows 28 B", annotate(28), 0, ("user_var", b"!dum"), None),  # name of 28 - 24 bytes
    ("Annotate_rows 25 B", annotate(25), 0, ("user_var", b"!"), None),  # the smallest dummy
    ("Annotate_rows 24 B", annotate(24), 0, "error", None),  # "can not be replaced"
    ("Annotate_rows, holes tolerated", annotate(100), 2, "omitted", None),
    ("Annotate_rows, ignorable understood", annotate(100), 4, "omitted", None),  # not asked for
    ("Binlog_checkpoint, cap 0", CHECKPOINT_EV, 0, ("query", b"# Dummy event replacing event type 161"[:len(
        CHECKPOINT_EV) - 4 - 33]), None),
    ("Binlog_checkpoint, cap 2", CHECKPOINT_EV, 2, "omitted", None),
    ("Binlog_checkpoint, cap 3", CHECKPOINT_EV, 3, "same", None),
    ("Gtid_list, cap 0", GTID_LIST_EV, 0, ("query", COMMENT[:len(GTID_LIST_EV) - 4 - 33]), None),
    ("Gtid_list, cap 3", GTID_LIST_EV, 3, "omitted", None),
    ("Gtid_list, cap 4", GTID_LIST_EV, 4, "same", None),
    ("transactional GTID, cap 0", gtid(MARIA_FL_TRANSACTIONAL), 0, "begin", None),
    ("transactional GTID, cap 3", gtid(MARIA_FL_TRANSACTIONAL), 3, "begin", None),
    ("standalone GTID, cap 0", gtid(MARIA_FL_STANDALONE), 0,
     ("query", COMMENT[:len(gtid(1)) - 4 - 33]), None),
    ("standalone GTID, cap 2", gtid(MARIA_FL_STANDALONE), 2, "omitted", None),
    ("GTID, cap 4", gtid(MARIA_FL_TRANSACTIONAL), 4, "same", None),
]


def _ctx() -> DecodeContext:
    ctx = DecodeContext()
    next(iter(iter_events((MARIADB / "misc" / "mdb-bin.000012").read_bytes(), ctx=ctx)))
    return ctx


@pytest.mark.parametrize("name,frame,capability,sent,replaced", TABLE, ids=[r[0] for r in TABLE])
def test_dummy_form(name, frame, capability, sent, replaced):
    if sent == "error":
        with pytest.raises(UnsupportedError, match="too short"):
            substitute_for_replica(frame, capability)
        return
    out = substitute_for_replica(frame, capability)
    if sent == "omitted":
        assert out is None
        return
    if sent == "same":
        assert out == frame
        return
    assert len(out) == len(frame)  # same size: the replica's positions stay the master's
    event = decode_event(out, 4, _ctx())
    assert event_class(event.header.type_code, event.header.flags, "mariadb") is EventClass.KNOWN
    if sent == "begin":
        assert isinstance(event.body, Query) and event.body.sql == "BEGIN"
        return
    carrier, text = sent
    body = event.body
    assert isinstance(body, Dummy) and (body.carrier, body.replaced_type) == (carrier, replaced)
    if carrier == "query":
        assert event.header.type_code == 2 and body.raw[14:] == text  # after post-header + db NUL
    else:
        assert event.header.type_code == 14 and body.raw[4:4 + len(text)] == text
    # WL#4162: a placeholder may stand anywhere; the assembler counts it and applies nothing
    assert classify(event, "mariadb", INITIAL) is B.IGNORE
    out = Assembler("src1", InMemorySpillStore(), flavour="mariadb").feed(
        place([e.query("BEGIN"), event, e.query("COMMIT")]))
    assert out.counters["dummies_skipped"] == 1 and out.transactions[0].event_count == 2
