"""Fuzz the whole decode chain: mutated corpus frames (bench/fuzz_codec.py's mutators, checksums
fixed up so the body decoders see the mutation) go through

    decode_event -> boundary parser (libs.stream.boundary.advance, outside and inside a group)
    -> change records (libs.stream.assembler.iter_change_records, the frame's Table_maps in force)
    -> dump renderers (text lines as the latin-1 bytes binlog-dump writes; JSON as strict JSON)
    -> encode_event (the decoded record back to bytes)

and each input must return or raise a typed error (BinlogError family); anything else is a bug.
Inputs run in subprocess workers, each input with a CPU-time alarm (a hang: over
--per-input-limit s) and its memory measured: how much it raised the worker's peak RSS
(ru_maxrss, the high-water mark, so C allocations count) and, with --tracemalloc, its Python
heap peak above what it started with.

    .venv/bin/python bench/fuzz_chain.py --inputs 1000000 --workers 2   # the bench/README run
    .venv/bin/python bench/fuzz_chain.py --inputs 3000 --quick           # a few seconds

Prints inputs tried, outcomes per class, untyped exceptions, hangs, and the largest per-input
memory growth; exits 1 when any input raised an untyped exception, hung or raised peak memory by
more than --memory-limit-mb (details, with the input's hex, in --failures).
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import random
import resource
import signal
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.fuzz_codec import CORPUS, load_seeds, mutate  # noqa: E402
from libs.stream import boundary as bp  # noqa: E402
from libs.stream.assembler import Transaction, iter_change_records  # noqa: E402
from libs.stream.assembler.model import Frame  # noqa: E402
from libs.binlog import BinlogError, DecodeContext, Event, Header, decode_event, encode_event  # noqa: E402
from libs.dump.json_format import event_json  # noqa: E402
from libs.dump.text_format import event_lines  # noqa: E402
from libs.dump.walk import DumpItem  # noqa: E402
from libs.binlog.shapes import is_rows  # noqa: E402

MB = 1 << 20
IN_GROUP = bp.ParserContext(bp.B.INSIDE, bp.Opening.EXPLICIT)


class InputTimeout(Exception):
    pass


def chain(frame: bytes, seed) -> str:
    """The whole chain for one input; returns "ok" or raises."""
    ctx = DecodeContext(fde=seed.fde, table_maps=dict(seed.table_maps), file=seed.file,
                        source="fuzz")
    event = decode_event(frame, seed.pos, ctx)
    step = bp.advance(bp.INITIAL, event, ctx.flavour)
    bp.advance(IN_GROUP, event, ctx.flavour)
    maps = [Frame(seed.file, 0, b"", None, None, Event(Header(0, 19, 1, 0, 0, 0), 0, tm))
            for tm in ctx.table_maps.values()]
    trx = Transaction("fuzz", "t", None, None, 0, 1, seed.file, seed.pos + len(frame), None,
                      None, len(maps) + 1, maps + [Frame(seed.file, seed.pos, frame, None, None, event)])
    for _ in iter_change_records(trx):
        pass
    table_map = ctx.table_maps.get(event.body.table_id) if is_rows(event) else None
    item = DumpItem(event, frame, event.checksum_ok is not None, step.boundary, "parser",
                    step.warning, table_map)
    for line in event_lines(item):
        line.encode("latin-1")  # what pipelines/dump.py writes
    json.dumps(event_json(item), ensure_ascii=True, allow_nan=False)
    encode_event(event, ctx)
    return "ok"


def _alarm(signum, frame):
    raise InputTimeout()


def _failure(kind: str, exc, seed, frame: bytes, how: str) -> dict:
    return {"kind": kind, "message": str(exc) if exc else "", "file": seed.file, "pos": seed.pos,
            "mutation": how, "frame_hex": frame.hex(),
            "traceback": "".join(traceback.format_exception(exc)) if exc else ""}


def run_inputs(n: int, rng: random.Random, seeds, *, limit_s: float, memory_limit_mb: float,
               trace: bool) -> dict:
    """Run n inputs in this process: outcomes, failures, per-input memory growth."""
    import tracemalloc

    outcomes: collections.Counter = collections.Counter()
    failures, worst_rss, worst_heap, slowest = [], 0.0, 0.0, 0.0
    old = signal.signal(signal.SIGPROF, _alarm)
    if trace:
        tracemalloc.start()
    try:
        for _ in range(n):
            seed = rng.choice(seeds)
            frame, how = mutate(seed, rng, seeds)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if trace:
                heap_before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
            t = time.perf_counter()
            signal.setitimer(signal.ITIMER_PROF, limit_s)  # CPU time: a busy machine is no hang
            try:
                outcomes[chain(frame, seed)] += 1
            except BinlogError as err:
                outcomes[err.kind] += 1
            except InputTimeout:
                outcomes["HANG"] += 1
                failures.append(_failure("hang", None, seed, frame, how))
            except Exception as exc:  # noqa: BLE001 - what the fuzzer looks for
                outcomes["UNTYPED " + type(exc).__name__] += 1
                failures.append(_failure(type(exc).__name__, exc, seed, frame, how))
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            slowest = max(slowest, time.perf_counter() - t)
            grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
            heap = (tracemalloc.get_traced_memory()[1] - heap_before) / MB if trace else 0.0
            worst_rss, worst_heap = max(worst_rss, grew), max(worst_heap, heap)
            if max(grew, heap) > memory_limit_mb:
                outcomes["MEMORY"] += 1
                failures.append(_failure(f"memory +{max(grew, heap):.0f} MB", None, seed, frame, how))
    finally:
        signal.signal(signal.SIGPROF, old)
        if trace:
            tracemalloc.stop()
    return {"outcomes": outcomes, "failures": failures[:50], "worst_rss_mb": worst_rss,
            "worst_heap_mb": worst_heap, "slowest_s": slowest}


def _worker(args) -> dict:
    index, n, seed, quick, limit_s, memory_limit_mb, trace = args
    rng = random.Random(seed * 1_000_003 + index)
    seeds = _seeds(quick)
    t = time.perf_counter()
    out = run_inputs(n, rng, seeds, limit_s=limit_s, memory_limit_mb=memory_limit_mb, trace=trace)
    out["seconds"] = time.perf_counter() - t
    out["start_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _seeds(quick: bool):
    rng = random.Random(1)
    if quick:
        return load_seeds(CORPUS, rng, per_file=60, max_events=3000, max_bytes=2_000_000)
    return load_seeds(CORPUS, rng)


def run(inputs: int, *, seed: int = 1, workers: int = 2, chunk: int = 50_000, quick: bool = False,
        limit_s: float = 2.0, memory_limit_mb: float = 64.0, trace: bool = False) -> dict:
    """`inputs` inputs in chunks, each chunk in a fresh worker process (so a worker's RSS peak
    starts low and each input's growth shows), `workers` at a time."""
    jobs = [(i, min(chunk, inputs - start), seed, quick, limit_s, memory_limit_mb, trace)
            for i, start in enumerate(range(0, inputs, chunk))]
    total: collections.Counter = collections.Counter()
    result = {"failures": [], "worst_rss_mb": 0.0, "worst_heap_mb": 0.0, "slowest_s": 0.0}
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers, maxtasksperchild=1) as pool:
        for done, out in enumerate(pool.imap_unordered(_worker, jobs), 1):
            total.update(out["outcomes"])
            result["failures"] += out["failures"]
            for key in ("worst_rss_mb", "worst_heap_mb", "slowest_s"):
                result[key] = max(result[key], out[key])
            print(f"  chunk {done}/{len(jobs)}: {sum(total.values()):,} inputs, "
                  f"{time.perf_counter() - t0:.0f} s, untyped/hangs/memory so far "
                  f"{sum(v for k, v in total.items() if k.startswith(('UNTYPED', 'HANG', 'MEMORY')))}",
                  file=sys.stderr, flush=True)
    result.update(inputs=sum(v for k, v in total.items() if k != "MEMORY"),
                  elapsed_s=time.perf_counter() - t0, outcomes=dict(total.most_common()))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=50_000, help="inputs per worker process")
    ap.add_argument("--quick", action="store_true", help="small seed set (first 3000 events per file)")
    ap.add_argument("--per-input-limit", type=float, default=2.0, help="CPU seconds (a hang)")
    ap.add_argument("--memory-limit-mb", type=float, default=64.0)
    ap.add_argument("--tracemalloc", action="store_true", help="also measure each input's Python heap peak")
    ap.add_argument("--failures", type=Path, default=REPO / ".cache" / "fuzz_chain_failures.json")
    a = ap.parse_args()
    r = run(a.inputs, seed=a.seed, workers=a.workers, chunk=a.chunk, quick=a.quick,
            limit_s=a.per_input_limit, memory_limit_mb=a.memory_limit_mb, trace=a.tracemalloc)
    bad = {k: v for k, v in r["outcomes"].items() if k.startswith(("UNTYPED", "HANG", "MEMORY"))}
    print(f"chain fuzz: {r['inputs']:,} inputs (seed {a.seed}) in {r['elapsed_s']:.0f} s "
          f"({r['inputs'] / r['elapsed_s']:,.0f}/s, {a.workers} workers)")
    for kind, count in r["outcomes"].items():
        print(f"  {kind:<28}{count:>10,}")
    print(f"untyped exceptions: {sum(v for k, v in bad.items() if k.startswith('UNTYPED'))}; "
          f"hangs over {a.per_input_limit} s CPU: {bad.get('HANG', 0)}; inputs raising peak memory by "
          f"more than {a.memory_limit_mb:.0f} MB: {bad.get('MEMORY', 0)}")
    print(f"largest per-input growth: peak RSS +{r['worst_rss_mb']:.1f} MB"
          + (f", Python heap peak +{r['worst_heap_mb']:.1f} MB" if a.tracemalloc else "")
          + f"; slowest input {r['slowest_s'] * 1000:.0f} ms wall")
    if bad:
        a.failures.parent.mkdir(parents=True, exist_ok=True)
        a.failures.write_text(json.dumps(r["failures"][:200], indent=1))
        for f in r["failures"][:5]:
            print(f"--- {f['kind']} {f['file']}@{f['pos']} ({f['mutation']}): {f['message']}\n"
                  f"{f['traceback'][-1200:]}")
        return 1
    print("OK: only BinlogError subclasses raised")
    return 0


if __name__ == "__main__":
    sys.exit(main())
