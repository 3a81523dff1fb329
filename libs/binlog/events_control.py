"""Control events: Format_description (15), Start_v3 (1), Rotate (4), Stop (3), Xid (16),
Incident (26), Heartbeat (27) / Heartbeat_v2 (41), XA_prepare (38).

Layouts follow MySQL `control_events.h` (Format_description_event, Rotate_event, XA_prepare_event,
Incident_event, Heartbeat_event) and MariaDB `log_event.h`. Each decoder is a pure function
(header, body, ctx) -> record; each encoder is (record, header, ctx) -> body bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from libs.binlog.constants import CHECKSUM_UNDEFINED, EventType
from libs.binlog.errors import MalformedError, UnsupportedError
from libs.binlog.wire import U64, Cursor, Layout, layout_codec, pack_int


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FormatDescription:
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int  # CHECKSUM_OFF / CHECKSUM_CRC32 / CHECKSUM_UNDEFINED (pre-5.6.1 servers)
    flavour: str  # "mysql" | "mariadb"


@dataclass(frozen=True, slots=True)
class Rotate:
    position: int
    next_file: str


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Xid:
    xid: int


@dataclass(frozen=True, slots=True)
class XaPrepare:
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


@dataclass(frozen=True, slots=True)
class StartV3:
    """Start_event_v3 (1): the first event of binlog v1/v3 files (MySQL 3.23-4.x)."""

    binlog_version: int
    server_version: str
    create_timestamp: int


@dataclass(frozen=True, slots=True)
class Incident:
    incident: int  # 1 = LOST_EVENTS
    message: bytes


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Heartbeat (27): log file name; Heartbeat_v2 (41): the same as TLV fields (raw kept)."""

    log_file: str
    log_position: int | None = None  # v2 only
    fields: tuple = ()  # v2: ((type, value_bytes), ...) in wire order
    end_mark: bool = True  # v2: the body ends with the end-of-fields mark (as MySQL writes it)

SERVER_VERSION_LEN = 50  # ST_SERVER_VER_LEN
# Start_event_v3 / Format_description common part: binlog_version, server_version, created.
START_LAYOUT = Layout([("binlog_version", "H"), ("server_version", f"{SERVER_VERSION_LEN}s"),
                       ("create_timestamp", "I")])
XA_PREPARE_LAYOUT = Layout([("one_phase", "B"), ("format_id", "i"), ("gtrid_len", "I"),
                            ("bqual_len", "I")])
INCIDENT_LAYOUT = Layout([("incident", "H"), ("message_len", "B")])
XID_LAYOUT = Layout([("xid", "Q")])
INCIDENT_LOST_EVENTS = 1
INCIDENT_COUNT = 2  # control_events.h: valid numbers are 1 .. INCIDENT_COUNT-1

# First version that writes the checksum-algorithm byte in the FDE (binlog_event.h
# checksum_version_split; MariaDB log_event.h: 5.3.0).
CHECKSUM_SPLIT = {"mysql": (5, 6, 1), "mariadb": (5, 3, 0)}
_VERSION_RE = re.compile(rb"^(\d+)\.(\d+)\.(\d+)")

# Post-header lengths of binlog v3 (MySQL 4.0/4.1, log_event.h of those versions), 1-based by
# type code: Start_v3 56, Query 11 (no status variables), Stop 0, Rotate 8, Intvar 0, Load 18,
# Slave 0, Create_file 22, Append_block 4, Exec_load 4, Delete_file 4, New_load 18, Rand 0,
# User_var 0.
V3_POST_HEADER_LENGTHS = bytes([56, 11, 0, 8, 0, 18, 0, 22, 4, 4, 4, 18, 0, 0])


def flavour_of(server_version: str) -> str:
    return "mariadb" if "mariadb" in server_version.lower() else "mysql"


def version_tuple(server_version: bytes) -> tuple[int, int, int]:
    m = _VERSION_RE.match(server_version)
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


def fde_has_checksum_alg(server_version_field: bytes) -> bool:
    """Does an FDE written by this server version carry the checksum-algorithm byte (and hence
    always a 4-byte checksum trailer)? (binlog_event.h Format_description_event)."""
    sv = server_version_field.split(b"\0", 1)[0]
    flavour = flavour_of(sv.decode("latin-1"))
    return version_tuple(sv) >= CHECKSUM_SPLIT[flavour]


# ---- Format_description (15) ----------------------------------------------------------------

# MySQL 5.1/5.2 pre-GA row-based trees (WL#2325 "a_drop" builds) numbered events 16-22
# differently; control_events.cpp Format_description_event permutes them by this table
# (index = type code on the wire, value = the real type).
_PRE_GA_VERSION = re.compile(r"^5\.1\.[1-5]-a_drop5|^5\.1\.4-a_drop6|^5\.2\.[0-2]-a_drop6")
PRE_GA_PERMUTATION = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 19, 20, 21, 22, 16,
                      17, 18)


