"""Rows events codec (rows_event.h Rows_event; WL#5092 row images; MariaDB compressed rows).

  post-header: table_id u48 (u32 for 6-byte post-headers), flags u16,
               v2 (30-32, 39, 169-171) only: extra_len u16 (counts itself), extra row info
  body:        width (packed), columns-present bitmap (before image for update/delete, after
               image for insert), update only: after-image columns-present bitmap,
               then rows until the end: [before image][after image]
  image:       NULL bitmap over the *present* columns, values of the present non-NULL columns
  Partial_update_rows (39) after image: value_options (packed); bit 1 (PARTIAL_JSON_UPDATES)
               adds a bitmap, one bit per JSON column of the table: set = the value is a
               Json_diff vector (u32 length, then per diff: op u8, path (packed length),
               value (packed length, binary JSON) unless op = remove).
  MariaDB compressed (166-171): the rows (everything after the columns-present bitmaps) are
               `header u8 (0x80 | algorithm << 4 | n), uncompressed length (n bytes, big
               endian), zlib stream` (sql/log_event.cc binlog_buf_uncompress).
"""
from __future__ import annotations

import struct
import zlib

from .compression import binlog_buf_compress, binlog_buf_uncompress
from .constants import ColumnType as T
from .context import DecodeContext
from .errors import BinlogError, LimitError, MalformedError, TruncatedError
from .limits import DEFAULT_LIMITS, DecodeLimits
from .json_binary import decode_json_value, json_binary_to_text, read_varlen  # noqa: F401
from .packed import read_bitmap, read_packed, write_bitmap, write_packed
from .fastrec import fast_constructor
from .records import JsonDiff, RowChange, Rows, RowsWireDetail, TableMap
from .old_temporal import configured_fsp as _old_temporal_fsp, old_temporal_hint
from .tablemap import table_id_width
from .column_meta import string_max_length
from .values import ColumnSpec, column_codec

KIND_BY_TYPE = {23: "insert", 24: "update", 25: "delete", 30: "insert", 31: "update",
                32: "delete", 39: "update", 166: "insert", 167: "update", 168: "delete",
                169: "insert", 170: "update", 171: "delete"}
V2_TYPES = frozenset((30, 31, 32, 39, 169, 170, 171))
COMPRESSED_TYPES = frozenset(range(166, 172))
PARTIAL_UPDATE = 39
PARTIAL_JSON_UPDATES = 1
JSON_DIFF_OPS = ("replace", "insert", "remove")


_make_change = fast_constructor(RowChange)
_make_rows = fast_constructor(Rows)
_make_wire = fast_constructor(RowsWireDetail)


# ---- per Table_map compiled column codecs -------------------------------------------------

# Compiled codecs depend only on the column layout, so one entry serves every Table_map of the
# same table (MariaDB logs a fresh Table_map per transaction: 50k of them in small_trx).
_codec_cache: dict[tuple, tuple] = {}
_image_cache: dict[tuple, object] = {}


def _layout_key(tm: TableMap, ctx: DecodeContext) -> tuple:
    overrides = ctx.unsigned_overrides.get((tm.database, tm.table), frozenset())
    fsp = _old_temporal_fsp(ctx, tm)
    return (tm.column_types, tm.column_metas, tm.signedness, overrides,
            tuple(sorted(fsp.items())), ctx.flavour, _json_limits(ctx))


def _json_limits(ctx: DecodeContext) -> tuple[int, int]:
    return ctx.limits.max_json_depth, ctx.limits.max_json_fields


def _is_unsigned(signedness, overrides, ordinal: int) -> bool:
    """Table_map SIGNEDNESS metadata when logged (the most precise), else the declaration's
    UNSIGNED columns (DecodeContext.unsigned_overrides), else signed."""
    return signedness[ordinal] if signedness is not None else ordinal in overrides


def table_codecs(tm: TableMap, ctx: DecodeContext, key: tuple | None = None) -> tuple[list, list]:
    """([decode per column], [encode per column]) for a Table_map layout, built once, cached."""
    key = key or _layout_key(tm, ctx)
    hit = _codec_cache.get(key)
    if hit is not None:
        return hit
    types, metas, signedness, overrides, fsp_items, flavour, json_limits = key
    fsp = dict(fsp_items)
    decoders, encoders = [], []
    for i, (t, meta) in enumerate(zip(types, metas)):
        unsigned = _is_unsigned(signedness, overrides, i)
        dec, enc = column_codec(ColumnSpec(t, meta, unsigned, fsp.get(i, 0), flavour, json_limits))
        decoders.append(dec)
        encoders.append(enc)
    if len(_codec_cache) > 4096:
        _codec_cache.clear()
        _image_cache.clear()
    _codec_cache[key] = (decoders, encoders)
    return decoders, encoders


