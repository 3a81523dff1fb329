"""Fuzz the binlog codec at scale: mutated and truncated frames drawn from
the corpus go through libs.binlog.decode_event, each with the decode context its file had just
before that frame (Format_description + Table_maps). The only exceptions allowed are
libs.binlog.errors.BinlogError subclasses; anything else is a codec bug. No hang (a per-frame
time limit via SIGALRM) and no memory blow-up (peak RSS reported, and checked against a limit).

    .venv/bin/python bench/fuzz_codec.py                        # 1,000,000 frames, seed 1
    .venv/bin/python bench/fuzz_codec.py --frames 20000 --quick # what the CI test runs

Mutations (one or two per frame): bit flips, byte changes (random and boundary values),
truncation, length-field corruption (1-8 byte little-endian fields and packed-integer prefixes
set to boundary values), splices (head of one corpus frame + tail of another), byte
insertion/deletion, and type-code swaps. Most mutated frames get their event_size and CRC32
fixed up afterwards so the body decoders see them (otherwise framing/CRC checks stop them early);
the rest keep the stale header/CRC to exercise the framing errors. --compare-python decodes each
frame a second time in Python only, without the C frame shell (libs/binlog/_frames.c) and the C
row-image core (libs/binlog/rows_core.py): the same event, or the same error kind and message, or
the frame is a failure.

Prints counts per outcome (ok / error kind), total frames, elapsed time, slowest frame, peak RSS;
exits 1 when a non-BinlogError exception, a hang or the memory limit was hit (each failure is
written to --failures as hex frame + context, for a regression test).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import random
import resource
import signal
import struct
import sys
import time
import traceback
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from libs.binlog import DecodeContext, decode_event  # noqa: E402
from libs.binlog.errors import BinlogError  # noqa: E402
from libs.binlog.framing import iter_frames  # noqa: E402
from libs.runtime.paths import CORPUS_DIR  # noqa: E402

CORPUS = Path(os.environ.get("BINLOG_CORPUS", str(CORPUS_DIR)))
MAGIC = b"\xfebin"
FDE, TABLE_MAP = 15, 19
BOUNDARY_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF)
BOUNDARY_INTS = (0, 1, 2, 7, 8, 250, 251, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0xFFFFFF,
                 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, (1 << 64) - 1)
TYPE_CODES = (2, 4, 5, 13, 14, 15, 16, 19, 23, 24, 25, 29, 30, 31, 32, 33, 34, 35, 36, 39, 40,
              160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171)


class FrameTimeout(Exception):
    pass


@dataclasses.dataclass
class Seed:
    file: str
    pos: int
    frame: bytes
    fde: object
    table_maps: dict
    has_crc: bool


def binlog_files(corpus: Path) -> list[Path]:
    out = []
    for path in sorted(corpus.rglob("*")):
        if path.is_file() and not path.name.endswith((".gz", ".json", ".tsv", ".txt", ".md")):
            with open(path, "rb") as fh:
                if fh.read(4) == MAGIC:
                    out.append(path)
    return out


def load_seeds(corpus: Path, rng: random.Random, per_file: int = 400,
               max_events: int | None = None, max_bytes: int | None = None) -> list[Seed]:
    """Up to `per_file` frames per corpus binlog (the first 3 of every type code, the rest a
    reservoir sample), each with a snapshot of the context just before it."""
    seeds: list[Seed] = []
    for path in binlog_files(corpus):
        data = path.read_bytes()
        if max_bytes is not None:
            data = data[:max_bytes]
        ctx = DecodeContext(file=path.name)
        firsts: dict[int, int] = collections.Counter()
        fixed: list[Seed] = []
        reservoir: list[Seed] = []
        seen = 0
        try:
            for pos, frame in iter_frames(data, 4, file=path.name):
                if max_events is not None and seen >= max_events:
                    break
                seen += 1
                type_code = frame[4]
                snap = None
                if firsts[type_code] < 3:
                    firsts[type_code] += 1
                    snap = fixed
                elif len(reservoir) < per_file:
                    snap = reservoir
                else:
                    j = rng.randrange(seen)
                    if j < per_file:
                        reservoir[j] = _seed(path, pos, frame, ctx)
                if snap is not None:
                    snap.append(_seed(path, pos, frame, ctx))
                try:
                    decode_event(frame, pos, ctx)
                except BinlogError:
                    pass
        except BinlogError:
            pass  # a broken corpus file: keep the frames before the break
        seeds.extend(fixed)
        seeds.extend(reservoir[:max(0, per_file - len(fixed))])
    return seeds


def _seed(path: Path, pos: int, frame: bytes, ctx: DecodeContext) -> Seed:
    return Seed(path.name, pos, bytes(frame), ctx.fde, dict(ctx.table_maps), ctx.has_checksum)


# ---- mutations --------------------------------------------------------------------------------

def _bit_flips(b: bytearray, rng: random.Random, seeds) -> bytearray:
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return b


def _byte_changes(b: bytearray, rng: random.Random, seeds) -> bytearray:
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(b))
        b[i] = rng.choice(BOUNDARY_BYTES) if rng.random() < 0.5 else rng.randrange(256)
    return b


def _truncate(b: bytearray, rng: random.Random, seeds) -> bytearray:
    if rng.random() < 0.3:
        return b[:rng.randrange(len(b))]  # anywhere, header included
    return b[:rng.randrange(19, len(b))] if len(b) > 19 else b[:rng.randrange(len(b))]


def _length_field(b: bytearray, rng: random.Random, seeds) -> bytearray:
    if len(b) <= 20:
        return _byte_changes(b, rng, seeds)
    i = rng.randrange(19, len(b))
    if rng.random() < 0.3:  # a packed-integer prefix
        b[i] = rng.choice((0xFB, 0xFC, 0xFD, 0xFE, 0xFF, 0xFA))
        return b
    width = rng.choice((1, 2, 3, 4, 8))
    value = rng.choice(BOUNDARY_INTS + (len(b), len(b) - 19, len(b) + 1, len(b) - i))
    raw = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    b[i:i + width] = raw[:max(0, len(b) - i)]
    return b


def _splice(b: bytearray, rng: random.Random, seeds) -> bytearray:
    other = rng.choice(seeds).frame
    cut_a = rng.randrange(19, len(b) + 1) if len(b) > 19 else len(b)
    cut_b = rng.randrange(19, len(other) + 1) if len(other) > 19 else len(other)
    return b[:cut_a] + other[cut_b:]


def _insert_delete(b: bytearray, rng: random.Random, seeds) -> bytearray:
    i = rng.randrange(19, len(b) + 1) if len(b) > 19 else len(b)
    if rng.random() < 0.5 and i < len(b):
        del b[i:i + rng.randint(1, 8)]
    else:
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return b


def _type_swap(b: bytearray, rng: random.Random, seeds) -> bytearray:
    if len(b) < 5:
        return b
    b[4] = rng.choice(TYPE_CODES) if rng.random() < 0.9 else rng.randrange(256)
    return b


MUTATORS = (_bit_flips, _byte_changes, _truncate, _length_field, _splice, _insert_delete,
            _type_swap)
WEIGHTS = (3, 3, 2, 4, 2, 2, 1)


def mutate(seed: Seed, rng: random.Random, seeds) -> tuple[bytes, str]:
    b = bytearray(seed.frame)
    names = []
    for _ in range(1 if rng.random() < 0.7 else 2):
        if not b:
            break
        fn = rng.choices(MUTATORS, WEIGHTS)[0]
        names.append(fn.__name__.lstrip("_"))
        b = fn(b, rng, seeds)
    if len(b) >= 19 and rng.random() < 0.75:
        # fix event_size (and the CRC) so the body decoder sees the mutation
        struct.pack_into("<I", b, 9, len(b))
        if seed.has_crc and len(b) >= 23 and b[4] != FDE:
            struct.pack_into("<I", b, len(b) - 4, zlib.crc32(memoryview(b)[:-4]))
        names.append("fixed")
    return bytes(b), "+".join(names)


# ---- the run ----------------------------------------------------------------------------------

def _alarm(signum, frame):
    raise FrameTimeout()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mb() -> float:
    """Resident memory now (Linux /proc/self/statm). The run's limit is on what it adds to this,
    not on the process' peak: inside a test process the peak is every earlier test's too."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _outcome(ev):
    """An event, its row values by type and exact text (floats by their bits: NaN == NaN)."""
    from tests.unit.codec_fuzz.row_core_diff import canon_rows
    rows = getattr(ev.body, "rows", None)
    if type(rows) is not tuple:
        return "ok", ev
    return "ok", dataclasses.replace(ev, body=dataclasses.replace(ev.body, rows=())), canon_rows(rows)


