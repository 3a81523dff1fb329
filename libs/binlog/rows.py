"""Rows events codec (rows_event.h Rows_event; WL#5092 row images; MariaDB compressed rows).

  post-header: table_id u48 (u32 for 6-byte post-headers), flags u16,
               v2 (30-32, 39, 169-171) only: extra_len u16 (counts itself), extra row info
  body:        width (packed), columns-present bitmap (before image for update/delete, after
               image for insert), update only: after-image columns-present bitmap,
               then rows until the end: [before image][after image]
  image:       NULL bitmap over the *present* columns, values of the present non-NULL columns
               (rows_images.py); Partial_update_rows (39) after images: rows_partial.py
  MariaDB compressed (166-171): the rows (everything after the columns-present bitmaps) are
               `header u8 (0x80 | algorithm << 4 | n), uncompressed length (n bytes, big
               endian), zlib stream` (sql/log_event.cc binlog_buf_uncompress).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

from libs.binlog.compression import binlog_buf_compress, binlog_buf_uncompress
from libs.binlog.context import DecodeContext
from libs.binlog.errors import BinlogError, LimitError, MalformedError, TruncatedError
from libs.binlog.fastrec import fast_constructor
from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits
from libs.binlog.old_temporal import old_temporal_hint
from libs.binlog.packed import read_bitmap, read_packed, write_bitmap, write_packed
from libs.binlog.rows_core import KIND_CODES, read_changes
from libs.binlog.rows_images import encode_image, image_for, json_limits, loop_image_decoder, table_codecs
from libs.binlog.rows_partial import encode_partial_after, partial_after_decoder
from libs.binlog.tablemap import table_id_width


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RowChange:
    before: dict[int, Any] | None  # present columns only (0-based ordinal -> value)
    after: dict[int, Any] | None


ROW_OPERATIONS = ("insert", "update", "delete")


@dataclass(frozen=True, slots=True)
class Rows:
    """Write/Update/Delete rows (v1 23-25, v2 30-32, partial 39, MariaDB compressed 166-171).

    Each RowChange holds only the columns present in its image (WL#5092): `before` for
    update/delete, `after` for insert/update; the other side is None. Partial JSON updates put a
    tuple[JsonDiff] in the after image in place of the whole document.
    """

    kind: str  # "insert" | "update" | "delete"
    table_id: int
    flags: int  # STMT_END_F = 1, NO_FOREIGN_KEY_CHECKS_F = 2, RELAXED_UNIQUE_CHECKS_F = 4, ...
    extra_info: bytes  # v2 extra row info (without its 2-byte length); b"" for v1
    column_count: int
    columns_present_before: tuple[bool, ...] | None
    columns_present_after: tuple[bool, ...] | None
    rows: tuple[RowChange, ...]
    type_code: int = 0
    compressed_payload: bytes | None = None  # MariaDB compressed events: the payload as written
    wire: Any = None  # RowsWireDetail (byte-exact re-encoding only)


@dataclass(frozen=True, slots=True)
class RowsWireDetail:
    """Bits servers fill differently and decoding does not need, kept for byte-exact
    re-encoding of Rows: the columns-present bitmaps as written (MySQL and older MariaDB set
    the unused high bits, MariaDB 10.11 clears them) and whether unused NULL-bitmap bits are
    set (MariaDB) or clear (MySQL 8), read from the first row image."""

    present_bitmaps: tuple[bytes, ...] = ()
    null_padding_ones: bool = True


KIND_BY_TYPE = {23: "insert", 24: "update", 25: "delete", 30: "insert", 31: "update",
                32: "delete", 39: "update", 166: "insert", 167: "update", 168: "delete",
                169: "insert", 170: "update", 171: "delete"}
V2_TYPES = frozenset((30, 31, 32, 39, 169, 170, 171))
COMPRESSED_TYPES = frozenset(range(166, 172))
PARTIAL_UPDATE = 39


_make_change = fast_constructor(RowChange)
_make_rows = fast_constructor(Rows)
_make_wire = fast_constructor(RowsWireDetail)


# ---- decode -------------------------------------------------------------------------------

def decode_rows(type_code: int, body: bytes, ctx: DecodeContext) -> Rows:
    try:
        return _decode(type_code, body, ctx)
    except BinlogError as exc:
        exc.type_code = exc.type_code if exc.type_code is not None else type_code
        exc.raw = exc.raw or bytes(body)
        raise exc.located(file=ctx.file, source=ctx.source)
    except (struct.error, IndexError, OverflowError, ValueError, UnicodeDecodeError,
            zlib.error) as exc:
        # The frame is complete (framing.py checked event_size), so a value running past the
        # body's end is an impossible length: malformed, never truncated (STYLE.md practice 4).
        raise MalformedError(f"rows event malformed: {exc}", ctx.file, None, type_code,
                             bytes(body), ctx.source) from None


def decode_rows_header(type_code: int, body: bytes, ctx: DecodeContext) -> Rows:
    """The post-header only (table id, flags, extra info) with rows=(): what the streaming
    assemble stage needs to place the event in its transaction. It needs no Table_map, so it
    works for an event whose Table_map arrived in an earlier micro-batch; the row images are
    decoded later, in parallel, from the raw frame (DecodeContext.defer_rows)."""
    kind = KIND_BY_TYPE.get(type_code)
    if kind is None:
        raise MalformedError(f"type {type_code} is not a rows event")
    table_id, flags, extra, _ = _split_header(type_code, body, ctx)
    return Rows(kind, table_id, flags, extra, 0, None, None, (), type_code=type_code)


def _split_header(type_code: int, body, ctx: DecodeContext):
    idw = table_id_width(ctx)
    if len(body) < idw + 2:
        raise MalformedError("rows post-header shorter than its fields")
    table_id = int.from_bytes(body[:idw], "little")
    flags = body[idw] | body[idw + 1] << 8
    pos = idw + 2
    extra = b""
    if type_code in V2_TYPES:
        if len(body) < pos + 2:
            raise MalformedError("rows extra-info length missing")
        extra_len = body[pos] | body[pos + 1] << 8
        if extra_len < 2 or pos + extra_len > len(body):
            raise MalformedError(f"rows extra-info length {extra_len} impossible")
        extra = bytes(body[pos + 2:pos + extra_len])
        pos += extra_len
    return table_id, flags, extra, pos


def uncompress_payload(payload, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    if not payload:
        raise MalformedError("compressed rows payload empty")
    return binlog_buf_uncompress(payload, "compressed rows", limits)


def _decode(type_code: int, body, ctx: DecodeContext) -> Rows:
    kind = KIND_BY_TYPE.get(type_code)
    if kind is None:
        raise MalformedError(f"type {type_code} is not a rows event")
    if type(body) is not bytes:
        body = bytes(body)  # the compiled image decoders slice values out of bytes
    table_id, flags, extra, pos = _split_header(type_code, body, ctx)
    tm = ctx.table_maps.get(table_id)
    if tm is None:
        raise MalformedError(f"rows event for table id {table_id} without a Table_map")
    end = len(body)
    width, pos = read_packed(body, pos, end)
    bitmaps_start = pos
    if width != len(tm.column_types):
        raise MalformedError(f"rows event has {width} columns, Table_map {table_id} "
                             f"({tm.database}.{tm.table}) has {tm.column_count}")
    present1, n_present, pos = _present_bits(body, pos, width, end)
    present2 = None
    n_present2 = 0
    if kind == "update":
        present2, n_present2, pos = _present_bits(body, pos, width, end)
    raw_bitmaps = body[bitmaps_start:pos]
    compressed = None
    if type_code in COMPRESSED_TYPES:
        compressed = bytes(body[pos:])
        body, pos = uncompress_payload(compressed, ctx.limits), 0
        end = len(body)
    first = image_for(tm, ctx, present1)
    null_pad = True
    if n_present % 8 and pos < end:
        null_pad = bool(body[pos + (n_present >> 3)] >> (n_present % 8))
    second = None
    if kind == "update":
        if type_code == PARTIAL_UPDATE:
            decoders = table_codecs(tm, ctx)[0]
            second = partial_after_decoder(present2, decoders, tm, json_limits(ctx),
                                           loop_image_decoder(present2, decoders))
        else:
            second = image_for(tm, ctx, present2)
    if pos < end:
        _check_images(kind, n_present, n_present2)
    row_bytes = ((n_present + 7) >> 3) + (((n_present2 + 7) >> 3) or 1 if kind == "update" else 0)
    try:
        rows = _changes(kind, first, second, body, pos, end, ctx.limits.max_rows_per_event,
                        row_bytes)
    except (BinlogError, struct.error, IndexError, OverflowError, ValueError) as exc:
        hint = old_temporal_hint(tm, ctx)
        if not hint or isinstance(exc, LimitError):
            raise
        message = exc.message if isinstance(exc, BinlogError) else f"{type(exc).__name__}: {exc}"
        raise MalformedError(message + hint) from None
    before_bits = present1 if kind != "insert" else None
    after_bits = present1 if kind == "insert" else present2
    half = len(raw_bitmaps) // 2
    bitmaps = (raw_bitmaps[:half], raw_bitmaps[half:]) if kind == "update" else (raw_bitmaps,)
    return _make_rows(kind, table_id, flags, extra, width, before_bits, after_bits, tuple(rows),
                      type_code, compressed, _make_wire(bitmaps, null_pad))


# Columns-present bitmaps by their raw bytes: small transactions repeat the same few.
_bits_cache: dict[tuple, tuple] = {}


def _present_bits(body: bytes, pos: int, width: int, end: int):
    stop = pos + ((width + 7) >> 3)
    if stop > end:
        raise TruncatedError("bitmap truncated")
    key = (body[pos:stop], width)
    hit = _bits_cache.get(key)
    if hit is None:
        if len(_bits_cache) >= 4096:
            _bits_cache.clear()
        bits = read_bitmap(key[0], 0, width)[0]
        hit = _bits_cache[key] = (bits, sum(bits))
    return hit[0], hit[1], stop


def _check_images(kind: str, n_present: int, n_present2: int) -> None:
    """rows_event.h: each row is its image(s) under the columns-present bitmaps. An image of no
    column identifies no row (WL#5092: the before image finds the row, the after image holds at
    least the columns the statement set), so row data under an empty bitmap is malformed; it
    would otherwise fabricate one change per NULL-bitmap byte (or never advance)."""
    if not n_present:
        side = "after" if kind == "insert" else "before"
        raise MalformedError(f"{kind} rows event with no columns present in its {side} image "
                             f"but row data")
    if kind == "update" and not n_present2:
        raise MalformedError("update rows event with no columns present in its after image "
                             "but row data")


def _changes(kind: str, first, second, body, pos: int, end: int, max_rows: int,
             row_bytes: int):
    """The changes of the rows event, read by the C core (rows_core.py) when every image has
    a plan for it, else or when it cannot decode them (bad bytes, too many rows) by the Python
    decoders: the reference, whose result or error is the codec's."""
    first_plan = getattr(first, "core", None)
    second_plan = getattr(second, "core", None) if kind == "update" else None
    if first_plan is not None and (kind != "update" or second_plan is not None):
        unbounded = (end - pos) // max(row_bytes, 1) > max_rows
        try:
            return read_changes(KIND_CODES[kind], first_plan, second_plan, _make_change, body,
                                pos, max_rows if unbounded else -1)
        except Exception:  # noqa: BLE001 - the Python decoders below give the codec's error
            pass
    return _read_changes(kind, first, second, body, pos, end, max_rows, row_bytes)


def _read_changes(kind: str, first, second, body, pos: int, end: int, max_rows: int,
                  row_bytes: int) -> list[RowChange]:
    """Row images until the end of the body: [before][after] per change (WL#5092). A change
    takes at least `row_bytes` (its NULL bitmaps): when the body cannot hold more than
    `max_rows` changes, no count is kept; else the count stops at the limit."""
    rows = []
    append = rows.append
    make = _make_change
    unbounded = (end - pos) // max(row_bytes, 1) > max_rows
    if kind == "update":
        while pos < end:
            before, pos = first(body, pos)
            after, pos = second(body, pos)
            append(make(before, after))
            if unbounded and len(rows) > max_rows:
                _too_many(max_rows)
    elif kind == "insert":
        while pos < end:
            after, pos = first(body, pos)
            append(make(None, after))
            if unbounded and len(rows) > max_rows:
                _too_many(max_rows)
    else:
        while pos < end:
            before, pos = first(body, pos)
            append(make(before, None))
            if unbounded and len(rows) > max_rows:
                _too_many(max_rows)
    if pos != end:
        raise MalformedError(f"last row image runs {pos - end} bytes past the end of the event")
    return rows


def _too_many(max_rows: int):
    raise LimitError(f"rows event holds more than max_rows_per_event {max_rows} row changes")


# ---- encode -------------------------------------------------------------------------------

def encode_rows(type_code: int, rows: Rows, ctx: DecodeContext) -> bytes:
    tm = ctx.table_maps.get(rows.table_id)
    if tm is None:
        raise MalformedError(f"rows event for table id {rows.table_id} without a Table_map",
                             type_code=type_code)
    _, encoders = table_codecs(tm, ctx)
    kind = KIND_BY_TYPE[type_code]
    head = rows.table_id.to_bytes(table_id_width(ctx), "little") + rows.flags.to_bytes(2, "little")
    if type_code in V2_TYPES:
        head += (len(rows.extra_info) + 2).to_bytes(2, "little") + rows.extra_info
    first = rows.columns_present_after if kind == "insert" else rows.columns_present_before
    wire = rows.wire or RowsWireDetail()
    bitmaps = [first] + ([rows.columns_present_after] if kind == "update" else [])
    head += write_packed(rows.column_count)
    for k, bits in enumerate(bitmaps):
        raw = wire.present_bitmaps[k] if k < len(wire.present_bitmaps) else b""
        plain = write_bitmap(bits)
        # keep the server's unused high bits when the meaningful bits agree
        head += raw if len(raw) == len(plain) and _same_bits(raw, bits) else plain
    pad = wire.null_padding_ones
    parts = []
    for change in rows.rows:
        if kind != "insert":
            parts.append(encode_image(change.before, rows.columns_present_before, encoders, pad))
        if kind == "update" and type_code == PARTIAL_UPDATE:
            image = encode_image(change.after, rows.columns_present_after, encoders, pad)
            parts.append(encode_partial_after(change.after, tm, image))
        elif kind != "delete":
            parts.append(encode_image(change.after, rows.columns_present_after, encoders, pad))
    payload = b"".join(parts)
    if type_code in COMPRESSED_TYPES:
        if rows.compressed_payload is not None and _same(rows.compressed_payload, payload):
            payload = rows.compressed_payload  # keep the server's zlib bytes (byte-exact)
        else:
            payload = compress_payload(payload)
    return head + payload


def _same_bits(raw: bytes, bits) -> bool:
    return read_bitmap(raw, 0, len(bits))[0] == tuple(bits)


def _same(compressed: bytes, payload: bytes) -> bool:
    try:
        return uncompress_payload(compressed) == payload
    except (BinlogError, zlib.error):
        return False


def compress_payload(payload: bytes) -> bytes:
    return binlog_buf_compress(payload)