@dataclass(frozen=True, slots=True)
class FormatDescriptionWire(FormatDescription):
    """FormatDescription of a pre-GA server whose type codes are permuted on the wire:
    `post_header_lengths` is indexed by real type, `wire_post_header_lengths` as logged."""

    wire_post_header_lengths: bytes = b""
    type_permutation: tuple = ()


def real_type(fde, wire_type: int) -> int:
    perm = getattr(fde, "type_permutation", ())
    return perm[wire_type] if wire_type < len(perm) else wire_type


def wire_type(fde, real: int) -> int:
    perm = getattr(fde, "type_permutation", ())
    return perm.index(real) if real < len(perm) else real


def decode_format_description(header, body: bytes, ctx) -> FormatDescription:
    cur = Cursor(body)
    binlog_version, sv_raw, created = cur.fields(START_LAYOUT)
    if binlog_version != 4:
        raise MalformedError(f"Format_description with binlog version {binlog_version}")
    header_length = cur.u8("common header length")
    if header_length < 19:
        raise MalformedError(f"common header length {header_length} < 19")
    with_alg = fde_has_checksum_alg(sv_raw)
    n_post = cur.remaining - (1 if with_alg else 0)
    if n_post < 0:
        raise MalformedError("Format_description too short for its checksum byte")
    post = cur.take(n_post, "post-header lengths")
    alg = cur.u8("checksum alg") if with_alg else CHECKSUM_UNDEFINED
    cur.end()
    server_version = sv_raw.split(b"\0", 1)[0].decode("latin-1")
    if _PRE_GA_VERSION.match(server_version) and len(post) == 22:
        perm = PRE_GA_PERMUTATION
        real = bytearray(post)
        for i in range(1, len(perm)):
            real[perm[i] - 1] = post[i - 1]
        return FormatDescriptionWire(binlog_version, server_version, created, header_length,
                                     bytes(real), alg, flavour_of(server_version), post, perm)
    return FormatDescription(binlog_version, server_version, created, header_length, post, alg,
                             flavour_of(server_version))


def encode_format_description(rec: FormatDescription, header, ctx) -> bytes:
    sv = rec.server_version.encode("latin-1")
    out = START_LAYOUT.pack(rec.binlog_version, sv, rec.create_timestamp)
    out += bytes((rec.header_length,))
    out += getattr(rec, "wire_post_header_lengths", b"") or rec.post_header_lengths
    if fde_has_checksum_alg(sv):
        out += bytes((rec.checksum_alg,))
    return out


# ---- Start_v3 (1): binlog v1/v3 files have no FDE; this event plays its role ---------------------

def decode_start_v3(header, body: bytes, ctx) -> StartV3:
    cur = Cursor(body)
    binlog_version, sv_raw, created = cur.fields(START_LAYOUT)
    cur.end()
    if binlog_version == 1:
        # v1 (MySQL 3.23) has a 13-byte common header: never framed correctly as 19.
        raise UnsupportedError("binlog v1 (MySQL 3.23) not supported")
    return StartV3(binlog_version, sv_raw.split(b"\0", 1)[0].decode("latin-1"), created)


def encode_start_v3(rec: StartV3, header, ctx) -> bytes:
    return START_LAYOUT.pack(rec.binlog_version, rec.server_version.encode("latin-1"),
                             rec.create_timestamp)


def fde_for_v3(start: StartV3) -> FormatDescription:
    """The format description a v3 Start event implies (binlog_event.h: v3 defaults)."""
    return FormatDescription(start.binlog_version, start.server_version, start.create_timestamp,
                             19, V3_POST_HEADER_LENGTHS, CHECKSUM_UNDEFINED, "mysql")


# ---- Rotate (4) -----------------------------------------------------------------------------

def decode_rotate(header, body: bytes, ctx) -> Rotate:
    cur = Cursor(body)
    position = cur.u64("rotate position")
    return Rotate(position, cur.rest().decode("utf-8", errors="surrogateescape"))


def encode_rotate(rec: Rotate, header, ctx) -> bytes:
    return U64.pack(rec.position) + rec.next_file.encode("utf-8", errors="surrogateescape")


# ---- Stop (3), Xid (16) -------------------------------------------------------------------------

def decode_stop(header, body: bytes, ctx) -> Stop:
    Cursor(body).end("Stop body")
    return Stop()


def encode_stop(rec, header, ctx) -> bytes:
    return b""


# The body is exactly the 8-byte xid (control_events.h Xid_event); layout_codec's decode is one
# unpack for it, the cheap path this event needs (one per transaction).
decode_xid, encode_xid = layout_codec(XID_LAYOUT, Xid)


# ---- XA_prepare (38): MySQL XA_prepare_event, MariaDB XA_prepare_log_event (same layout) ------

