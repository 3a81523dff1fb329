"""Row images (WL#5092): the column codecs of a Table_map layout, compiled once, and the decoder
and encoder of one image under a columns-present bitmap.

  image: NULL bitmap over the *present* columns (bit k of byte k // 8), then the values of the
         present non-NULL columns in column order (rows_event.h; values.py reads each type).

A decoder is `decode(buf, pos) -> (row, pos)` with row = {0-based ordinal: value} holding only
the present columns. Caches keep one compiled decoder per (layout, bitmap).
"""
from __future__ import annotations

import struct

from libs.binlog.column_meta import string_max_length
from libs.binlog.constants import ColumnType as T
from libs.binlog.context import DecodeContext
from libs.binlog.old_temporal import configured_fsp as _old_temporal_fsp
from libs.binlog.rows_core import image_plan
from libs.binlog.rows_partial import JsonDiff, encode_json_diffs
from libs.binlog.straight_decoders import INLINE_LINES
from libs.binlog.tablemap import TableMap
from libs.binlog.values import ColumnSpec, column_codec

# Compiled codecs depend only on the column layout, so one entry serves every Table_map of the
# same table (MariaDB logs a fresh Table_map per transaction: 50k of them in small_trx).
_codec_cache: dict[tuple, tuple] = {}
_image_cache: dict[tuple, object] = {}


def _layout_key(tm: TableMap, ctx: DecodeContext) -> tuple:
    overrides = ctx.unsigned_overrides.get((tm.database, tm.table), frozenset())
    fsp = _old_temporal_fsp(ctx, tm)
    return (tm.column_types, tm.column_metas, tm.signedness, overrides,
            tuple(sorted(fsp.items())), ctx.flavour, json_limits(ctx))


def json_limits(ctx: DecodeContext) -> tuple[int, int]:
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
    """The Python decoder of one image; its `core` attribute is the image's plan for the C
    core (rows_core.py), which rows.py uses for whole rows events."""
    key = _layout_key(tm, ctx)
    hit = _image_cache.get((key, present))
    if hit is None:
        decoders = table_codecs(tm, ctx, key)[0]
        hit = (_compile_image(present, decoders, key) if sum(present) <= COMPILE_MAX_COLUMNS
               else loop_image_decoder(present, decoders))
        types, metas, signedness, overrides = key[:4]
        hit.core = image_plan(present, types, metas,
                              lambda i: _is_unsigned(signedness, overrides, i), decoders)
        _image_cache[(key, present)] = hit
    return hit


def loop_image_decoder(present: tuple[bool, ...], decoders: list):
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


# ---- compiled row-image decoders (the Python route: the C core's fallback and reference) ----
#
# One generated function per (layout, columns-present bitmap): straight-line code, no loop over
# columns, fixed-width integers/floats and length-prefixed strings read inline (runs of
# consecutive fixed-width columns in one struct call when none of them is NULL), every other
# type through its values.py decoder. Same values, same positions, same exceptions as
# loop_image_decoder (which stays the reference: tests compare the two). Needs `bytes` input: a
# slice of it is the value (values.py wraps slices in bytes() for memoryviews).

_FIXED_FMT = {T.TINY: ("b", "B"), T.SHORT: ("h", "H"), T.LONG: ("i", "I"),
              T.LONGLONG: ("q", "Q"), T.FLOAT: ("f", "f"), T.DOUBLE: ("d", "d")}
_BLOB_TYPES = frozenset((T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB, T.GEOMETRY))


# ENUM / SET: a little-endian unsigned index / bitmask of their pack length (values.py)
_PACKED_UINT_FMT = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _inline_kind(t: int, meta: int, unsigned: bool):
    """("fixed", struct char) | ("len", prefix width) | ("lines", lines_of, meta) (the value's
    straight-line source, straight_decoders.py) | None (call the decoder)."""
    fmt = _FIXED_FMT.get(t)
    if fmt is not None:
        return "fixed", fmt[1] if unsigned else fmt[0]
    if t in (T.ENUM, T.SET) and (meta & 0xFF) in _PACKED_UINT_FMT:
        return "fixed", _PACKED_UINT_FMT[meta & 0xFF]
    lines_of = INLINE_LINES.get(t)
    if lines_of is not None:
        return "lines", lines_of, meta
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
    kinds = [_inline_kind(types[i], metas[i], _is_unsigned(signedness, overrides, i)) for i in cols]
    src = _ImageSource(decoders, kinds)
    nbytes = (len(cols) + 7) >> 3
    # The NULL-bitmap mask lives in `env`, never as a decimal literal (a table of more than
    # ~14,000 columns would hit Python's int-string limit), and the slow path tests each bit in
    # its byte: one big-int operation per column made wide tables quadratic.
    src.env["MASK"] = (1 << len(cols)) - 1
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
    lines += src.no_null_path(cols)
    lines.append("    row = {}")
    for k, ordinal in enumerate(cols):
        lines.append(f"    if buf[nb + {k >> 3}] & {1 << (k & 7)}:")
        lines.append(f"        row[{ordinal}] = None")
        lines.append("    else:")
        lines += src.value_code(k, ordinal, f"row[{ordinal}]", "        ")
    lines.append("    return row, pos")
    exec(compile("\n".join(lines), "<rows image decoder>", "exec"), src.env)  # noqa: S102
    return src.env["decode"]