# Images of more present columns use the per-column loop: generated code costs ~60 us per
# column to compile and stays cached, so thousands of distinct wide layouts (a hostile stream)
# would cost seconds and hundreds of MB; real tables are far narrower.
COMPILE_MAX_COLUMNS = 512


def image_decoder(tm: TableMap, ctx: DecodeContext, present: tuple[bool, ...]):
    key = _layout_key(tm, ctx)
    hit = _image_cache.get((key, present))
    if hit is None:
        decoders = table_codecs(tm, ctx, key)[0]
        hit = _image_cache[(key, present)] = (
            _compile_image(present, decoders, key) if sum(present) <= COMPILE_MAX_COLUMNS
            else _image_decoder(present, decoders))
    return hit


def _image_decoder(present: tuple[bool, ...], decoders: list):
    """Decoder of one row image for a columns-present bitmap (WL#5092: only those columns)."""
    cols = [(i, decoders[i]) for i, p in enumerate(present) if p]
    nbytes = (len(cols) + 7) >> 3

    def decode(buf, pos):
        nulls = buf[pos:pos + nbytes]  # bit k of byte k // 8: no big-int work per column
        pos += nbytes
        row = {}
        for k, (ordinal, dec) in enumerate(cols):
            if nulls[k >> 3] >> (k & 7) & 1:
                row[ordinal] = None
            else:
                row[ordinal], pos = dec(buf, pos)
        return row, pos

    return decode


# ---- compiled row-image decoders (the hot loop) -----------------------------------------
#
# One generated function per (layout, columns-present bitmap): straight-line code, no loop over
# columns, fixed-width integers/floats and length-prefixed strings read inline (runs of
# consecutive fixed-width columns in one struct call when none of them is NULL), every other
# type through its values.py decoder. Same values, same positions, same exceptions as
# _image_decoder (which stays the reference: tests compare the two). Needs `bytes` input: a
# slice of it is the value (values.py wraps slices in bytes() for memoryviews).

_FIXED_FMT = {T.TINY: ("b", "B"), T.SHORT: ("h", "H"), T.LONG: ("i", "I"),
              T.LONGLONG: ("q", "Q"), T.FLOAT: ("f", "f"), T.DOUBLE: ("d", "d")}
_BLOB_TYPES = frozenset((T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB, T.GEOMETRY))


def _inline_kind(t: int, meta: int, unsigned: bool):
    """("fixed", struct char) | ("len", prefix width) | None (call the decoder)."""
    fmt = _FIXED_FMT.get(t)
    if fmt is not None:
        return "fixed", fmt[1] if unsigned else fmt[0]
    if t in (T.VARCHAR, T.VAR_STRING):
        return "len", 1 if meta < 256 else 2
    if t == T.STRING:
        return "len", 1 if string_max_length(meta) < 256 else 2
    if t in _BLOB_TYPES and 1 <= meta <= 4:
        return "len", meta
    return None


