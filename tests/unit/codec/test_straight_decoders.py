"""straight_decoders (issue #21 goal 4) give what the reference decoders give: the same value
(compared as text, so Decimal('-0.00') differs from Decimal('0.00')), the same end position, or
the same MalformedError message, for every DECIMAL(p, s) and fsp, on encoded values, boundary
bytes and random bytes (which hit the digit-group, negative-DATETIME2 and fraction errors)."""
from __future__ import annotations

import random
from decimal import Decimal

import pytest

from libs.binlog.decimal_codec import make_decimal_decoder, make_decimal_encoder
from libs.binlog.errors import MalformedError
from libs.binlog.straight_decoders import straight_datetime2, straight_decimal_decoder, straight_timestamp2
from libs.binlog.temporal import make_datetime2, make_timestamp2


def _outcome(decode, buf: bytes, pos: int):
    try:
        value, end = decode(buf, pos)
    except MalformedError as err:
        return "error", err.message
    return type(value).__name__, str(value), end


def _inputs(rng: random.Random, size: int, encoded: list[bytes]) -> list[bytes]:
    edges = [bytes(size), b"\xff" * size, b"\x80" + bytes(size - 1), b"\x7f" + b"\xff" * (size - 1)]
    return encoded + edges + [rng.randbytes(size) for _ in range(300)]


def _same(reference, straight, inputs: list[bytes]) -> dict:
    kinds: dict = {}
    for raw in inputs:
        buf = b"\x01\x02" + raw + b"\x03"  # at an offset, with a byte after it
        expected = _outcome(reference, buf, 2)
        assert _outcome(straight, buf, 2) == expected, raw.hex()
        kinds[expected[0]] = kinds.get(expected[0], 0) + 1
    return kinds


def test_decimal_every_precision_and_scale():
    rng, kinds = random.Random(21), {}
    for precision in range(1, 66):
        for scale in range(0, min(precision, 30) + 1):
            meta = precision << 8 | scale
            reference, size = make_decimal_decoder(meta)
            straight, straight_size = straight_decimal_decoder(meta)
            assert straight_size == size
            encode, digits = make_decimal_encoder(meta), precision - scale
            nines = ("9" * digits or "0") + ("." + "9" * scale if scale else "")
            values = [Decimal(0), Decimal("-0." + "0" * scale) if scale else Decimal("-0"),
                      Decimal(nines), Decimal("-" + nines)]
            values += [_decimal(rng.randrange(10 ** precision), scale, rng.choice("-+")) for _ in range(20)]
            for kind, n in _same(reference, straight,
                                 _inputs(rng, size, [encode(v) for v in values])).items():
                kinds[kind] = kinds.get(kind, 0) + n
    assert kinds["Decimal"] > 10_000 and kinds["error"] > 10_000  # both outcomes were exercised


def _decimal(n: int, scale: int, sign: str) -> Decimal:
    """n * 10^-scale, exact (Decimal arithmetic would round to the context's 28 digits)."""
    digits = str(n).zfill(scale + 1)
    return Decimal(sign + digits[:len(digits) - scale] + ("." + digits[-scale:] if scale else ""))


@pytest.mark.parametrize("fsp", range(7))
def test_datetime2(fsp):
    reference, encode, size = make_datetime2(fsp)
    straight, straight_size = straight_datetime2(fsp)
    assert straight_size == size
    texts = ["0000-00-00 00:00:00", "2024-01-01 00:00:05.123456", "9999-12-31 23:59:59.999999",
             "1970-01-01 00:00:00.000001", "2024-02-29 12:34:56.5"]
    rng = random.Random(fsp)
    texts += [f"{rng.randrange(10000):04d}-{rng.randrange(13):02d}-{rng.randrange(32):02d} "
              f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}."
              f"{rng.randrange(10 ** 6):06d}" for _ in range(200)]
    kinds = _same(reference, straight, _inputs(rng, size, [encode(t) for t in texts]))
    assert kinds["str"] > 100 and kinds.get("error", 0) > 10


@pytest.mark.parametrize("fsp", range(7))
def test_timestamp2(fsp):
    reference, encode, size = make_timestamp2(fsp)
    straight, straight_size = straight_timestamp2(fsp)
    assert straight_size == size
    rng = random.Random(100 + fsp)
    texts = ["0", "1700000000.25", "4294967295.999999"]
    texts += [f"{rng.randrange(1 << 32)}.{rng.randrange(10 ** 6):06d}" for _ in range(200)]
    kinds = _same(reference, straight, _inputs(rng, size, [encode(t) for t in texts]))
    assert kinds["str"] > 100 and (fsp == 0 or kinds.get("error", 0) > 10)


def test_bad_metadata_is_the_same_error():
    for meta in (0, 3 << 8 | 4):
        with pytest.raises(MalformedError) as ref:
            make_decimal_decoder(meta)
        with pytest.raises(MalformedError) as ours:
            straight_decimal_decoder(meta)
        assert ours.value.message == ref.value.message
    for maker in (straight_datetime2, straight_timestamp2):
        with pytest.raises(MalformedError):
            maker(7)


def _one_column_image(type_code: int, meta: int):
    """The compiled row-image decoder of one present column (rows_images inlines the value's
    lines); returns decode(raw) -> outcome, the NULL bitmap byte prepended."""
    from libs.binlog.rows_images import _compile_image
    key = ((type_code,), (meta,), None, frozenset(), (), "mysql", (100, 1000))
    image = _compile_image((True,), [None], key)  # None: an inlined column never calls its decoder

    def decode(buf, pos):
        row, end = image(buf[:pos] + b"\x00" + buf[pos:], pos)
        return row[0], end - 1
    return decode


def test_inlined_in_compiled_images_equal_the_reference():
    from libs.binlog.constants import ColumnType as T
    rng = random.Random(7)
    cases = [(T.NEWDECIMAL, p << 8 | s, make_decimal_decoder(p << 8 | s)[0],
              make_decimal_decoder(p << 8 | s)[1])
             for p, s in ((1, 0), (12, 2), (10, 2), (18, 9), (65, 30), (30, 5))]
    cases += [(T.DATETIME2, fsp, make_datetime2(fsp)[0], make_datetime2(fsp)[2]) for fsp in range(7)]
    cases += [(T.TIMESTAMP2, fsp, make_timestamp2(fsp)[0], make_timestamp2(fsp)[2]) for fsp in range(7)]
    for type_code, meta, reference, size in cases:
        kinds = _same(reference, _one_column_image(type_code, meta), _inputs(rng, size, []))
        never_bad = type_code == T.TIMESTAMP2 and meta == 0  # every byte string is a value
        assert len(kinds) == 1 + (not never_bad), (type_code, meta, kinds)  # values and errors compared
