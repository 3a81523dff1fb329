"""MySQL GTID family: Gtid (33), Anonymous_gtid (34), tagged Gtid (42, MySQL 8.4+),
Previous_gtids (35). Layouts: `control_events.h` / `control_events.cpp` Gtid_event,
Previous_gtids_event; the tagged form uses the mysql::serialization message format
(`libs/mysql/serialization`: variable-length integers, field ids).
"""
from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import NamedTuple

from libs.binlog.constants import EventType
from libs.binlog.errors import MalformedError
from libs.binlog.wire import U64, Cursor, Layout, pack_int


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MysqlGtid:
    """Gtid (33) / Anonymous_gtid (34) / tagged Gtid (42) (control_events.h Gtid_event)."""

    anonymous: bool
    commit_flag: int
    sid: str  # uuid text
    gno: int
    tag: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_ts: int | None = None
    original_commit_ts: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None

    @property
    def gtid(self) -> str:
        return f"{self.sid}:{self.tag}:{self.gno}" if self.tag else f"{self.sid}:{self.gno}"


@dataclass(frozen=True, slots=True)
class GtidInterval:
    start: int
    end: int  # exclusive, as on the wire


@dataclass(frozen=True, slots=True)
class PreviousGtids:
    """Previous_gtids (35): (sid, tag, intervals) per source; `fmt` is the 8.4 format byte
    (0 untagged, 1 tagged), kept so re-encoding is exact."""

    sets: tuple  # ((sid_text, tag or None, (GtidInterval, ...)), ...)
    fmt: int = 0

GTID_FIXED = Layout([("gtid_flags", "B"), ("sid", "16s"), ("gno", "q")])
LOGICAL_CLOCK = Layout([("lt_type", "B"), ("last_committed", "q"), ("sequence_number", "q")])
LOGICAL_TIMESTAMP_TYPECODE = 2
TS_HAS_ORIGINAL = 1 << 55  # ENCODED_COMMIT_TIMESTAMP_LENGTH: MSB of the 7-byte field
SV_HAS_ORIGINAL = 1 << 31  # ENCODED_SERVER_VERSION_LENGTH


@dataclass(frozen=True, slots=True)
class MysqlGtidWire(MysqlGtid):
    """MysqlGtid plus what the wire leaves optional, so re-encoding is exact.
    `layout` names the optional parts present, in order; `tail` keeps bytes of pre-5.7.5
    logical-clock formats that MySQL itself ignores."""

    commit_group_ticket: int | None = None
    layout: tuple = ()
    tail: bytes = b""


class ImmediateOriginal(NamedTuple):
    """One of Gtid_event's two immediate/original pairs (control_events.cpp read_event /
    write_data_body): the immediate value's top bit says the original value follows; without
    it the original equals the immediate."""

    nbytes: int
    has_original: int  # the flag bit in the immediate value
    name: str  # for error messages: immediate_<name>, original_<name>
    tag_one: str  # layout tag when only the immediate value was written
    tag_both: str  # ... when both were


COMMIT_TS = ImmediateOriginal(7, TS_HAS_ORIGINAL, "commit_timestamp", "ts1", "ts2")
SERVER_VERSION = ImmediateOriginal(4, SV_HAS_ORIGINAL, "server_version", "sv1", "sv2")


def _read_immediate_original(cur: Cursor, pair: ImmediateOriginal) -> tuple[int, int, str]:
    """(immediate, original, layout tag)."""
    raw = cur.uint(pair.nbytes, f"immediate_{pair.name}")
    immediate = raw & ~pair.has_original
    if raw & pair.has_original:
        return immediate, cur.uint(pair.nbytes, f"original_{pair.name}"), pair.tag_both
    return immediate, immediate, pair.tag_one


def _write_immediate_original(pair: ImmediateOriginal, both: bool, immediate: int,
                              original: int) -> bytes:
    if not both:
        return immediate.to_bytes(pair.nbytes, "little")
    return ((immediate | pair.has_original).to_bytes(pair.nbytes, "little")
            + original.to_bytes(pair.nbytes, "little"))