def python_only_outcome(frame: bytes, s: Seed):
    """The frame decoded in Python only: the Python frame shell (framing.python_decode_event)
    and the Python row-image decoders (rows.py without its C core)."""
    import libs.binlog.framing as framing_mod
    import libs.binlog.rows as rows_mod
    ctx = DecodeContext(fde=s.fde, table_maps=dict(s.table_maps), file=s.file)
    real = rows_mod._changes
    rows_mod._changes = rows_mod._read_changes
    try:
        return _outcome(framing_mod.python_decode_event(frame, s.pos, ctx))
    except BinlogError as err:
        return "error", err.kind, err.message
    finally:
        rows_mod._changes = real


def run(frames: int, seed: int = 1, *, quick: bool = False, per_frame_limit: float = 2.0,
        rss_limit_mb: float = 2048.0, failures_path: Path | None = None,
        progress: bool = False, corpus: Path = CORPUS, compare_python: bool = False) -> dict:
    rng = random.Random(seed)
    t_load = time.perf_counter()
    if quick:
        seeds = load_seeds(corpus, rng, per_file=60, max_events=3000, max_bytes=2_000_000)
    else:
        seeds = load_seeds(corpus, rng)
    load_s = time.perf_counter() - t_load
    outcomes: collections.Counter = collections.Counter()
    failures: list[dict] = []
    slowest = (0.0, None, None, None)
    old = signal.signal(signal.SIGALRM, _alarm)
    rss_at_start = rss_mb()
    t0 = time.perf_counter()
    try:
        for n in range(frames):
            s = rng.choice(seeds)
            frame, how = mutate(s, rng, seeds)
            ctx = DecodeContext(fde=s.fde, table_maps=dict(s.table_maps), file=s.file)
            t = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, per_frame_limit)
            got = None
            try:
                ev = decode_event(frame, s.pos, ctx)
                outcomes["ok"] += 1
                got = _outcome(ev) if compare_python else None
            except BinlogError as err:
                outcomes[err.kind] += 1
                got = ("error", err.kind, err.message)
            except FrameTimeout:
                outcomes["HANG"] += 1
                failures.append(_failure("hang", None, s, frame, how))
            except Exception as exc:  # noqa: BLE001 - this is what the fuzzer looks for
                outcomes["BUG " + type(exc).__name__] += 1
                failures.append(_failure(type(exc).__name__, exc, s, frame, how))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            dt = time.perf_counter() - t
            if compare_python and got is not None and python_only_outcome(frame, s) != got:
                outcomes["DIFF python-only"] += 1
                failures.append(_failure("differs in Python only", None, s, frame, how))
            if dt > slowest[0]:
                slowest = (dt, f"{s.file}@{s.pos} type {frame[4] if len(frame) > 4 else None} "
                               f"{len(frame)} bytes ({how})", s, frame)
            if (n & 0xFFF) == 0 and rss_mb() - rss_at_start > rss_limit_mb:
                outcomes["RSS_LIMIT"] += 1
                break
            if progress and n and n % 100_000 == 0:
                el = time.perf_counter() - t0
                print(f"  {n:,} frames, {el:.0f} s, {n / el:,.0f}/s, peak RSS {peak_rss_mb():.0f} MB, "
                      f"bugs {len(failures)}", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGALRM, old)
    elapsed = time.perf_counter() - t0
    retimed = _retime(slowest[2], slowest[3]) if slowest[2] is not None else None
    if failures_path is not None and failures:
        failures_path.write_text(json.dumps(failures[:200], indent=1))
    return {"frames": sum(v for k, v in outcomes.items() if k != "RSS_LIMIT"),
            "seeds": len(seeds), "seed_files": len({s.file for s in seeds}),
            "load_seconds": load_s, "elapsed_seconds": elapsed,
            "frames_per_second": frames / elapsed if elapsed else 0.0,
            "outcomes": dict(outcomes.most_common()), "failures": failures,
            "slowest_frame": {"seconds": slowest[0], "what": slowest[1],
                              "retimed_seconds": retimed},
            "peak_rss_mb": peak_rss_mb(), "seed": seed}


