"""The C row-image core (libs/binlog/_rowimages.c, rows_core.py) gives exactly what the Python
decoders (rows_images, the reference) give: the same events for every binlog of the corpus,
the same rows or a failure on both sides for mutated row images, and the same value and end
position per column type on encoded and random bytes."""
from __future__ import annotations

import dataclasses
import random
from contextlib import contextmanager
from decimal import Decimal

import pytest

import libs.binlog.rows as rows_mod
from libs.binlog import BinlogError, DecodeContext, decode_event, iter_events, iter_frames
from libs.binlog.constants import ColumnType as T
from libs.binlog.rows_core import OP_CALL, column_op, decode_image, image_plan
from libs.binlog.rows_images import loop_image_decoder
from libs.binlog.values import ColumnSpec, column_codec

from .row_core_diff import (DECODE_ERRORS, canon_rows, canon_value, collect_cases, core_outcome,
                            corpus_binlogs, mutate, python_outcome, same)

CORPUS_FILES = corpus_binlogs()


@contextmanager
def counted_core():
    """The core as rows.py calls it, counting its results and failures."""
    real = rows_mod.read_changes
    counts = {"core": 0, "fallback": 0}

    def counting(*args):
        try:
            out = real(*args)
        except Exception:
            counts["fallback"] += 1
            raise
        counts["core"] += 1
        return out

    rows_mod.read_changes = counting
    try:
        yield counts
    finally:
        rows_mod.read_changes = real


@contextmanager
def python_only():
    """rows.py reading changes with the Python decoders only (the reference)."""
    real = rows_mod._changes
    rows_mod._changes = rows_mod._read_changes
    try:
        yield
    finally:
        rows_mod._changes = real


def _events(path) -> list:
    out = []
    try:
        for ev in iter_events(path.read_bytes(), file=path.name):
            rows = getattr(ev.body, "rows", None)
            out.append((ev, canon_rows(rows) if type(rows) is tuple else None))
    except BinlogError as err:
        out.append(("error", type(err).__name__, err.message, err.pos))
    return out


def test_corpus_binlogs_decode_the_same_with_the_core():
    assert len(CORPUS_FILES) > 50
    total = {"core": 0, "fallback": 0}
    for path in CORPUS_FILES:
        with counted_core() as counts:
            with_core = _events(path)
        with python_only():
            reference = _events(path)
        assert with_core == reference, path
        total = {k: total[k] + counts[k] for k in total}
    # the core really decoded the corpus' rows events (not the fallback)
    assert total["core"] > 50_000
    assert total["fallback"] < total["core"] // 1000, total


@pytest.fixture(scope="module")
def cases():
    rng = random.Random(21)
    wanted = ("all_types", "all_types_fullmeta", "row_minimal", "row_noblob", "compressed",
              "misc", "mysql-8.0.43", "rust_mysql_common-test-data", "big_trx")
    paths = [p for p in CORPUS_FILES if any(w in p.parts for w in wanted)
             and p.stat().st_size < 5_000_000]
    out = collect_cases(paths, 40, rng)
    assert len(out) > 300
    return out


def test_mutated_row_images_give_the_same_rows_or_fail_on_both_sides(cases):
    rng = random.Random(4)
    outcomes = {"ok": 0, "error": 0}
    for n in range(6000):
        case = rng.choice(cases)
        if n % 10 == 0:  # the row limit: counted only when the body could hold more
            case = dataclasses.replace(case, max_rows=rng.choice((1, 2, 3)))
        body = mutate(case, rng)
        core, python = core_outcome(case, body), python_outcome(case, body)
        assert same(core, python), (case.kind, case.body.hex(), body.hex(), core, python)
        outcomes[python[0]] += 1
    assert outcomes["ok"] > 500 and outcomes["error"] > 500, outcomes


def test_unmutated_cases_match(cases):
    for case in cases:
        core = core_outcome(case, case.body)
        assert core[0] == "ok" and core == python_outcome(case, case.body)


def test_decode_rows_errors_are_the_python_decoders():
    """Through rows.decode_rows (the core, its fallback): the same record or the same error
    class and message as with the core switched off."""
    rng = random.Random(7)
    path = next(p for p in CORPUS_FILES if p.name == "mdb-bin.000004" and "all_types" in p.parts)
    ctx = DecodeContext(file=path.name)
    frames = []
    for pos, frame in iter_frames(path.read_bytes(), file=path.name):
        if frame[4] in (23, 24, 25, 30, 31, 32) and len(frames) < 300:
            frames.append((pos, bytes(frame), dict(ctx.table_maps), ctx.fde))
        try:
            decode_event(frame, pos, ctx)
        except BinlogError:
            pass
    assert len(frames) > 30

    def outcome(pos, frame, tms, fde):
        c = DecodeContext(fde=fde, table_maps=dict(tms), file=path.name)
        try:
            ev = decode_event(frame, pos, c, verify_checksum=False)
        except BinlogError as err:
            return "error", type(err).__name__, err.message
        return "ok", ev, canon_rows(ev.body.rows)

    for i in range(1500):
        pos, frame, tms, fde = frames[i % len(frames)]
        b = bytearray(frame)
        j = rng.randrange(19 + 10, len(b))
        b[j] = rng.randrange(256)
        if i % 3 == 0:
            b = b[:rng.randrange(30, len(b))]
            b[9:13] = len(b).to_bytes(4, "little")
        got = outcome(pos, bytes(b), tms, fde)
        with python_only():
            want = outcome(pos, bytes(b), tms, fde)
        assert got == want


