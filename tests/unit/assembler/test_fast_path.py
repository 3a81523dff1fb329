"""The assembler's fast path (Assembler._feed_plain) changes nothing: assemble_group with it on
and off gives the same records, state rows, spill chunks and errors, over every corpus file, over
simulated streams of both flavours (markers, ignorable events, dummies, statement format), and
over the same streams redelivered in part, with frames corrupted (body, type code, flags, length)
or lost, split into batches anywhere, with spills of a few frames, under both unknown-event
policies. The fast path must also really run: most frames of a clean stream never reach
_feed_one."""
from __future__ import annotations

import json
import random
import struct
import zlib

import pytest

from libs.stream.assembler import AssemblerConfig, InMemorySpillStore, UnknownEventPolicy
from libs.stream.assembler import assembler as assembler_module
from libs.binlog import BinlogError, iter_frames
from libs.binlog.constants import LOG_EVENT_IGNORABLE_F, EventType
from libs.binlog.errors import UnknownEventError
from libs.stages.assembly import InputFrame, StageConfig, assemble_group
from tests.unit.codec.corpus import MARIADB, MYSQL, binlog_files
from tests.unit.simulated_streams import STREAM_SHAPES, simulated_sink

CORPUS_FRAMES = 4000  # per file: the large files repeat a few event shapes


def _frames(path) -> list[InputFrame]:
    """A corpus file's frames as the shipper cuts them; a broken tail becomes one last frame."""
    data = path.read_bytes()
    out, end = [], 4
    try:
        for pos, raw in iter_frames(data, file=path.name):
            out.append(InputFrame(bytes(raw), path.name, pos, 0, len(out)))
            end = pos + len(raw)
            if len(out) == CORPUS_FRAMES:
                return out
    except BinlogError:
        if end < len(data):
            out.append(InputFrame(data[end:], path.name, end, 0, len(out)))
    return out


def _simulated(name: str, **options) -> list[InputFrame]:
    sink = simulated_sink(**{"transactions": 120, "seed": 7, "file_name": name, **options})
    return [InputFrame(f.data, name, f.pos, 0, i) for i, f in enumerate(sink.frames)]


def _run(frames: list[InputFrame], fast: bool, batch: int, config: StageConfig, monkeypatch):
    """(records, state row, spill chunks) of feeding `frames` in batches, or the error raised."""
    monkeypatch.setattr(assembler_module, "FAST_PATH", fast)
    store, state, records = InMemorySpillStore(), None, []
    try:
        for start in range(0, len(frames), batch):
            out, state = assemble_group("src", state, frames[start:start + batch], store, config, now=0)
            records += out
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return type(exc), str(exc), records
    return records, state, store.chunks


def _assert_same(frames, monkeypatch, batch: int = 10_000, config: StageConfig = StageConfig()):
    slow = _run(frames, False, batch, config, monkeypatch)
    fast = _run(frames, True, batch, config, monkeypatch)
    assert fast == slow
    return fast


SMALL = StageConfig(assembler=AssemblerConfig(unknown_event_policy=UnknownEventPolicy.QUARANTINE,
                                              chunk_max_events=3, chunk_max_bytes=700),
                    segment_max_frames=4)
CORPUS = binlog_files(MARIADB) + binlog_files(MYSQL)


@pytest.mark.parametrize("path", CORPUS, ids=[p.relative_to(p.parents[2]).as_posix() for p in CORPUS])
def test_corpus_file(path, monkeypatch):
    frames = _frames(path)
    _assert_same(frames, monkeypatch)
    _assert_same(frames, monkeypatch, batch=97, config=SMALL)


@pytest.mark.parametrize("options", STREAM_SHAPES, ids=[str(o) for o in STREAM_SHAPES])
def test_simulated_stream(options, monkeypatch):
    frames = _simulated("sim-bin.000001", **options)
    records, _, chunks = _assert_same(frames, monkeypatch, batch=61, config=SMALL)
    assert any(r["kind"] == "segment" for r in records) and chunks


