"""NEWDECIMAL binary format (MySQL strings/decimal.cc decimal2bin/bin2decimal).

Precision p and scale s come from the Table_map metadata (p << 8 | s). The integer part
(p - s digits) and the fraction (s digits) are stored as groups of 9 decimal digits in 4
big-endian bytes each; the leftover digits of the integer part come first and those of the
fraction last, in the fewest bytes that hold them (DIG2BYTES). The sign: the first bit is
flipped (set = non-negative) and, for negative numbers, every byte is inverted.
"""
from __future__ import annotations

from decimal import Context, Decimal

from libs.binlog.errors import MalformedError

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def _parts(precision: int, scale: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]], int]:
    """([(bytes, digits)] of the integer part, same for the fraction, total size)."""
    intg = precision - scale
    ints = ([(DIG2BYTES[intg % 9], intg % 9)] if intg % 9 else []) + [(4, 9)] * (intg // 9)
    fracs = [(4, 9)] * (scale // 9) + ([(DIG2BYTES[scale % 9], scale % 9)] if scale % 9 else [])
    size = sum(b for b, _ in ints) + sum(b for b, _ in fracs)
    return ints, fracs, size


def decimal_size(meta: int) -> int:
    return _parts(meta >> 8, meta & 0xFF)[2]


def _groups_value(raw: int, groups) -> int:
    """The number the digit groups (shift, mask, 10^digits, digits) of `raw` spell, most
    significant first; a group over its digit count is malformed (bin2decimal checks it too)."""
    value = 0
    for sh, mask, mult, _ in groups:
        chunk = (raw >> sh) & mask
        if chunk >= mult:
            raise MalformedError("DECIMAL digit group out of range")
        value = value * mult + chunk
    return value


def make_decimal_decoder(meta: int):
    precision, scale = meta >> 8, meta & 0xFF
    if precision == 0 or scale > precision:
        raise MalformedError(f"invalid DECIMAL metadata precision={precision} scale={scale}")
    ints, fracs, size = _parts(precision, scale)
    nbits = size * 8
    sign_bit = 1 << (nbits - 1)
    full = (1 << nbits) - 1
    # (shift, mask, multiplier) per chunk, most significant first, for integer and fraction.
    layout = []
    shift = nbits
    for nbytes, digits in ints + fracs:
        shift -= nbytes * 8
        layout.append((shift, (1 << (nbytes * 8)) - 1, 10 ** digits, digits))
    int_layout = layout[:len(ints)]
    frac_layout = layout[len(ints):]
    frac_fmt = "{}{}.{:0" + str(scale) + "d}"
    from_bytes = int.from_bytes

    def decode(buf, pos):
        end = pos + size
        raw = from_bytes(buf[pos:end], "big")
        negative = not raw & sign_bit
        raw ^= sign_bit
        if negative:
            raw ^= full
        int_part = _groups_value(raw, int_layout)
        sign = "-" if negative else ""
        if not scale:
            return Decimal(f"{sign}{int_part}"), end
        return Decimal(frac_fmt.format(sign, int_part, _groups_value(raw, frac_layout))), end

    return decode, size


def make_decimal_encoder(meta: int):
    precision, scale = meta >> 8, meta & 0xFF
    ints, fracs, size = _parts(precision, scale)
    nbits = size * 8
    ctx = Context(prec=200)  # DECIMAL(65,30) exceeds the default 28-digit context

    def encode(value) -> bytes:
        value = Decimal(value)
        negative = value.is_signed()
        int_part, frac = divmod(int(ctx.scaleb(value.copy_abs(), scale).to_integral_value()), 10 ** scale)
        raw = 0
        chunks = []
        for _, d in reversed(ints):
            int_part, chunk = divmod(int_part, 10 ** d)
            chunks.append(chunk)
        if int_part:
            raise ValueError(f"{value} does not fit DECIMAL({precision},{scale})")
        chunks.reverse()
        frac_chunks = []
        rest_digits = scale
        for _, d in fracs:
            rest_digits -= d
            frac_chunks.append((frac // 10 ** rest_digits) % 10 ** d)
        for (nbytes, _), chunk in zip(ints + fracs, chunks + frac_chunks):
            raw = (raw << (nbytes * 8)) | chunk
        if negative:
            raw ^= (1 << nbits) - 1
        raw ^= 1 << (nbits - 1)
        return raw.to_bytes(size, "big")

    return encode
