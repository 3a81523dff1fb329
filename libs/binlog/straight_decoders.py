"""Faster decoders of the three per-value hot spots of wide row images (issue #21 goal 4):
NEWDECIMAL, DATETIME2 and TIMESTAMP2. Same values, same end positions and the same
MalformedError messages as the reference decoders (decimal_codec.make_decimal_decoder,
temporal.make_datetime2 / make_timestamp2), which stay as they are and are what the tests
compare these with (tests/unit/codec/test_straight_decoders.py).

Why faster (bench/README.md, issue #21 goal 4): the reference DECIMAL walks its digit groups in a
loop and formats with str.format; here one function per (precision, scale) is generated with the
groups unrolled (as rows_images compiles row images). The temporal texts are built from small
tables (two-digit fields, fraction digits) and a bounded memo of date prefixes (the rows of a
batch share few dates) instead of one f-string with six format specs per value.
"""
from __future__ import annotations

from decimal import Decimal

from libs.binlog.constants import ColumnType as T
from libs.binlog.decimal_codec import _parts
from libs.binlog.errors import MalformedError
from libs.binlog.temporal import DATETIMEF_INT_OFS, FRAC_BYTES, FRAC_UNIT, _check_fsp

_DECIMAL_GROUP_ERROR = "DECIMAL digit group out of range"
_decimal_cache: dict[int, tuple] = {}
_DECIMAL_FRACS: dict[int, list[str]] = {}  # scale -> zero-padded fraction texts (scale <= 4)


def straight_decimal_decoder(meta: int):
    """(decode, size) for NEWDECIMAL(meta >> 8, meta & 0xFF); generated once per meta."""
    hit = _decimal_cache.get(meta)
    if hit is None:
        if len(_decimal_cache) > 4096:  # hostile streams: at most 65x31 metas are valid anyway
            _decimal_cache.clear()
        hit = _decimal_cache[meta] = _compile_decimal(meta)
    return hit


def _compile_decimal(meta: int):
    precision, scale = meta >> 8, meta & 0xFF
    if precision == 0 or scale > precision:
        raise MalformedError(f"invalid DECIMAL metadata precision={precision} scale={scale}")
    env = {"from_bytes": int.from_bytes}
    lines = (["def decode(buf, pos):"] + decimal_lines(meta, "value", "    ", env, "")
             + ["    return value, pos"])
    exec(compile("\n".join(lines), "<decimal decoder>", "exec"), env)  # noqa: S102
    return env["decode"], _parts(precision, scale)[2]


def decimal_lines(meta: int, target: str, ind: str, env: dict, tag: str) -> list[str]:
    """Source lines reading the NEWDECIMAL at `pos` of `buf` into `target` and advancing `pos`
    (also inlined into compiled row images: rows_images._ImageSource). `tag` keeps the local
    and `env` names of several columns of one function apart; `env` needs from_bytes."""
    precision, scale = meta >> 8, meta & 0xFF
    ints, fracs, size = _parts(precision, scale)
    nbits = size * 8
    sign = 1 << (nbits - 1)
    env.update({"Decimal": Decimal, "MalformedError": MalformedError,
                f"SIGN{tag}": sign, f"REST{tag}": ((1 << nbits) - 1) ^ sign})
    raw, neg = f"raw{tag}", f"sign{tag}"
    lines = [f"{raw} = from_bytes(buf[pos:pos + {size}], 'big')",
             # decimal2bin: the first bit flipped (set = non-negative); negative values inverted
             f"if {raw} & SIGN{tag}:", f"    {raw} ^= SIGN{tag}", f"    {neg} = ''",
             "else:", f"    {raw} ^= REST{tag}", f"    {neg} = '-'"]
    shift, checks, names = nbits, [], []
    for k, (nbytes, digits) in enumerate(ints + fracs):
        shift -= nbytes * 8
        lines.append(f"g{tag}_{k} = ({raw} >> {shift}) & {(1 << (nbytes * 8)) - 1}")
        checks.append(f"g{tag}_{k} >= {10 ** digits}")
        names.append((f"g{tag}_{k}", digits))
    if checks:
        lines += [f"if {' or '.join(checks)}:", f"    raise MalformedError({_DECIMAL_GROUP_ERROR!r})"]
    int_expr = _digits_value(names[:len(ints)])
    if not scale:
        lines.append(f"{target} = Decimal({neg} + str({int_expr}))")
    else:
        frac_expr = _digits_value(names[len(ints):])
        if scale <= 4:  # a table of the zero-padded fraction texts
            env[f"FRAC{tag}"] = _DECIMAL_FRACS.get(scale) or _DECIMAL_FRACS.setdefault(
                scale, [str(i).zfill(scale) for i in range(10 ** scale)])
            frac_text = f"FRAC{tag}[{frac_expr}]"
        else:
            frac_text = f"'%0{scale}d' % ({frac_expr})"
        lines.append(f"{target} = Decimal({neg} + str({int_expr}) + '.' + {frac_text})")
    lines.append(f"pos += {size}")
    return [ind + line for line in lines]


def _digits_value(groups: list[tuple[str, int]]) -> str:
    """The expression of the number the groups spell, most significant first (Horner)."""
    if not groups:
        return "0"
    expr = groups[0][0]
    for name, digits in groups[1:]:
        expr = f"({expr}) * {10 ** digits} + {name}"
    return expr


# ---- temporal -------------------------------------------------------------------------------