def _compile_image(present: tuple[bool, ...], decoders: list, key: tuple):
    types, metas, signedness, overrides, _fsp, _flavour, _json = key
    cols = [i for i, p in enumerate(present) if p]
    kinds = []
    for i in cols:
        unsigned = _is_unsigned(signedness, overrides, i)
        kinds.append(_inline_kind(types[i], metas[i], unsigned))
    nbytes = (len(cols) + 7) >> 3
    env = {"from_bytes": int.from_bytes}
    structs: dict[str, str] = {}

    def unpacker(fmt: str) -> str:
        name = structs.get(fmt)
        if name is None:
            name = structs[fmt] = f"u{len(structs)}"
            env[name] = struct.Struct("<" + fmt).unpack_from
        return name

    def value_code(k: int, ordinal: int, target: str, ind: str) -> list[str]:
        kind = kinds[k]
        if kind is None:
            env[f"d{ordinal}"] = decoders[ordinal]
            return [f"{ind}{target}, pos = d{ordinal}(buf, pos)"]
        if kind[0] == "fixed":
            size = struct.calcsize("<" + kind[1])
            return [f"{ind}{target} = {unpacker(kind[1])}(buf, pos)[0]", f"{ind}pos += {size}"]
        width = kind[1]
        if width == 1:
            return [f"{ind}n = pos + 1 + buf[pos]", f"{ind}{target} = buf[pos + 1:n]",
                    f"{ind}pos = n"]
        return [f"{ind}n = pos + {width} + from_bytes(buf[pos:pos + {width}], 'little')",
                f"{ind}{target} = buf[pos + {width}:n]", f"{ind}pos = n"]

    # The NULL-bitmap mask lives in `env`, never as a decimal literal (a table of more than
    # ~14,000 columns would hit Python's int-string limit), and the slow path tests each bit in
    # its byte: one big-int operation per column made wide tables quadratic.
    env["MASK"] = (1 << len(cols)) - 1
    lines = ["def decode(buf, pos):"]
    if nbytes == 0:
        lines.append("    nulls = 0")
    elif nbytes == 1:
        lines.append("    nulls = buf[pos] & MASK")
    else:
        lines.append(f"    nulls = from_bytes(buf[pos:pos + {nbytes}], 'little') & MASK")
    lines.append("    nb = pos")
    lines.append(f"    pos += {nbytes}")
    # no NULL among the present columns: fixed-width runs merged, one dict display
    lines.append("    if not nulls:")
    k = 0
    while k < len(cols):
        if kinds[k] is not None and kinds[k][0] == "fixed":
            run = k
            while run < len(cols) and kinds[run] is not None and kinds[run][0] == "fixed":
                run += 1
            fmt = "".join(kinds[j][1] for j in range(k, run))
            targets = ", ".join(f"v{j}" for j in range(k, run))
            lines.append(f"        {targets}{',' if run - k == 1 else ''} = {unpacker(fmt)}(buf, pos)")
            lines.append(f"        pos += {struct.calcsize('<' + fmt)}")
            k = run
        else:
            lines += value_code(k, cols[k], f"v{k}", "        ")
            k += 1
    lines.append("        return {" + ", ".join(f"{o}: v{k}" for k, o in enumerate(cols)) + "}, pos")
    lines.append("    row = {}")
    for k, ordinal in enumerate(cols):
        lines.append(f"    if buf[nb + {k >> 3}] & {1 << (k & 7)}:")
        lines.append(f"        row[{ordinal}] = None")
        lines.append("    else:")
        lines += value_code(k, ordinal, f"row[{ordinal}]", "        ")
    lines.append("    return row, pos")
    exec(compile("\n".join(lines), "<rows image decoder>", "exec"), env)  # noqa: S102
    return env["decode"]


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
    first = _image_for(tm, ctx, present1)
    null_pad = True
    if n_present % 8 and pos < end:
        null_pad = bool(body[pos + (n_present >> 3)] >> (n_present % 8))
    second = None
    if kind == "update":
        second = (_partial_after_decoder(present2, table_codecs(tm, ctx)[0], tm, _json_limits(ctx))
                  if type_code == PARTIAL_UPDATE else _image_for(tm, ctx, present2))
    if pos < end:
        _check_images(kind, n_present, n_present2)
    row_bytes = ((n_present + 7) >> 3) + (((n_present2 + 7) >> 3) or 1 if kind == "update" else 0)
    try:
        rows = _read_changes(kind, first, second, body, pos, end,
                             ctx.limits.max_rows_per_event, row_bytes)
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


# Per-event shortcuts (small transactions: one rows event per Table_map): columns-present
# bitmaps by their raw bytes, and image decoders by Table_map object (tablemap.py hands out one
# object per distinct Table_map body) + present bits, checked against the context's per-table
# configuration so a changed configuration never reuses a stale decoder.
_bits_cache: dict[tuple, tuple] = {}
_tm_images: dict[tuple, tuple] = {}


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


def _image_for(tm: TableMap, ctx: DecodeContext, present: tuple[bool, ...]):
    names = (tm.database, tm.table)
    cfg = (ctx.unsigned_overrides.get(names), _old_temporal_fsp(ctx, tm), ctx.flavour,
           _json_limits(ctx))
    key = (id(tm), present)
    hit = _tm_images.get(key)
    if hit is not None and hit[0] is tm and hit[1] == cfg:
        return hit[2]
    decoder = image_decoder(tm, ctx, present)
    if len(_tm_images) >= 4096:
        _tm_images.clear()
    _tm_images[key] = (tm, cfg, decoder)
    return decoder


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


def _json_columns(tm: TableMap) -> list[int]:
    return [i for i, t in enumerate(tm.column_types) if t == T.JSON]