def _mutated(frames: list[InputFrame], rng: random.Random, lose: bool) -> list[InputFrame]:
    """Redeliveries (a run of earlier frames again) and corrupted bytes, in the Kafka order the
    assembler would see them; `lose`: one frame of the last quarter lost (a gap: the batch fails)."""
    lost = rng.randrange(len(frames) * 3 // 4, len(frames)) if lose else None
    out = []
    for i, f in enumerate(frames):
        roll = rng.random()
        if i == lost:
            continue
        if roll < 0.03 and i > 3:  # the producer retried: a few frames again
            out.extend(frames[i - rng.randint(1, 3):i])
        elif roll < 0.06 and len(f.raw) > 23:
            raw = bytearray(f.raw)
            at = rng.choice([4, 9, 17, 18, rng.randrange(19, len(raw))])  # type, length, flags, body
            raw[at] ^= 1 << rng.randrange(8)
            f = InputFrame(bytes(raw), f.file, f.pos, f.kafka_partition, f.kafka_offset)
        out.append(f)
    return [InputFrame(f.raw, f.file, f.pos, 0, i) for i, f in enumerate(out)]


@pytest.mark.parametrize("seed", range(12))
def test_mutated_streams(seed, monkeypatch):
    """Two simulated files in a row (the second begins while a group may be open), mutated."""
    rng = random.Random(seed)
    options = STREAM_SHAPES[seed % len(STREAM_SHAPES)]
    frames = (_simulated("sim-bin.000001", **options)
              + _simulated("sim-bin.000002", **{**options, "seed": seed + 100}))
    mutated = _mutated(frames, rng, lose=seed % 4 == 3)
    assert mutated != frames
    for policy in UnknownEventPolicy:
        config = StageConfig(assembler=AssemblerConfig(unknown_event_policy=policy, chunk_max_events=5),
                             segment_max_frames=8)
        _assert_same(mutated, monkeypatch, batch=rng.randint(20, 200), config=config)


def test_the_fast_path_takes_most_frames_of_a_clean_stream(monkeypatch):
    frames = _simulated("sim-bin.000001", flavour="mariadb")
    slow_calls = []
    feed_one = assembler_module.Assembler._feed_one
    monkeypatch.setattr(assembler_module.Assembler, "_feed_one",
                        lambda self, item, now: slow_calls.append(item.pos) or feed_one(self, item, now))
    _run(frames, True, 10_000, StageConfig(), monkeypatch)
    assert 0 < len(slow_calls) < len(frames) / 20  # the file's first frames, FDE and the like
    slow_calls.clear()
    _run(frames, False, 10_000, StageConfig(), monkeypatch)
    assert len(slow_calls) == len(frames)


def _with_ignorable_flag(raw: bytes) -> bytes:
    """The frame with LOG_EVENT_IGNORABLE_F set in its header flags and its CRC32 made right."""
    flagged = bytearray(raw[:-4])
    flagged[17] |= LOG_EVENT_IGNORABLE_F
    return bytes(flagged) + struct.pack("<I", zlib.crc32(flagged))


@pytest.mark.parametrize("ignorable", [False, True])
def test_a_mariadb_event_inside_a_mysql_transaction(ignorable, monkeypatch):
    """The codec decodes MariaDB's Annotate_rows in any stream; a MySQL stream's assembler must
    not take it as known (WL#4033 by flavour), fast path or not: without LOG_EVENT_IGNORABLE_F
    it stops the stream or is quarantined, with it it is skipped and counted."""
    mysql = _simulated("sim-bin.000001", flavour="mysql")
    annotate = next(f.raw for f in _simulated("sim-bin.000001", flavour="mariadb")
                    if f.raw[4] == EventType.ANNOTATE_ROWS)
    if ignorable:
        annotate = _with_ignorable_flag(annotate)
    at = next(i for i, f in enumerate(mysql) if f.raw[4] == EventType.TABLE_MAP)
    shifted = [InputFrame(f.raw, f.file, f.pos + len(annotate), 0, 0) for f in mysql[at:]]
    frames = [*mysql[:at], InputFrame(annotate, "sim-bin.000001", mysql[at].pos, 0, 0), *shifted]
    frames = [InputFrame(f.raw, f.file, f.pos, 0, i) for i, f in enumerate(frames)]
    if ignorable:
        _, state, _ = _assert_same(frames, monkeypatch)
        assert json.loads(state["counters"])["ignorable_skipped"] == 1
        return
    failed = _assert_same(frames, monkeypatch)
    assert failed[0] is UnknownEventError
    records, _, _ = _assert_same(frames, monkeypatch, config=SMALL)
    assert (mysql[at].pos, "unknown_event") in {(r["binlog_pos"], r["q_kind"])
                                                for r in records if r["kind"] == "quarantine"}


def test_a_format_description_inside_the_file(monkeypatch):
    """A relay log holds its master's Format_description after its own, at the next position of
    the same file: _feed_one takes it as the stream's format (the state keeps its bytes), which
    the fast path must leave to it even though the frame is in sequence."""
    frames = _simulated("sim-bin.000001", flavour="mariadb")
    master_fde = next(f.raw for f in _frames(MARIADB / "row_full" / "mdb-bin.000001")
                      if f.raw[4] == EventType.FORMAT_DESCRIPTION)
    assert master_fde != next(f.raw for f in frames if f.raw[4] == EventType.FORMAT_DESCRIPTION)
    at = next(i for i, f in enumerate(frames) if f.raw[4] == EventType.XID) + 1  # after a whole group
    shifted = [InputFrame(f.raw, f.file, f.pos + len(master_fde), 0, 0) for f in frames[at:]]
    frames = [*frames[:at], InputFrame(master_fde, "sim-bin.000001", frames[at].pos, 0, 0), *shifted]
    frames = [InputFrame(f.raw, f.file, f.pos, 0, i) for i, f in enumerate(frames)]
    records, state, _ = _assert_same(frames, monkeypatch)
    assert any(r["kind"] == "segment" for r in records)
    assert state["fde"] == master_fde
