"""WL#4033 "IGNORED ON SLAVE", row by row: (type code, header flags, stream flavour) -> class, and
what the replica does with it. The rows are transcribed by hand from the seed (000_*,
"Requirements" and the `default:` branch of read_log_event it adds), not computed:

    a type the replica has a case for                   known      handled by its own logic
    no case, LOG_EVENT_IGNORABLE_F set                   ignorable  skipped after the position moves
    no case, flag clear                                  unknown    "Unknown event code": stop

Each row runs through libs.binlog.event_class, then through the real consumers: the codec
(decode_event), the WL#4162 parser (classify) and the assembler (feed). A row's flavour is the
server that wrote the stream; None is the codec's view (either server's types).
"""
import dataclasses
import struct
import zlib

import pytest

from libs.stream.assembler import Assembler, AssemblerConfig, InMemorySpillStore, UnknownEventPolicy
from libs.binlog import DecodeContext, decode_event, iter_events
from libs.binlog.constants import BoundaryType as B
from libs.binlog.errors import UnknownEventError
from libs.binlog.event_class import DECODED_ROWS_TYPES, ROWS_EVENT_TYPES, EventClass, event_class, known_types
from libs.binlog.registry import CODECS
from libs.stream.boundary import INITIAL, classify
from tests.unit.assembler.stream import place
from tests.unit.boundary import events as e

from .corpus import MARIADB

IGN = 0x0080  # LOG_EVENT_IGNORABLE_F
MARKERS = 0x1C00  # the WL#4162 boundary-marker bits: not the ignorable flag
K, I, U = EventClass.KNOWN, EventClass.IGNORABLE, EventClass.UNKNOWN  # noqa: E741 - the table's K/I/U letters
# what the replica does, per class (the seed's three outcomes)
DOES = {K: "handled", I: "skipped", U: "stops"}

# type code, flags, flavour -> class; why (the seed's words or the server source)
TABLE = [
    (16, 0, "mysql", K, "Xid: a case of its own"),
    (16, IGN, "mysql", K, "a known type stays known whatever its flags"),
    (29, IGN, "mysql", K, "Rows_query: an Ignorable sub-class the replica recognises (seed 'USING "
                          "IGNORABLE EVENT IN RBR'); servers always set the flag on it"),
    (29, 0, "mariadb", K, "Rows_query is known to MariaDB too"),
    (99, IGN, "mysql", I, "a newer server's informational event: 'treat unrecognized sub-class as "
                          "its base class and ignore it'"),
    (99, IGN, "mariadb", I, "the rule does not depend on the flavour"),
    (255, IGN, "mysql", I, "the highest type code"),
    (99, 0, "mysql", U, "no flag: 'Unknown event code', replication stops"),
    (99, MARKERS, "mysql", U, "marker bits are not LOG_EVENT_IGNORABLE_F"),
    (99, 0xFFFF & ~IGN, "mysql", U, "every other flag set, the ignorable one clear"),
    (28, IGN, "mysql", I, "IGNORABLE_LOG_EVENT has no case: reached through default, by its flag"),
    (28, 0, "mysql", U, "... so without the flag it is unknown"),
    (0, IGN, "mysql", I, "UNKNOWN_EVENT has no case either"),
    (0, 0, "mariadb", U, "UNKNOWN_EVENT without the flag"),
    (160, 0, "mariadb", K, "Annotate_rows in a MariaDB stream"),
    (160, IGN, "mysql", I, "a MariaDB-only type in a MySQL stream, flagged: skipped"),
    (160, 0, "mysql", U, "a MariaDB-only type in a MySQL stream, unflagged: stops (NM -> OS)"),
    (161, 0, "mysql", U, "Binlog_checkpoint: MariaDB-only too"),
    (33, 0, "mariadb", K, "MySQL's Gtid: MariaDB has a case for it"),
    (160, 0, None, K, "the codec decodes either server's types (binlog-dump of any file)"),
    (99, IGN, None, I, "the codec's default for a flagged unknown type: an Ignorable record"),
    (99, 0, None, U, "the codec's default for an unflagged unknown type: UnknownEventError"),
]
IDS = [f"{code}/{flags:#06x}/{flavour}->{cls.value}" for code, flags, flavour, cls, _ in TABLE]


@pytest.mark.parametrize("code,flags,flavour,cls,why", TABLE, ids=IDS)
def test_classification_cell(code, flags, flavour, cls, why):
    assert event_class(code, flags, flavour) is cls, why


# ---- the consumers follow the same table ----------------------------------------------------

BODIES = {16: struct.pack("<Q", 42), 29: b"\x06INSERT", 33: bytes(42), 160: b"INSERT",
          161: struct.pack("<I", 3) + b"bin"}