def _retime(s: Seed, frame: bytes) -> float:
    """Best of 3 decodes of the slowest frame in isolation (a slow path, or a scheduling stall of
    a busy machine?)."""
    best = float("inf")
    for _ in range(3):
        ctx = DecodeContext(fde=s.fde, table_maps=dict(s.table_maps), file=s.file)
        t = time.perf_counter()
        try:
            decode_event(frame, s.pos, ctx)
        except BinlogError:
            pass
        best = min(best, time.perf_counter() - t)
    return best


def _failure(kind: str, exc, s: Seed, frame: bytes, how: str) -> dict:
    return {"kind": kind, "message": str(exc) if exc else "", "file": s.file, "pos": s.pos,
            "mutation": how, "frame_hex": frame.hex(), "seed_frame_hex": s.frame.hex(),
            "table_map_ids": sorted(s.table_maps),
            "traceback": "".join(traceback.format_exception(exc)) if exc else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="small seed set (first 3000 events per file)")
    ap.add_argument("--per-frame-limit", type=float, default=2.0, help="seconds (hang)")
    ap.add_argument("--rss-limit-mb", type=float, default=2048.0,
                    help="stop when resident memory has grown this much since the run began")
    ap.add_argument("--failures", type=Path, default=REPO / ".cache" / "fuzz_failures.json")
    ap.add_argument("--compare-python", action="store_true",
                    help="also decode each frame in Python only (no C frame shell, no C row-image "
                         "core): same event or error")
    args = ap.parse_args()
    args.failures.parent.mkdir(parents=True, exist_ok=True)
    r = run(args.frames, args.seed, quick=args.quick, per_frame_limit=args.per_frame_limit,
            rss_limit_mb=args.rss_limit_mb, failures_path=args.failures, progress=True,
            compare_python=args.compare_python)
    print(f"codec fuzz: {r['frames']:,} frames (seed {r['seed']}) from {r['seeds']:,} corpus frames "
          f"of {r['seed_files']} files (loaded in {r['load_seconds']:.1f} s)")
    print(f"elapsed {r['elapsed_seconds']:.1f} s ({r['frames_per_second']:,.0f} frames/s), "
          f"slowest frame {r['slowest_frame']['seconds'] * 1000:.1f} ms "
          f"({r['slowest_frame']['what']}; re-timed alone: "
          f"{(r['slowest_frame']['retimed_seconds'] or 0) * 1000:.1f} ms), "
          f"peak RSS {r['peak_rss_mb']:.0f} MB")
    for kind, count in r["outcomes"].items():
        print(f"  {kind:<24}{count:>10,}")
    bad = [k for k in r["outcomes"] if k.startswith(("BUG", "HANG", "RSS", "DIFF"))]
    if bad:
        print(f"FAILED: {', '.join(bad)}; details in {args.failures}")
        seen = set()
        for f in r["failures"]:
            key = f["traceback"].strip().splitlines()[-2:] if f["traceback"] else f["kind"]
            if str(key) in seen:
                continue
            seen.add(str(key))
            print(f"--- {f['kind']} {f['file']}@{f['pos']} ({f['mutation']}): {f['message']}")
            print(f["traceback"][-1500:])
        return 1
    print("OK: only BinlogError subclasses raised"
          + (", the same event or error in Python only" if args.compare_python else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