_TWO = [f"{i:02d}" for i in range(100)]
# fsp -> fraction text by the stored value // 10^(6 - fsp): tables up to 3 digits, else format
_FRAC_TABLES = {fsp: ["." + str(i).zfill(fsp) for i in range(10 ** fsp)] for fsp in (1, 2, 3)}
_dates: dict[int, str] = {}
_DATES_MAX = 1 << 16


def _date_prefix(ymd: int) -> str:
    """'YYYY-MM-DD ' of a DATETIME2's 22-bit year-month-day field (as temporal.make_datetime2)."""
    text = _dates.get(ymd)
    if text is None:
        if len(_dates) >= _DATES_MAX:
            _dates.clear()
        ym = ymd >> 5
        text = _dates[ymd] = f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} "
    return text


def _usec_error(usec: int) -> MalformedError:
    return MalformedError(f"fractional seconds {usec} out of range 0-999999 microseconds")


_TEMPORAL_ENV = {"TWO": _TWO, "DATES": _dates, "DATE_PREFIX": _date_prefix, "USEC_ERROR": _usec_error,
                 "DT2_OFS": DATETIMEF_INT_OFS, "MalformedError": MalformedError}


def _fraction_text(fsp: int, usec: str, env: dict) -> str:
    """Expression of '.' + fsp digits of the microseconds `usec` (as temporal._frac_text)."""
    div = 10 ** (6 - fsp)
    table = _FRAC_TABLES.get(fsp)
    if table is None:
        return f"'.%0{fsp}d' % ({usec} // {div})"
    env[f"FRAC_{fsp}"] = table
    return f"FRAC_{fsp}[{usec} // {div}]"


def datetime2_lines(fsp: int, target: str, ind: str, env: dict, tag: str) -> list[str]:
    """Source lines reading DATETIME2(fsp) (my_datetime_packed_from_binary) at `pos` into
    `target`, advancing `pos`; the contract of decimal_lines."""
    _check_fsp(fsp)
    nfrac = FRAC_BYTES[fsp]
    env.update(_TEMPORAL_ENV)
    p, u = f"dt{tag}", f"usec{tag}"
    lines = [f"{p} = from_bytes(buf[pos:pos + 5], 'big') - DT2_OFS",
             f"if {p} < 0:", "    raise MalformedError('negative DATETIME2 value')"]
    fraction = ""
    if fsp:
        lines += [f"{u} = from_bytes(buf[pos + 5:pos + {5 + nfrac}], 'big', signed=True)"
                  f" * {FRAC_UNIT[nfrac]}",
                  f"if not 0 <= {u} < 1000000:", f"    raise USEC_ERROR({u})"]
        fraction = "{" + _fraction_text(fsp, u, env) + "}"
    # one f-string: a single join of the pieces (~100 ns less than chained + per value)
    lines.append(f'{target} = f"{{DATES.get({p} >> 17) or DATE_PREFIX({p} >> 17)}}{{TWO[({p} >> 12) & 31]}}:'
                 f'{{TWO[({p} >> 6) & 63]}}:{{TWO[{p} & 63]}}{fraction}"')
    lines.append(f"pos += {5 + nfrac}")
    return [ind + line for line in lines]


def timestamp2_lines(fsp: int, target: str, ind: str, env: dict, tag: str) -> list[str]:
    """Source lines reading TIMESTAMP2(fsp) (4-byte big-endian seconds + fraction bytes) at
    `pos` into `target`, advancing `pos`; the contract of decimal_lines."""
    _check_fsp(fsp)
    nfrac = FRAC_BYTES[fsp]
    env.update(_TEMPORAL_ENV)
    u = f"usec{tag}"
    if not fsp:
        return [ind + f"{target} = str(from_bytes(buf[pos:pos + 4], 'big'))", ind + "pos += 4"]
    lines = [f"{u} = from_bytes(buf[pos + 4:pos + {4 + nfrac}], 'big') * {FRAC_UNIT[nfrac]}",
             f"if {u} >= 1000000:", f"    raise USEC_ERROR({u})",
             f"{target} = str(from_bytes(buf[pos:pos + 4], 'big')) + {_fraction_text(fsp, u, env)}",
             f"pos += {4 + nfrac}"]
    return [ind + line for line in lines]


def _compiled(lines_of, fsp: int, size: int, name: str):
    env = {"from_bytes": int.from_bytes}
    lines = ["def decode(buf, pos):"] + lines_of(fsp, "value", "    ", env, "") + ["    return value, pos"]
    exec(compile("\n".join(lines), name, "exec"), env)  # noqa: S102
    return env["decode"], size


def straight_datetime2(fsp: int):
    """(decode, size) of DATETIME2(fsp)."""
    _check_fsp(fsp)
    return _compiled(datetime2_lines, fsp, 5 + FRAC_BYTES[fsp], "<datetime2 decoder>")


def straight_timestamp2(fsp: int):
    """(decode, size) of TIMESTAMP2(fsp)."""
    _check_fsp(fsp)
    return _compiled(timestamp2_lines, fsp, 4 + FRAC_BYTES[fsp], "<timestamp2 decoder>")


# column type -> lines_of(meta, target, indent, env, tag): inlined by rows_images' compiled images
INLINE_LINES = {T.NEWDECIMAL: decimal_lines, T.DATETIME2: datetime2_lines, T.TIMESTAMP2: timestamp2_lines}