# ---- per column type ----------------------------------------------------------------------

def _specs():
    specs = []
    for t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        specs += [(t, 0, False), (t, 0, True)]
    specs += [(T.FLOAT, 4, False), (T.DOUBLE, 8, False), (T.YEAR, 0, False), (T.DATE, 0, False),
              (T.NEWDATE, 0, False)]
    specs += [(T.NEWDECIMAL, p << 8 | s, False)
              for p, s in ((1, 0), (1, 1), (9, 0), (9, 9), (10, 2), (12, 2), (18, 9), (19, 10),
                           (20, 0), (30, 15), (38, 0), (65, 0), (65, 30), (65, 5), (4, 4))]
    specs += [(t, fsp, False) for t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2) for fsp in range(7)]
    specs += [(T.VARCHAR, 10, False), (T.VARCHAR, 300, False), (T.STRING, 0xFE00 | 20, False),
              (T.STRING, 0xFE00 | 255, False), (T.STRING, (0xFE ^ 0x30) << 8 | 0x2C, False)]
    specs += [(t, w, False) for t in (T.BLOB, T.GEOMETRY) for w in (1, 2, 3, 4)]
    specs += [(T.ENUM, 0xF700 | 1, False), (T.ENUM, 0xF700 | 2, False)]
    specs += [(T.SET, 0xF800 | n, False) for n in range(1, 9)]
    specs += [(T.BIT, (n // 8) << 8 | n % 8, False) for n in (1, 7, 8, 9, 31, 64)]
    specs += [(T.JSON, 4, False), (T.TIME, 0, False), (T.DATETIME, 0, False),
              (T.TIMESTAMP, 0, False), (T.NULL, 0, False)]
    return specs


def _valid_value(t: int, meta: int, rng: random.Random):
    """A value the encoder accepts, for the types whose random bytes are mostly invalid."""
    if t == T.NEWDECIMAL:
        p, s = meta >> 8, meta & 0xFF
        ints = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, p - s)))
        frac = "".join(rng.choice("0123456789") for _ in range(s))
        return Decimal(rng.choice(("", "-")) + (ints or "0") + ("." + frac if s else ""))
    if t not in (T.DATETIME2, T.TIMESTAMP2):
        return None
    frac = "." + "".join(rng.choice("0123456789") for _ in range(meta)) if meta else ""
    if t == T.DATETIME2:
        return (f"{rng.randint(0, 9999):04d}-{rng.randint(0, 12):02d}-{rng.randint(0, 31):02d} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{frac}")
    if t == T.TIMESTAMP2:
        return f"{rng.choice((0, 1, rng.randrange(1 << 32)))}{frac}"


@pytest.mark.parametrize("t,meta,unsigned", _specs())
def test_column_type_values_and_positions(t, meta, unsigned):
    rng = random.Random(t * 65536 + meta)
    dec, enc = column_codec(ColumnSpec(t, meta, unsigned))
    op = column_op(t, meta, unsigned)
    if t in (T.JSON, T.TIME2, T.TIME, T.DATETIME, T.TIMESTAMP, T.NULL):
        assert op[0] == OP_CALL
    else:
        assert op[0] != OP_CALL
    plan = image_plan((True,), (t,), (meta,), lambda i: unsigned, [dec])
    reference = loop_image_decoder((True,), [dec])
    agreed = 0
    for n in range(3000):
        value = _valid_value(t, meta, rng) if n % 3 == 0 else None
        if value is not None:
            payload = enc(value)
        else:
            size = rng.choice((0, 1, 2, 3, 4, 5, 6, 8, 9, 12, 40))
            payload = bytes(rng.randrange(256) for _ in range(size))
        buf = bytes((rng.choice((0, 0, 0, 0xFE, 1)),)) + payload + bytes(rng.randrange(3))
        try:
            row, end = reference(buf, 0)
            # past the end: rows.py's check of the last image's end fails it
            want = (("ok", [(k, canon_value(v)) for k, v in row.items()], end)
                    if end <= len(buf) else ("error",))
        except DECODE_ERRORS:
            want = ("error",)
        try:
            row, end = decode_image(plan, buf, 0)
            got = ("ok", [(k, canon_value(v)) for k, v in row.items()], end)
        except DECODE_ERRORS:
            got = ("error",)
        assert got == want, (buf.hex(), got, want)
        agreed += want[0] == "ok"
    assert agreed > 300