def _ctx(flavour: str | None) -> DecodeContext:
    """A context with the corpus' MariaDB FDE (CRC32), told it is a `flavour` stream."""
    ctx = DecodeContext()
    next(iter(iter_events((MARIADB / "misc" / "mdb-bin.000012").read_bytes(), ctx=ctx)))
    if flavour is not None:
        ctx.fde = dataclasses.replace(ctx.fde, flavour=flavour)
    return ctx


def _frame(code: int, flags: int) -> bytes:
    body = BODIES.get(code, b"abc")
    head = struct.pack("<IBIIIH", 1_700_000_000, code, 1, 19 + len(body) + 4, 1000, flags) + body
    return head + struct.pack("<I", zlib.crc32(head))


def _decoded(code, flags, flavour):
    try:
        return decode_event(_frame(code, flags), 4, _ctx(flavour))
    except UnknownEventError as error:
        return error


@pytest.mark.parametrize("code,flags,flavour,cls,why", TABLE, ids=IDS)
def test_codec_follows_the_table_with_either_flavour(code, flags, flavour, cls, why):
    """The codec classifies with flavour None whatever the stream: known there = decoded."""
    got = _decoded(code, flags, flavour)
    codec_cls = event_class(code, flags)
    if codec_cls is U:
        assert isinstance(got, UnknownEventError) and got.type_code == code
    elif codec_cls is I:
        assert type(got.body).__name__ == "Ignorable" and got.body.type_code == code
    else:
        assert type(got.body).__name__ not in ("Ignorable", "Opaque")


@pytest.mark.parametrize("code,flags,flavour,cls,why", [r for r in TABLE if r[2]], ids=[
    i for i, r in zip(IDS, TABLE) if r[2]])
def test_boundary_parser_classifies_unrecognised_types_by_the_table(code, flags, flavour, cls, why):
    """WL#4162 seed table: Ignorable_log_event IGNORE, Unknown_log_event SELF (*1)."""
    boundary = classify(e.ev(code, None, flags=flags), flavour, INITIAL)
    if cls is I:
        assert boundary is B.IGNORE
    elif cls is U:
        assert boundary is B.SELF_CONTAINED


@pytest.mark.parametrize("code,flags,flavour,cls,why", [r for r in TABLE if r[2]], ids=[
    i for i, r in zip(IDS, TABLE) if r[2]])
def test_what_the_replica_does(code, flags, flavour, cls, why):
    """BEGIN, the event (through the real codec), COMMIT into the assembler of a `flavour`
    stream: handled (part of the transaction), skipped (counted), or the stream stops."""
    got = _decoded(code, flags, flavour)
    if code == 16:  # an Xid ends the transaction itself
        inputs = [e.query("BEGIN"), got]
    elif code == 33:  # a GTID opens it, a BEGIN follows (WL#4162 flavours)
        inputs = [got, e.query("BEGIN"), e.query("COMMIT")]
    else:
        inputs = [e.query("BEGIN"), got, e.query("COMMIT")]
    assembler = Assembler("src1", InMemorySpillStore(), flavour=flavour)
    if DOES[cls] == "stops":
        with pytest.raises(UnknownEventError, match=f"type {code}"):
            assembler.feed(place(inputs))
        quarantine = Assembler("src1", InMemorySpillStore(), AssemblerConfig(
            unknown_event_policy=UnknownEventPolicy.QUARANTINE), flavour=flavour)
        out = quarantine.feed(place(inputs))
        assert [q.kind for q in out.quarantined][0] == "unknown_event" and out.transactions == []
        return
    out = assembler.feed(place(inputs))
    [trx] = out.transactions
    assert out.quarantined == []
    if DOES[cls] == "skipped":
        assert out.counters["ignorable_skipped"] == 1 and trx.event_count == 2
    else:
        assert out.counters["ignorable_skipped"] == 0 and out.counters["unknown_events"] == 0
        assert trx.event_count == len(inputs)


# ---- the sets behind the table ---------------------------------------------------------------

def test_the_codec_has_a_decoder_for_exactly_the_known_types():
    assert set(CODECS) == known_types(None)


def test_rows_type_sets_differ_only_by_the_pre_ga_rows_events():
    """ROWS_EVENT_TYPES: what the boundary parser puts INSIDE; DECODED_ROWS_TYPES: what rows.py
    decodes. MySQL 5.1 pre-GA rows events 20-22 are framed, never decoded."""
    assert ROWS_EVENT_TYPES - DECODED_ROWS_TYPES == {20, 21, 22}
    assert DECODED_ROWS_TYPES < ROWS_EVENT_TYPES and len(ROWS_EVENT_TYPES) == 16


def test_an_unknown_flavour_is_a_programmer_error():
    with pytest.raises(ValueError, match="flavour"):
        event_class(16, 0, "postgres")