def _sid_text(raw: bytes) -> str:
    return str(_uuid.UUID(bytes=bytes(raw)))


def _sid_bytes(text: str) -> bytes:
    return _uuid.UUID(text).bytes


# ---- untagged Gtid / Anonymous_gtid (33, 34) -----------------------------------------------

def decode_gtid(header, body: bytes, ctx) -> MysqlGtid:
    if header.type_code == EventType.GTID_TAGGED:
        return decode_tagged_gtid(header, body, ctx)
    cur = Cursor(body)
    flags, sid, gno = cur.fields(GTID_FIXED)
    layout, tail = [], b""
    vals = dict(last_committed=None, sequence_number=None, immediate_commit_ts=None,
                original_commit_ts=None, transaction_length=None,
                immediate_server_version=None, original_server_version=None,
                commit_group_ticket=None)
    if cur.remaining >= LOGICAL_CLOCK.size and body[cur.pos] == LOGICAL_TIMESTAMP_TYPECODE:
        _, vals["last_committed"], vals["sequence_number"] = cur.fields(LOGICAL_CLOCK)
        layout.append("clock")
        for need, read in _OPTIONAL_FIELDS:
            if cur.remaining < need:
                break
            layout.append(read(cur, vals))
    tail = cur.rest()  # MySQL ignores what it cannot read (5.7.4- clocks); keep it
    return MysqlGtidWire(anonymous=header.type_code == EventType.ANONYMOUS_GTID, commit_flag=flags,
                         sid=_sid_text(sid), gno=gno, layout=tuple(layout), tail=tail, **vals)


def _read_pair(immediate: str, original: str, spec):
    """Reader of an immediate/original pair (commit timestamps, server versions)."""
    def read(cur: Cursor, vals: dict) -> str:
        vals[immediate], vals[original], part = _read_immediate_original(cur, spec)
        return part
    return read


def _read_length(cur: Cursor, vals: dict) -> str:
    vals["transaction_length"] = cur.packed_int("transaction_length")
    return "length"


def _read_ticket(cur: Cursor, vals: dict) -> str:
    vals["commit_group_ticket"] = cur.u64("commit_group_ticket")
    return "ticket"


# After the logical clock, each field is logged only when the server version has it, in this
# order (control_events.cpp Gtid_event::Gtid_event): the body decides by what it still holds.
# (least bytes the field takes, reader: fills `vals`, returns its layout part)
_OPTIONAL_FIELDS = (
    (7, _read_pair("immediate_commit_ts", "original_commit_ts", COMMIT_TS)),
    (1, _read_length),
    (4, _read_pair("immediate_server_version", "original_server_version", SERVER_VERSION)),
    (8, _read_ticket))


def encode_gtid(rec: MysqlGtid, header, ctx) -> bytes:
    if header.type_code == EventType.GTID_TAGGED:
        return encode_tagged_gtid(rec, header, ctx)
    layout = getattr(rec, "layout", None)
    if layout is None:  # a plain MysqlGtid built by hand: write every field it has
        layout = _default_layout(rec)
    out = [GTID_FIXED.pack(rec.commit_flag, _sid_bytes(rec.sid), rec.gno)]
    for part in layout:
        if part == "clock":
            out.append(LOGICAL_CLOCK.pack(LOGICAL_TIMESTAMP_TYPECODE, rec.last_committed,
                                          rec.sequence_number))
        elif part in (COMMIT_TS.tag_one, COMMIT_TS.tag_both):
            out.append(_write_immediate_original(COMMIT_TS, part == COMMIT_TS.tag_both,
                                                 rec.immediate_commit_ts, rec.original_commit_ts))
        elif part == "length":
            out.append(pack_int(rec.transaction_length))
        elif part in (SERVER_VERSION.tag_one, SERVER_VERSION.tag_both):
            out.append(_write_immediate_original(SERVER_VERSION, part == SERVER_VERSION.tag_both,
                                                 rec.immediate_server_version,
                                                 rec.original_server_version))
        elif part == "ticket":
            out.append(U64.pack(rec.commit_group_ticket))
    out.append(getattr(rec, "tail", b""))
    return b"".join(out)


