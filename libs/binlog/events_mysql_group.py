"""MySQL group-replication and compression events: Transaction_context (36), View_change (37),
Transaction_payload (40). Layouts: `control_events.h` Transaction_context_event,
View_change_event, Transaction_payload_event (TLV header fields + compressed inner events).
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog.constants import EventType
from libs.binlog.compression import zstd_uncompress
from libs.binlog.errors import BinlogError, LimitError, MalformedError, UnsupportedError
from libs.binlog.wire import U32, U64, Cursor, Layout, pack_int


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TransactionContext:
    """Transaction_context (36, group replication)."""

    server_uuid: bytes
    thread_id: int
    gtid_specified: int
    snapshot_version: bytes
    write_set: tuple  # of bytes
    read_set: tuple


@dataclass(frozen=True, slots=True)
class ViewChange:
    """View_change (37, group replication)."""

    view_id: bytes  # 40-byte field as logged
    seq_number: int
    certification_info: tuple  # ((key bytes, value bytes), ...)


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    """Transaction_payload (40): compressed inner events. `events` are decoded inner events whose
    `pos` is the offset inside the uncompressed payload (relative to the payload event, whose own
    file position is the enclosing Event.pos). `compressed` keeps the exact stored bytes."""

    compression_type: int  # 0 ZSTD, 255 NONE
    uncompressed_size: int
    payload_size: int
    events: tuple
    compressed: bytes
    header_fields: tuple = ()  # ((type, value bytes), ...) as on the wire, for exact re-encoding

TRX_CONTEXT_LAYOUT = Layout([("server_uuid_len", "B"), ("thread_id", "I"), ("gtid_specified", "B"),
                             ("snapshot_len", "I"), ("write_set_len", "I"), ("read_set_len", "I")])
VIEW_ID_LEN = 40  # ENCODED_VIEW_ID_MAX_LEN


def _read_set(cur: Cursor, n: int) -> tuple:
    # read_data_set: each item is a u16 length + bytes
    return tuple(cur.take(cur.u16("set item length"), "set item") for _ in range(n))


def decode_transaction_context(header, body: bytes, ctx) -> TransactionContext:
    cur = Cursor(body)
    uuid_len, thread_id, gtid_spec, snap_len, ws_len, rs_len = cur.fields(TRX_CONTEXT_LAYOUT)
    server_uuid = cur.take(uuid_len, "server uuid")
    snapshot = cur.take(snap_len, "snapshot version")
    write_set = _read_set(cur, ws_len)
    read_set = _read_set(cur, rs_len)
    cur.end()
    return TransactionContext(server_uuid, thread_id, gtid_spec, snapshot, write_set, read_set)


def encode_transaction_context(rec: TransactionContext, header, ctx) -> bytes:
    out = [TRX_CONTEXT_LAYOUT.pack(len(rec.server_uuid), rec.thread_id, rec.gtid_specified,
                                   len(rec.snapshot_version), len(rec.write_set),
                                   len(rec.read_set)), rec.server_uuid, rec.snapshot_version]
    for item in rec.write_set + rec.read_set:
        out.append(len(item).to_bytes(2, "little") + item)
    return b"".join(out)


def decode_view_change(header, body: bytes, ctx) -> ViewChange:
    cur = Cursor(body)
    view_id = cur.take(VIEW_ID_LEN, "view id")
    if not view_id.split(b"\0", 1)[0]:
        raise MalformedError("View_change with empty view id")
    seq = cur.u64("seq_number")
    n = cur.u32("cert info count")
    info = []
    for _ in range(n):  # read_data_map: u16 key len, key, u32 value len, value
        key = cur.take(cur.u16("key length"), "key")
        info.append((key, cur.take(cur.u32("value length"), "value")))
    cur.end()
    return ViewChange(view_id, seq, tuple(info))


def encode_view_change(rec: ViewChange, header, ctx) -> bytes:
    out = [rec.view_id, U64.pack(rec.seq_number), U32.pack(len(rec.certification_info))]
    for k, v in rec.certification_info:
        out.append(len(k).to_bytes(2, "little") + k + U32.pack(len(v)) + v)
    return b"".join(out)


# ---- Transaction_payload (40) --------------------------------------------------------------

PAYLOAD_END_MARK, PAYLOAD_SIZE, PAYLOAD_COMPRESSION_TYPE, PAYLOAD_UNCOMPRESSED_SIZE = 0, 1, 2, 3
COMPRESSION_ZSTD, COMPRESSION_NONE = 0, 255


def decode_transaction_payload(header, body: bytes, ctx) -> TransactionPayload:
    # control_events.h: a payload holds the events of ONE transaction (GTID excluded), never
    # another payload; refused before anything is inflated, so nesting cannot recurse.
    if ctx.payload_depth >= ctx.limits.max_payload_depth:
        raise LimitError(f"Transaction_payload nested {ctx.payload_depth + 1} deep (max_payload_depth "
                         f"{ctx.limits.max_payload_depth}; MySQL never nests payloads)")
    cur = Cursor(body)
    fields, vals = [], {}
    while True:
        ftype = cur.packed_int("payload field type")
        if ftype == PAYLOAD_END_MARK:
            break
        raw = cur.take(cur.packed_int("payload field length"), "payload field")
        fields.append((ftype, raw))
        vals[ftype] = Cursor(raw).packed_int("payload field value")
    size = vals.get(PAYLOAD_SIZE, cur.remaining)
    ctype = vals.get(PAYLOAD_COMPRESSION_TYPE, COMPRESSION_NONE)
    usize = vals.get(PAYLOAD_UNCOMPRESSED_SIZE, size)
    if size != cur.remaining:
        raise MalformedError(f"Transaction_payload: payload size {size} != {cur.remaining} left")
    compressed = cur.rest()
    plain = _decompress(ctype, compressed, usize, ctx.limits)
    ctx.payload_depth += 1
    try:
        events = tuple(_inner_events(plain, header, ctx))
    finally:
        ctx.payload_depth -= 1
    return TransactionPayload(ctype, usize, size, events, compressed, tuple(fields))


def _decompress(ctype: int, data: bytes, usize: int, limits) -> bytes:
    if ctype == COMPRESSION_NONE:
        if usize != len(data):
            raise MalformedError(f"Transaction_payload: {len(data)} bytes != declared {usize}")
        return data
    if ctype == COMPRESSION_ZSTD:
        return zstd_uncompress(data, usize, "Transaction_payload", limits)
    raise UnsupportedError(f"Transaction_payload compression type {ctype}")


# The inner events are whole frames decoded by the framing layer, which reaches this module
# through the registry: framing hands its frame decoder over when it is imported
# (use_inner_frame_decoder), so this module never imports framing back (an import cycle).
_decode_inner_frames = None


def use_inner_frame_decoder(decode_frames) -> None:
    """Set the decoder of a payload's inner frames: (plain payload bytes, ctx) -> Events."""
    global _decode_inner_frames
    _decode_inner_frames = decode_frames