def decode_xa_prepare(header, body: bytes, ctx) -> XaPrepare:
    cur = Cursor(body)
    one_phase, format_id, gtrid_len, bqual_len = cur.fields(XA_PREPARE_LAYOUT)
    if gtrid_len > 64 or bqual_len > 64:  # XIDDATASIZE / MAXGTRIDSIZE (xa.h)
        raise MalformedError(f"XA id lengths {gtrid_len}/{bqual_len} exceed 64")
    gtrid = cur.take(gtrid_len, "gtrid")
    bqual = cur.take(bqual_len, "bqual")
    cur.end()
    return XaPrepare(bool(one_phase), format_id, gtrid, bqual)


def encode_xa_prepare(rec: XaPrepare, header, ctx) -> bytes:
    return (XA_PREPARE_LAYOUT.pack(int(rec.one_phase), rec.format_id, len(rec.gtrid),
                                   len(rec.bqual)) + rec.gtrid + rec.bqual)


# ---- Incident (26) --------------------------------------------------------------------------

def decode_incident(header, body: bytes, ctx) -> Incident:
    cur = Cursor(body)
    incident, msg_len = cur.fields(INCIDENT_LAYOUT)
    if not 0 < incident < INCIDENT_COUNT:
        # control_events.cpp Incident_event: number outside (NONE, COUNT) is an invalid event
        raise MalformedError(f"incident number {incident} out of range")
    message = cur.take(msg_len, "incident message")
    cur.end()
    return Incident(incident, message)


def encode_incident(rec: Incident, header, ctx) -> bytes:
    return INCIDENT_LAYOUT.pack(rec.incident, len(rec.message)) + rec.message


# ---- Heartbeat (27) and Heartbeat_v2 (41) -------------------------------------------------------

HB_V2_END, HB_V2_LOG_FILENAME, HB_V2_LOG_POSITION = 0, 1, 2


def decode_heartbeat(header, body: bytes, ctx) -> Heartbeat:
    if not body:
        raise MalformedError("Heartbeat without log file name")
    return Heartbeat(body.decode("utf-8", errors="surrogateescape"))


def encode_heartbeat(rec: Heartbeat, header, ctx) -> bytes:
    return rec.log_file.encode("utf-8", errors="surrogateescape")


def decode_heartbeat_v2(header, body: bytes, ctx) -> Heartbeat:
    """MySQL 8.0.26+ (codecs/binary.cpp Heartbeat::decode / encode), the body a run of fields:

        type    packed int   0 = end of fields (OTW_HB_HEADER_END_MARK): nothing follows it
        length  packed int   bytes of the value
        value   `length` bytes
          type 1 OTW_HB_LOG_FILENAME_FIELD   the binlog file name
          type 2 OTW_HB_LOG_POSITION_FIELD   the position, itself a packed int of exactly `length` bytes

    The server writes file name, position, end mark; it skips a field type it does not know (by its
    length) and so do we. Unlike v1, the position is in the body: a u64, where the header's
    log_pos has 4 bytes."""
    cur = Cursor(body)
    fields, name, position, end_mark = [], None, None, False
    while cur.remaining:
        ftype = cur.packed_int("Heartbeat_v2 field type")
        if ftype == HB_V2_END:
            cur.end("Heartbeat_v2 body after its end-of-fields mark")
            end_mark = True
            break
        value = cur.take(cur.packed_int("Heartbeat_v2 field length"), f"Heartbeat_v2 field {ftype}")
        fields.append((ftype, value))
        if ftype == HB_V2_LOG_FILENAME:
            name = value.decode("utf-8", errors="surrogateescape")
        elif ftype == HB_V2_LOG_POSITION:
            inner = Cursor(value)
            position = inner.packed_int("Heartbeat_v2 log position")
            inner.end(f"Heartbeat_v2 log position field of {len(value)} bytes")
    if name is None:
        raise MalformedError("Heartbeat_v2 without a log file name field")
    return Heartbeat(name, position, tuple(fields), end_mark)


def encode_heartbeat_v2(rec: Heartbeat, header, ctx) -> bytes:
    return (b"".join(pack_int(t) + pack_int(len(v)) + v for t, v in rec.fields)
            + (pack_int(HB_V2_END) if rec.end_mark else b""))


CONTROL_CODECS = {
    EventType.FORMAT_DESCRIPTION: (decode_format_description, encode_format_description),
    EventType.START_V3: (decode_start_v3, encode_start_v3),
    EventType.ROTATE: (decode_rotate, encode_rotate),
    EventType.STOP: (decode_stop, encode_stop),
    EventType.XID: (decode_xid, encode_xid),
    EventType.XA_PREPARE: (decode_xa_prepare, encode_xa_prepare),
    EventType.INCIDENT: (decode_incident, encode_incident),
    EventType.HEARTBEAT: (decode_heartbeat, encode_heartbeat),
    EventType.HEARTBEAT_V2: (decode_heartbeat_v2, encode_heartbeat_v2),
}
