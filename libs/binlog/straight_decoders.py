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

from .decimal_codec import _parts
from .errors import MalformedError
from .temporal import DATETIMEF_INT_OFS, FRAC_BYTES, FRAC_UNIT, _check_fsp

_DECIMAL_GROUP_ERROR = "DECIMAL digit group out of range"
_decimal_cache: dict[int, tuple] = {}


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
    ints, fracs, size = _parts(precision, scale)
    nbits = size * 8
    sign = 1 << (nbits - 1)
    env = {"from_bytes": int.from_bytes, "Decimal": Decimal, "MalformedError": MalformedError,
           "SIGN": sign, "REST": ((1 << nbits) - 1) ^ sign}
    lines = ["def decode(buf, pos):", f"    end = pos + {size}",
             "    raw = from_bytes(buf[pos:end], 'big')",
             # decimal2bin: the first bit flipped (set = non-negative); negative values inverted
             "    if raw & SIGN:", "        raw ^= SIGN", "        sign = ''",
             "    else:", "        raw ^= REST", "        sign = '-'"]
    shift, checks, names = nbits, [], []
    for k, (nbytes, digits) in enumerate(ints + fracs):
        shift -= nbytes * 8
        lines.append(f"    g{k} = (raw >> {shift}) & {(1 << (nbytes * 8)) - 1}")
        checks.append(f"g{k} >= {10 ** digits}")
        names.append((f"g{k}", digits))
    if checks:
        lines += [f"    if {' or '.join(checks)}:", f"        raise MalformedError({_DECIMAL_GROUP_ERROR!r})"]
    int_expr = _digits_value(names[:len(ints)])
    if not scale:
        lines.append(f"    return Decimal(sign + str({int_expr})), end")
    else:
        frac_expr = _digits_value(names[len(ints):])
        if scale <= 4:  # a table of the zero-padded fraction texts
            env["FRAC"] = [str(i).zfill(scale) for i in range(10 ** scale)]
            frac_text = f"FRAC[{frac_expr}]"
        else:
            frac_text = f"'%0{scale}d' % ({frac_expr})"
        lines.append(f"    return Decimal(sign + str({int_expr}) + '.' + {frac_text}), end")
    exec(compile("\n".join(lines), "<decimal decoder>", "exec"), env)  # noqa: S102
    return env["decode"], size


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


def _fraction(fsp: int):
    """usec (0..999999) -> '.' + fsp digits, as temporal._frac_text."""
    table = _FRAC_TABLES.get(fsp)
    div = 10 ** (6 - fsp)
    if table is not None:
        return lambda usec: table[usec // div]
    fmt = f".%0{fsp}d"
    return lambda usec: fmt % (usec // div)


def straight_datetime2(fsp: int):
    """(decode, size) of DATETIME2(fsp): my_datetime_packed_from_binary."""
    _check_fsp(fsp)
    nfrac = FRAC_BYTES[fsp]
    size, unit = 5 + nfrac, FRAC_UNIT[nfrac]
    from_bytes, two, date_prefix, ofs = int.from_bytes, _TWO, _date_prefix, DATETIMEF_INT_OFS
    dates = _dates
    fraction = _fraction(fsp) if fsp else None

    def decode(buf, pos):
        end = pos + size
        packed = from_bytes(buf[pos:pos + 5], "big") - ofs
        if packed < 0:
            raise MalformedError("negative DATETIME2 value")
        ymd = packed >> 17
        date = dates.get(ymd) or date_prefix(ymd)
        text = date + two[(packed >> 12) & 31] + ":" + two[(packed >> 6) & 63] + ":" + two[packed & 63]
        if fraction is None:
            return text, end
        usec = from_bytes(buf[pos + 5:end], "big", signed=True) * unit
        if not 0 <= usec < 1_000_000:
            raise _usec_error(usec)
        return text + fraction(usec), end

    return decode, size


def straight_timestamp2(fsp: int):
    """(decode, size) of TIMESTAMP2(fsp): 4-byte big-endian seconds + fraction bytes."""
    _check_fsp(fsp)
    nfrac = FRAC_BYTES[fsp]
    size, unit = 4 + nfrac, FRAC_UNIT[nfrac]
    from_bytes = int.from_bytes
    if not fsp:
        def decode0(buf, pos):
            end = pos + 4
            return str(from_bytes(buf[pos:end], "big")), end
        return decode0, size
    fraction = _fraction(fsp)

    def decode(buf, pos):
        end = pos + size
        usec = from_bytes(buf[pos + 4:end], "big") * unit
        if usec >= 1_000_000:
            raise _usec_error(usec)
        return str(from_bytes(buf[pos:pos + 4], "big")) + fraction(usec), end

    return decode, size