def _default_layout(rec: MysqlGtid) -> tuple:
    layout = []
    if rec.last_committed is not None:
        layout.append("clock")
        if rec.immediate_commit_ts is not None:
            same = rec.original_commit_ts in (None, rec.immediate_commit_ts)
            layout.append("ts1" if same else "ts2")
            if rec.transaction_length is not None:
                layout.append("length")
                if rec.immediate_server_version is not None:
                    same = rec.original_server_version in (None, rec.immediate_server_version)
                    layout.append("sv1" if same else "sv2")
    return tuple(layout)


# ---- tagged Gtid (42): mysql::serialization message ----------------------------------------------

def _read_varlen(cur: Cursor) -> int:
    """variable_length_integers.h: trailing 1-bits of the first byte = extra bytes."""
    first = cur.u8("varlen")
    extra = 0
    while extra < 8 and (first >> extra) & 1:
        extra += 1
    if extra == 8:
        return cur.uint(8, "varlen")
    value = first | (cur.uint(extra, "varlen") << 8 if extra else 0)
    return value >> (extra + 1)


def _write_varlen(value: int) -> bytes:
    for extra in range(8):
        if value < 1 << (7 * (extra + 1)):
            word = (value << (extra + 1)) | ((1 << extra) - 1)
            return word.to_bytes(extra + 1, "little")
    return b"\xff" + value.to_bytes(8, "little")


def _read_signed(cur: Cursor) -> int:
    v = _read_varlen(cur)
    return -(v >> 1) - 1 if v & 1 else v >> 1


def _write_signed(value: int) -> bytes:
    return _write_varlen(((-value - 1) << 1) | 1 if value < 0 else value << 1)


# field id -> (record attribute, kind) (control_events.h Gtid_event::define_fields)
TAGGED_FIELDS = {0: ("commit_flag", "u"), 1: ("sid", "uuid"), 2: ("gno", "s"), 3: ("tag", "str"),
                 4: ("last_committed", "s"), 5: ("sequence_number", "s"),
                 6: ("immediate_commit_ts", "u"), 7: ("original_commit_ts", "u"),
                 8: ("transaction_length", "u"), 9: ("immediate_server_version", "u"),
                 10: ("original_server_version", "u"), 11: ("commit_group_ticket", "u")}


def decode_tagged_gtid(header, body: bytes, ctx) -> MysqlGtid:
    cur = Cursor(body)
    version = _read_varlen(cur)
    size = _read_varlen(cur)
    if size != len(body):
        raise MalformedError(f"tagged GTID message size {size} != body length {len(body)}")
    last_non_ignorable = _read_varlen(cur)
    vals: dict = {}
    present = []
    while cur.remaining:
        fid = _read_varlen(cur)
        if fid not in TAGGED_FIELDS:
            raise MalformedError(f"tagged GTID: unknown field id {fid}")
        name, kind = TAGGED_FIELDS[fid]
        if kind == "u":
            vals[name] = _read_varlen(cur)
        elif kind == "s":
            vals[name] = _read_signed(cur)
        elif kind == "uuid":
            vals[name] = _sid_text(bytes(_read_varlen(cur) & 0xFF for _ in range(16)))
        else:
            vals[name] = cur.take(_read_varlen(cur), "tag").decode("utf-8")
        present.append(fid)
    for must in ("commit_flag", "sid", "gno"):
        if must not in vals:
            raise MalformedError(f"tagged GTID without {must}")
    vals.setdefault("original_commit_ts", vals.get("immediate_commit_ts"))
    vals.setdefault("original_server_version", vals.get("immediate_server_version"))
    return MysqlGtidWire(anonymous=False, layout=(version, last_non_ignorable, tuple(present)),
                         **vals)