def _inner_events(plain: bytes, header, ctx):
    """Inner events carry no checksum (the payload event's own CRC covers them); their `pos`
    is the offset inside the uncompressed payload."""
    try:
        yield from _decode_inner_frames(plain, ctx)
    except LimitError as err:
        raise LimitError(f"Transaction_payload inner event at payload offset {err.pos}: "
                         f"{err.message}") from None
    except BinlogError as err:
        raise MalformedError(f"Transaction_payload inner event at payload offset {err.pos}: "
                             f"{err.message}") from None


def encode_transaction_payload(rec: TransactionPayload, header, ctx) -> bytes:
    fields = rec.header_fields or (
        (PAYLOAD_COMPRESSION_TYPE, pack_int(rec.compression_type)),
        (PAYLOAD_UNCOMPRESSED_SIZE, pack_int(rec.uncompressed_size)),
        (PAYLOAD_SIZE, pack_int(len(rec.compressed))))
    head = b"".join(pack_int(t) + pack_int(len(v)) + v for t, v in fields)
    return head + pack_int(PAYLOAD_END_MARK) + rec.compressed


GROUP_CODECS = {
    EventType.TRANSACTION_CONTEXT: (decode_transaction_context, encode_transaction_context),
    EventType.VIEW_CHANGE: (decode_view_change, encode_view_change),
    EventType.TRANSACTION_PAYLOAD: (decode_transaction_payload, encode_transaction_payload),
}