class _ImageSource:
    """The source lines of one compiled image decoder and the names they use (`env`)."""

    def __init__(self, decoders: list, kinds: list):
        self.decoders, self.kinds = decoders, kinds
        self.env = {"from_bytes": int.from_bytes}
        self.structs: dict[str, str] = {}

    def unpacker(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = self.structs[fmt] = f"u{len(self.structs)}"
            self.env[name] = struct.Struct("<" + fmt).unpack_from
        return name

    def value_code(self, k: int, ordinal: int, target: str, ind: str) -> list[str]:
        kind = self.kinds[k]
        if kind is None:
            self.env[f"d{ordinal}"] = self.decoders[ordinal]
            return [f"{ind}{target}, pos = d{ordinal}(buf, pos)"]
        if kind[0] == "lines":
            return kind[1](kind[2], target, ind, self.env, str(k))
        if kind[0] == "fixed":
            size = struct.calcsize("<" + kind[1])
            return [f"{ind}{target} = {self.unpacker(kind[1])}(buf, pos)[0]", f"{ind}pos += {size}"]
        width = kind[1]
        if width == 1:
            return [f"{ind}n = pos + 1 + buf[pos]", f"{ind}{target} = buf[pos + 1:n]",
                    f"{ind}pos = n"]
        return [f"{ind}n = pos + {width} + from_bytes(buf[pos:pos + {width}], 'little')",
                f"{ind}{target} = buf[pos + {width}:n]", f"{ind}pos = n"]

    def no_null_path(self, cols: list[int]) -> list[str]:
        """Every present column read into v0, v1, ...; runs of fixed-width columns in one
        struct call; then the row as one dict display."""
        kinds, lines, k = self.kinds, [], 0
        while k < len(cols):
            if kinds[k] is not None and kinds[k][0] == "fixed":
                run = k
                while run < len(cols) and kinds[run] is not None and kinds[run][0] == "fixed":
                    run += 1
                fmt = "".join(kinds[j][1] for j in range(k, run))
                targets = ", ".join(f"v{j}" for j in range(k, run))
                lines.append(f"        {targets}{',' if run - k == 1 else ''} = "
                             f"{self.unpacker(fmt)}(buf, pos)")
                lines.append(f"        pos += {struct.calcsize('<' + fmt)}")
                k = run
            else:
                lines += self.value_code(k, cols[k], f"v{k}", "        ")
                k += 1
        lines.append("        return {" + ", ".join(f"{o}: v{k}" for k, o in enumerate(cols))
                     + "}, pos")
        return lines


# Per-event shortcuts (small transactions: one rows event per Table_map): columns-present
# bitmaps by their raw bytes, and image decoders by Table_map object (tablemap.py hands out one
# object per distinct Table_map body) + present bits, checked against the context's per-table
# configuration so a changed configuration never reuses a stale decoder.
_tm_images: dict[tuple, tuple] = {}


def image_for(tm: TableMap, ctx: DecodeContext, present: tuple[bool, ...]):
    names = (tm.database, tm.table)
    cfg = (ctx.unsigned_overrides.get(names), _old_temporal_fsp(ctx, tm), ctx.flavour,
           json_limits(ctx))
    key = (id(tm), present)
    hit = _tm_images.get(key)
    if hit is not None and hit[0] is tm and hit[1] == cfg:
        return hit[2]
    decoder = image_decoder(tm, ctx, present)
    if len(_tm_images) >= 4096:
        _tm_images.clear()
    _tm_images[key] = (tm, cfg, decoder)
    return decoder


def encode_image(row: dict, present, encoders, pad_ones: bool = True) -> bytes:
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
            values.append(encode_json_diffs(value))
        else:
            values.append(encoders[ordinal](value))
    nbytes = (len(cols) + 7) >> 3
    # MariaDB starts the NULL bytes at 0xFF and clears bits, so unused bits are set; MySQL 8
    # leaves them clear (RowsWireDetail.null_padding_ones)
    if pad_ones:
        nulls |= ((1 << (nbytes * 8)) - 1) ^ ((1 << len(cols)) - 1)
    return nulls.to_bytes(nbytes, "little") + b"".join(values)
