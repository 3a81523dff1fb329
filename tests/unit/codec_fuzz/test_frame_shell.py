"""decode_event's frame shell in C (libs/binlog/_frames.c, framing._fast_event) gives exactly what
the Python shell (framing.python_decode_event, the reference) gives: the same events and context
for every binlog of the corpus, and on mutated frames the same event or the same error (class,
message, source, file, position, type code, raw bytes). The record constructors it and fastrec
build give the same records as the dataclasses' own __init__."""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import random
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

import libs.binlog.framing as framing
from libs.binlog import (BinlogError, DecodeContext, Header, _frames, decode_event, iter_events,
                         iter_frames)
from libs.binlog.fastrec import fast_constructor

from .row_core_diff import canon_rows, corpus_binlogs

REPO = Path(__file__).resolve().parents[3]
CORPUS_FILES = corpus_binlogs()


@contextmanager
def counted_shell():
    """The C shell as framing.py calls it, counting the frames it decoded and those it left."""
    real = framing._fast_event
    counts = {"c": 0, "python": 0}

    def counting(*args):
        event = real(*args)
        counts["c" if event is not None else "python"] += 1
        return event

    framing._fast_event = counting
    try:
        yield counts
    finally:
        framing._fast_event = real


@contextmanager
def python_shell():
    """decode_event and iter_events with the Python shell only (the reference)."""
    real = framing._fast_event
    framing._fast_event = lambda *args: None
    try:
        yield
    finally:
        framing._fast_event = real


def _error(err: BinlogError) -> tuple:
    return ("error", type(err).__name__, err.message, err.source, err.file, err.pos,
            err.type_code, err.raw)


def _digest(obj) -> bytes:
    # records hold every field in their repr; row values by type and exact text (canon_rows)
    return hashlib.blake2b(repr(obj).encode(), digest_size=16).digest()


def _events(path) -> list:
    """A digest per event of the file (or its error), then of the context at its end: the events
    themselves are not kept, so two decodes of the whole corpus stay small in memory."""
    ctx = DecodeContext(file=path.name, source="src")
    out = []
    try:
        for ev in iter_events(path.read_bytes(), file=path.name, ctx=ctx):
            rows = getattr(ev.body, "rows", None)
            if type(rows) is tuple:
                ev = dataclasses.replace(ev, body=dataclasses.replace(ev.body, rows=())), canon_rows(rows)
            out.append(_digest(ev))
    except BinlogError as err:
        out.append(_digest(_error(err)))
    out.append(_digest(("context", ctx.fde, ctx.table_maps)))
    return out


def test_corpus_binlogs_decode_the_same_with_the_c_shell():
    assert len(CORPUS_FILES) > 50
    total = {"c": 0, "python": 0}
    for path in CORPUS_FILES:
        with counted_shell() as counts:
            with_c = _events(path)
        with python_shell():
            reference = _events(path)
        first = next((i for i, (a, b) in enumerate(zip(with_c, reference)) if a != b), None)
        assert with_c == reference, (path, "event number", first)
        total = {k: total[k] + counts[k] for k in total}
    # the C shell decoded the corpus' events itself; Python took the FDEs and the odd frames
    assert total["c"] > 250_000 and total["python"] < total["c"] // 500, total


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("bench_fuzz_codec", REPO / "bench" / "fuzz_codec.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fuzz():
    return _fuzz_module()


@pytest.fixture(scope="module")
def seeds(fuzz):
    return fuzz.load_seeds(fuzz.CORPUS, random.Random(5), per_file=25, max_events=3000,
                           max_bytes=2_000_000)


def _outcome(frame, seed, **kwargs):
    ctx = DecodeContext(fde=seed.fde, table_maps=dict(seed.table_maps), file=seed.file,
                        source="src")
    try:
        ev = decode_event(frame, seed.pos, ctx, **kwargs)
    except BinlogError as err:
        return _error(err), ctx.table_maps
    rows = getattr(ev.body, "rows", None)
    if type(rows) is not tuple:
        return ("ok", ev), ctx.table_maps
    # row values by type and exact text (NaN == NaN), the event around them as it is
    return ("ok", dataclasses.replace(ev, body=dataclasses.replace(ev.body, rows=())),
            canon_rows(rows)), ctx.table_maps


CALLS = ({}, {"verify_checksum": False}, {"checksum": False}, {"checksum": True},
         {"file": "other-file", "source": "other-source"})


def test_mutated_frames_give_the_same_event_or_error(fuzz, seeds):
    rng = random.Random(11)
    counts = {"ok": 0, "error": 0}
    for n in range(12_000):
        seed = rng.choice(seeds)
        frame = fuzz.mutate(seed, rng, seeds)[0] if n % 8 else seed.frame
        kwargs = CALLS[n % len(CALLS)]
        if n % 7 == 0:
            frame = (bytearray, memoryview)[n % 2](frame)
        with counted_shell() as shell:
            got = _outcome(frame, seed, **kwargs)
        with python_shell():
            want = _outcome(frame, seed, **kwargs)
        assert got == want, (seed.file, seed.pos, bytes(frame).hex(), kwargs)
        counts[want[0][0]] += 1
        counts.setdefault("c", 0)
        counts["c"] += shell["c"]
    assert counts["ok"] > 3000 and counts["error"] > 3000 and counts["c"] > 3000, counts


def test_shell_leaves_what_it_does_not_take():
    """None (the Python shell's turn) for a frame it would reject or does not handle."""
    path = next(p for p in CORPUS_FILES if p.name == "mdb-bin.000010" and "big_trx" in p.parts)
    ctx = DecodeContext(file=path.name)
    for pos, frame in iter_frames(path.read_bytes(), file=path.name):
        if pos == 4:
            fde_frame = frame
        if frame[4] == 160:  # the first Annotate_rows: the C shell's to decode
            break
        decode_event(frame, pos, ctx)
    event = _frames.event(frame, 1, ctx, True, None, None)
    assert event is not None and event.file == path.name
    bad_crc = frame[:-1] + bytes((frame[-1] ^ 1,))
    assert _frames.event(bad_crc, 1, ctx, True, None, None) is None
    assert _frames.event(bad_crc, 1, ctx, False, None, None) is not None
    assert _frames.event(frame + b"\0", 1, ctx, True, None, None) is None
    assert _frames.event(frame[:18], 1, ctx, True, None, None) is None
    assert _frames.event(bytearray(frame), 1, ctx, True, None, None) is None
    assert _frames.event(frame, 1, DecodeContext(), True, None, None) is None  # no FDE yet
    assert _frames.event(fde_frame, 4, ctx, True, None, None) is None


@dataclasses.dataclass(frozen=True, slots=True)
class _Pair:
    a: int
    b: object = None


def test_fast_constructor_builds_the_dataclass_record():
    make = fast_constructor(_Pair)
    assert make.__name__ == "make__Pair"
    got = make(1, [2])
    assert got == _Pair(1, [2]) and type(got) is _Pair and hash(make(1, 3)) == hash(_Pair(1, 3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.a = 2
    with pytest.raises(TypeError, match="takes 2 positional arguments but 1 were given"):
        make(1)
    with pytest.raises(TypeError):
        make(1, b=2)
    header = fast_constructor(Header)(1, 2, 3, 4, 5, 6)
    assert header == Header(1, 2, 3, 4, 5, 6)


def test_fast_constructor_refuses_records_it_cannot_build():
    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        a: int

    with pytest.raises(TypeError, match="slotted dataclass"):
        fast_constructor(Unslotted)
    with pytest.raises(TypeError):
        _frames.constructor(_Pair, (1,))  # not a descriptor