def _partial_after_decoder(present, decoders, tm: TableMap, json_limits: tuple[int, int]):
    """Partial_update_rows after image: value_options, partial-JSON bitmap, then the image with
    Json_diff vectors in place of the JSON columns whose bit is set (json_diff.h)."""
    json_cols = _json_columns(tm)
    nbytes = (len(json_cols) + 7) >> 3
    full = _image_decoder(present, decoders)
    cols = [i for i, p in enumerate(present) if p]
    null_bytes = (len(cols) + 7) >> 3

    def decode(buf, pos):
        options, pos = read_packed(buf, pos)
        if not options & PARTIAL_JSON_UPDATES:
            return full(buf, pos)
        bits = int.from_bytes(buf[pos:pos + nbytes], "little")
        pos += nbytes
        partial = {c for k, c in enumerate(json_cols) if bits >> k & 1}
        nulls = int.from_bytes(buf[pos:pos + null_bytes], "little")
        pos += null_bytes
        row = {}
        for k, ordinal in enumerate(cols):
            if nulls >> k & 1:
                row[ordinal] = None
            elif ordinal in partial:
                row[ordinal], pos = _decode_json_diffs(buf, pos, json_limits)
            else:
                row[ordinal], pos = decoders[ordinal](buf, pos)
        return row, pos

    return decode


def _decode_json_diffs(buf, pos, json_limits: tuple[int, int]):
    length = int.from_bytes(buf[pos:pos + 4], "little")
    pos += 4
    end = pos + length
    if end > len(buf):
        raise MalformedError("JSON diff vector longer than the image")
    diffs = []
    while pos < end:
        op = buf[pos]
        if op >= len(JSON_DIFF_OPS):
            raise MalformedError(f"unknown JSON diff operation {op}")
        n, pos = read_packed(buf, pos + 1, end)
        path = bytes(buf[pos:pos + n]).decode("utf-8", "surrogateescape")
        pos += n
        value = None
        if JSON_DIFF_OPS[op] != "remove":
            n, pos = read_packed(buf, pos, end)
            if pos + n > end:
                raise MalformedError("JSON diff value longer than its vector")
            value = decode_json_value(bytes(buf[pos:pos + n]), *json_limits)
            pos += n
        diffs.append(JsonDiff(JSON_DIFF_OPS[op], path, value))
    if pos != end:
        raise MalformedError("JSON diff vector overruns its length")
    return tuple(diffs), end


# ---- encode -------------------------------------------------------------------------------

def _encode_image(row: dict, present, encoders, pad_ones: bool = True) -> bytes:
    cols = [i for i, p in enumerate(present) if p]
    nulls = 0
    values = []
    for k, ordinal in enumerate(cols):
        if ordinal not in row:
            raise ValueError(f"column {ordinal} is marked present but missing from the row")
        value = row[ordinal]
        if value is None:
            nulls |= 1 << k
        elif isinstance(value, tuple) and value and isinstance(value[0], JsonDiff):
            values.append(_encode_json_diffs(value))
        else:
            values.append(encoders[ordinal](value))
    nbytes = (len(cols) + 7) >> 3
    # MariaDB starts the NULL bytes at 0xFF and clears bits, so unused bits are set; MySQL 8
    # leaves them clear (RowsWireDetail.null_padding_ones)
    if pad_ones:
        nulls |= ((1 << (nbytes * 8)) - 1) ^ ((1 << len(cols)) - 1)
    return nulls.to_bytes(nbytes, "little") + b"".join(values)


def _encode_json_diffs(diffs) -> bytes:
    from .json_encode import json_text_to_binary
    out = bytearray()
    for d in diffs:
        path = d.path.encode("utf-8", "surrogateescape")
        out.append(JSON_DIFF_OPS.index(d.operation))
        out += write_packed(len(path)) + path
        if d.operation != "remove":
            binary = getattr(d.value, "binary", None)
            if binary is None:
                binary = json_text_to_binary(str(d.value))
            out += write_packed(len(binary)) + binary
    return len(out).to_bytes(4, "little") + bytes(out)


def _encode_partial_after(row: dict, present, encoders, tm: TableMap, pad: bool) -> bytes:
    json_cols = _json_columns(tm)
    bits = 0
    for k, c in enumerate(json_cols):
        v = row.get(c)
        if isinstance(v, tuple) and v and isinstance(v[0], JsonDiff):
            bits |= 1 << k
    if not bits:
        return write_packed(0) + _encode_image(row, present, encoders, pad)
    return (write_packed(PARTIAL_JSON_UPDATES) + bits.to_bytes((len(json_cols) + 7) >> 3, "little")
            + _encode_image(row, present, encoders, pad))


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
            parts.append(_encode_image(change.before, rows.columns_present_before, encoders, pad))
        if kind == "update" and type_code == PARTIAL_UPDATE:
            parts.append(_encode_partial_after(change.after, rows.columns_present_after, encoders,
                                               tm, pad))
        elif kind != "delete":
            parts.append(_encode_image(change.after, rows.columns_present_after, encoders, pad))
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