def encode_tagged_gtid(rec: MysqlGtid, header, ctx) -> bytes:
    version, last_non_ignorable, present = rec.layout
    fields = []
    for fid in present:
        name, kind = TAGGED_FIELDS[fid]
        v = getattr(rec, name)
        if kind == "u":
            enc = _write_varlen(v)
        elif kind == "s":
            enc = _write_signed(v)
        elif kind == "uuid":
            enc = b"".join(_write_varlen(b) for b in _sid_bytes(v))
        else:
            raw = v.encode("utf-8")
            enc = _write_varlen(len(raw)) + raw
        fields.append(_write_varlen(fid) + enc)
    rest = _write_varlen(last_non_ignorable) + b"".join(fields)
    head = _write_varlen(version)
    # the size counts itself: iterate to the fixpoint (as update_tagged_transaction_length does)
    size = len(head) + len(rest) + 1
    while len(head) + len(_write_varlen(size)) + len(rest) != size:
        size = len(head) + len(_write_varlen(size)) + len(rest)
    return head + _write_varlen(size) + rest


# ---- Previous_gtids (35) -------------------------------------------------------------------

TAGGED_FORMAT = 1  # Gtid_set encoding: byte 0 and byte 7 of the first word hold the format


def decode_previous_gtids(header, body: bytes, ctx) -> PreviousGtids:
    cur = Cursor(body)
    word = cur.take(8, "n_sids")
    fmt = word[7]
    if fmt == TAGGED_FORMAT and word[0] == TAGGED_FORMAT:
        n_sids = int.from_bytes(word[1:7], "little")
    elif fmt == 0:
        n_sids = int.from_bytes(word, "little")
    else:
        raise MalformedError(f"Previous_gtids: unknown GTID set format {fmt}")
    if n_sids * 24 > cur.remaining:
        raise MalformedError(f"Previous_gtids: {n_sids} sids cannot fit")
    sets = []
    for _ in range(n_sids):
        sid = _sid_text(cur.take(16, "sid"))
        tag = None
        if fmt == TAGGED_FORMAT:
            tag = cur.take(_read_varlen(cur), "tag").decode("utf-8")
        n = cur.u64("n_intervals")
        if n * 16 > cur.remaining:
            raise MalformedError(f"Previous_gtids: {n} intervals cannot fit")
        ivs = tuple(GtidInterval(cur.u64(), cur.u64()) for _ in range(n))
        sets.append((sid, tag, ivs))
    cur.end()
    return PreviousGtids(tuple(sets), fmt)


def encode_previous_gtids(rec: PreviousGtids, header, ctx) -> bytes:
    n = len(rec.sets)
    if rec.fmt == TAGGED_FORMAT:
        out = [bytes((TAGGED_FORMAT,)) + n.to_bytes(6, "little") + bytes((TAGGED_FORMAT,))]
    else:
        out = [U64.pack(n)]
    for sid, tag, ivs in rec.sets:
        out.append(_sid_bytes(sid))
        if rec.fmt == TAGGED_FORMAT:
            raw = (tag or "").encode("utf-8")
            out.append(_write_varlen(len(raw)) + raw)
        out.append(U64.pack(len(ivs)))
        out.extend(U64.pack(iv.start) + U64.pack(iv.end) for iv in ivs)
    return b"".join(out)


GTID_CODECS = {
    EventType.GTID: (decode_gtid, encode_gtid),
    EventType.ANONYMOUS_GTID: (decode_gtid, encode_gtid),
    EventType.GTID_TAGGED: (decode_tagged_gtid, encode_tagged_gtid),
    EventType.PREVIOUS_GTIDS: (decode_previous_gtids, encode_previous_gtids),
}
