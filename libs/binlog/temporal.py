"""Temporal column codecs. Values are text (str) so zero and partial dates survive
('0000-00-00', '2024-00-00' are legal MySQL values a datetime cannot hold):

  DATE       'YYYY-MM-DD'
  TIME       '[-]HH:MM:SS[.f...]'         (hours may have 3 digits: '-838:59:59')
  DATETIME   'YYYY-MM-DD HH:MM:SS[.f...]'
  TIMESTAMP  'SECONDS[.f...]'             seconds since the epoch, UTC ('0' = zero timestamp)

with exactly fsp fraction digits. Layouts: MySQL mysys/my_time.cc (my_time_packed_from_binary,
my_datetime_packed_from_binary, my_timestamp_from_binary) for TIME2/DATETIME2/TIMESTAMP2, the
pre-5.6 integer formats for TIME/DATETIME/TIMESTAMP/DATE, and MariaDB's 5.3 "hires" formats
(sql/field.cc Field_time_hires, Field_datetime_hires, Field_timestamp_hires) which MariaDB logs
as plain TIME/DATETIME/TIMESTAMP *without* fsp metadata: the fsp must be configured
(`old_temporal_fsp`), fsp 0 being the plain integer format.
"""
from __future__ import annotations

from libs.binlog.errors import MalformedError

TIMEF_INT_OFS = 0x800000
TIMEF_OFS = 0x800000000000
DATETIMEF_INT_OFS = 0x8000000000
FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)  # fsp -> bytes of the fraction (TIME2/DATETIME2/TIMESTAMP2)
# Fraction bytes -> microseconds one stored step is worth (my_time.cc: one byte holds
# hundredths, two bytes ten-thousandths, three bytes microseconds, whatever the fsp).
FRAC_UNIT = (0, 10000, 100, 1)
_from = int.from_bytes


def _frac_text(usec: int, fsp: int) -> str:
    return "" if not fsp else "." + str(usec // 10 ** (6 - fsp)).zfill(fsp)


def _check_usec(usec: int) -> None:
    """my_time.cc: the fraction is microseconds, 0..999999. Bytes holding more (a 1-byte
    fraction is hundredths, at most 99) are no value the server writes, and the text would not
    re-encode into the same width."""
    if not 0 <= usec < 1_000_000:
        raise MalformedError(f"fractional seconds {usec} out of range 0-999999 microseconds")


def _check_fsp(fsp: int) -> None:
    if not 0 <= fsp <= 6:
        raise MalformedError(f"fractional seconds precision {fsp} out of range 0-6")


# ---- text parsing shared by encoders ------------------------------------------------------

def parse_fraction(frac: str) -> int:
    """The digits after the point as microseconds ('' -> 0; digits past the sixth dropped)."""
    return int(frac.ljust(6, "0")[:6]) if frac else 0


def parse_time_text(text: str) -> tuple[bool, int, int, int, int]:
    neg = text.startswith("-")
    body = text[1:] if neg else text
    hms, _, frac = body.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    return neg, h, m, s, parse_fraction(frac)


def parse_datetime_text(text: str) -> tuple[int, int, int, int, int, int, int]:
    date, _, time = text.partition(" ")
    y, mo, d = (int(x) for x in date.split("-"))
    _, h, mi, s, usec = parse_time_text(time or "00:00:00")
    return y, mo, d, h, mi, s, usec


# ---- MySQL 5.6+ formats -------------------------------------------------------------------

def make_time2(fsp: int):
    _check_fsp(fsp)
    size = 3 + FRAC_BYTES[fsp]

    def decode(buf, pos):
        end = pos + size
        if fsp >= 5:
            packed = _from(buf[pos:end], "big") - TIMEF_OFS
        else:
            intpart = _from(buf[pos:pos + 3], "big") - TIMEF_INT_OFS
            if fsp == 0:
                packed = intpart << 24
            else:
                nfrac = size - 3
                frac = _from(buf[pos + 3:end], "big")  # unsigned, see below
                if intpart < 0 and frac:
                    # negative values keep a reversed fraction for binary sort order
                    intpart += 1
                    frac -= 1 << (8 * nfrac)
                packed = (intpart << 24) + frac * FRAC_UNIT[nfrac]
        neg = packed < 0
        if neg:
            packed = -packed
        hms, usec = packed >> 24, packed & 0xFFFFFF
        _check_usec(usec)
        text = (f"{'-' if neg else ''}{(hms >> 12) & 0x3FF:02d}:{(hms >> 6) & 63:02d}:"
                f"{hms & 63:02d}{_frac_text(usec, fsp)}")
        return text, end

    def encode(value: str) -> bytes:
        neg, h, m, s, usec = parse_time_text(value)
        usec = usec // 10 ** (6 - fsp) * 10 ** (6 - fsp)
        packed = (((h << 12) | (m << 6) | s) << 24) + usec
        if neg:
            packed = -packed
        if fsp >= 5:
            return (packed + TIMEF_OFS).to_bytes(6, "big")
        if fsp == 0:
            return ((packed >> 24) + TIMEF_INT_OFS).to_bytes(3, "big")
        nfrac = size - 3
        unit = FRAC_UNIT[nfrac]
        # my_time_packed_to_binary: floor int part, C-style (truncating) fraction remainder
        intpart = packed >> 24
        frac = (packed & 0xFFFFFF) // unit if packed >= 0 else -((-packed & 0xFFFFFF) // unit)
        frac &= (1 << (8 * nfrac)) - 1
        return (intpart + TIMEF_INT_OFS).to_bytes(3, "big") + frac.to_bytes(nfrac, "big")

    return decode, encode, size


def make_datetime2(fsp: int):
    _check_fsp(fsp)
    nfrac = FRAC_BYTES[fsp]
    size = 5 + nfrac
    unit = FRAC_UNIT[nfrac]

    def decode(buf, pos):
        end = pos + size
        packed = _from(buf[pos:pos + 5], "big") - DATETIMEF_INT_OFS
        if packed < 0:
            raise MalformedError("negative DATETIME2 value")
        ymd, hms = packed >> 17, packed & 0x1FFFF
        ym = ymd >> 5
        text = (f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} {hms >> 12:02d}:"
                f"{(hms >> 6) & 63:02d}:{hms & 63:02d}")
        if fsp:
            usec = _from(buf[pos + 5:end], "big", signed=True) * unit
            _check_usec(usec)
            text += _frac_text(usec, fsp)
        return text, end

    def encode(value: str) -> bytes:
        y, mo, d, h, mi, s, usec = parse_datetime_text(value)
        packed = ((((y * 13 + mo) << 5) | d) << 17) | (h << 12) | (mi << 6) | s
        out = (packed + DATETIMEF_INT_OFS).to_bytes(5, "big")
        return out + (usec // unit).to_bytes(nfrac, "big") if fsp else out

    return decode, encode, size


def make_timestamp2(fsp: int):
    """my_timestamp_from_binary: 4-byte big-endian seconds + FRAC_BYTES[fsp] fraction bytes."""
    _check_fsp(fsp)
    return _seconds_and_fraction(fsp, FRAC_UNIT[FRAC_BYTES[fsp]])


def _seconds_and_fraction(fsp: int, unit: int):
    """The layout TIMESTAMP2 and MariaDB's Field_timestamp_hires share: 4-byte big-endian
    seconds, then FRAC_BYTES[fsp] big-endian fraction bytes whose step is `unit` microseconds
    (the two formats differ only in that unit)."""
    nfrac = FRAC_BYTES[fsp]
    size = 4 + nfrac

    def decode(buf, pos):
        end = pos + size
        seconds = _from(buf[pos:pos + 4], "big")
        if not fsp:
            return str(seconds), end
        usec = _from(buf[pos + 4:end], "big") * unit
        _check_usec(usec)
        return f"{seconds}{_frac_text(usec, fsp)}", end

    def encode(value: str) -> bytes:
        sec, _, frac = value.partition(".")
        out = int(sec).to_bytes(4, "big")
        if not fsp:
            return out
        return out + (parse_fraction(frac) // unit).to_bytes(nfrac, "big")

    return decode, encode, size


# ---- pre-5.6 integer formats (fsp 0) ------------------------------------------------------

def decode_date(buf, pos):
    v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
    return f"{v >> 9:04d}-{(v >> 5) & 15:02d}-{v & 31:02d}", pos + 3


def encode_date(value: str) -> bytes:
    y, mo, d = (int(x) for x in value.split("-"))
    return ((y << 9) | (mo << 5) | d).to_bytes(3, "little")


def decode_time_int(buf, pos):
    v = _from(buf[pos:pos + 3], "little", signed=True)
    a = -v if v < 0 else v
    return f"{'-' if v < 0 else ''}{a // 10000:02d}:{a // 100 % 100:02d}:{a % 100:02d}", pos + 3


def encode_time_int(value: str) -> bytes:
    neg, h, m, s, _ = parse_time_text(value)
    v = h * 10000 + m * 100 + s
    return (-v if neg else v).to_bytes(3, "little", signed=True)


def decode_datetime_int(buf, pos):
    v = _from(buf[pos:pos + 8], "little")
    d, t = divmod(v, 1000000)
    return (f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d} "
            f"{t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}"), pos + 8


def encode_datetime_int(value: str) -> bytes:
    y, mo, d, h, mi, s, _ = parse_datetime_text(value)
    return ((y * 10000 + mo * 100 + d) * 1000000 + h * 10000 + mi * 100 + s).to_bytes(8, "little")


def decode_timestamp_int(buf, pos):
    return str(_from(buf[pos:pos + 4], "little")), pos + 4


def encode_timestamp_int(value: str) -> bytes:
    return int(value).to_bytes(4, "little")


# ---- MariaDB 5.3 hires formats (old TIME/DATETIME/TIMESTAMP with fsp > 0) -------------------

_TIME_MAX_SECONDS = 838 * 3600 + 59 * 60 + 59


def _nbytes(n: int) -> int:
    return (n.bit_length() + 7) // 8


def make_time_hires(fsp: int):
    """Field_time_hires: big-endian (seconds*10^6+usec) / 10^(6-fsp) + zero point."""
    _check_fsp(fsp)
    div = 10 ** (6 - fsp)
    zero = (_TIME_MAX_SECONDS + 1) * 1000000 // div
    size = _nbytes(2 * zero)

    def decode(buf, pos):
        end = pos + size
        v = _from(buf[pos:end], "big") - zero
        neg = v < 0
        total = (-v if neg else v) * div
        secs, usec = divmod(total, 1000000)
        return (f"{'-' if neg else ''}{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
                f"{_frac_text(usec, fsp)}"), end

    def encode(value: str) -> bytes:
        neg, h, m, s, usec = parse_time_text(value)
        v = ((h * 3600 + m * 60 + s) * 1000000 + usec) // div
        return ((-v if neg else v) + zero).to_bytes(size, "big")

    return decode, encode, size


def make_datetime_hires(fsp: int):
    """Field_datetime_hires: big-endian packed (((Y*13+M)*32+D)*24+h)*60+m)*60+s, *10^fsp + frac."""
    _check_fsp(fsp)
    div = 10 ** (6 - fsp)
    size = _nbytes((9999 * 13 * 32 * 24 * 3600 + 86400) * 1000000 // div)

    def decode(buf, pos):
        end = pos + size
        v = _from(buf[pos:end], "big") * div
        secs, usec = divmod(v, 1000000)
        rest, sec = divmod(secs, 60)
        rest, minute = divmod(rest, 60)
        rest, hour = divmod(rest, 24)
        rest, day = divmod(rest, 32)
        year, month = divmod(rest, 13)
        return (f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{sec:02d}"
                f"{_frac_text(usec, fsp)}"), end

    def encode(value: str) -> bytes:
        y, mo, d, h, mi, s, usec = parse_datetime_text(value)
        secs = ((((y * 13 + mo) * 32 + d) * 24 + h) * 60 + mi) * 60 + s
        return ((secs * 1000000 + usec) // div).to_bytes(size, "big")

    return decode, encode, size


def make_timestamp_hires(fsp: int):
    """Field_timestamp_hires: 4-byte big-endian seconds + big-endian fraction (sec_part_bytes)
    counting 10^(6-fsp) microseconds a step."""
    _check_fsp(fsp)
    return _seconds_and_fraction(fsp, 10 ** (6 - fsp))
