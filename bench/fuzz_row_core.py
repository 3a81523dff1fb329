"""Differential fuzz of the C row-image core (libs/binlog/rows_core.py) against the Python
decoders: rows events of every corpus binlog, their row images mutated (byte flips, boundary
lengths, truncation, insertion, deletion; a small row limit now and then), each read by the core
and by rows._read_changes. Passes when every mutation gives the same rows on both sides or
fails on both (tests/unit/codec_fuzz/row_core_diff.py); prints the counts. bench/fuzz_codec.py
runs whole mutated frames through decode_event (and so through the core).

    .venv/bin/python bench/fuzz_row_core.py --mutations 200000
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import random
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.unit.codec_fuzz.row_core_diff import (collect_cases, core_outcome,  # noqa: E402
                                                 corpus_binlogs, mutate, python_outcome, same)


def _outcome(result) -> str:
    return "ok" if result[0] == "ok" else f"error {result[1]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutations", type=int, default=200_000)
    ap.add_argument("--per-file", type=int, default=60, help="rows events taken per corpus file")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = corpus_binlogs()
    t0 = time.perf_counter()
    cases = collect_cases(files, args.per_file, rng)
    print(f"{len(cases):,} rows events with core plans from {len(files)} corpus binlogs "
          f"({time.perf_counter() - t0:.1f} s)")
    outcomes: collections.Counter = collections.Counter()
    differences = []
    t0 = time.perf_counter()
    for n in range(args.mutations):
        case = rng.choice(cases)
        if n % 10 == 0:
            case = dataclasses.replace(case, max_rows=rng.choice((1, 2, 3)))
        body = mutate(case, rng)
        core, python = core_outcome(case, body), python_outcome(case, body)
        outcomes[f"core {_outcome(core)} / python {_outcome(python)}"] += 1
        if not same(core, python):
            differences.append((case.kind, body.hex(), core, python))
    elapsed = time.perf_counter() - t0
    print(f"{args.mutations:,} mutated rows events (seed {args.seed}) in {elapsed:.1f} s, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    for what, count in outcomes.most_common():
        print(f"  {what:<60}{count:>10,}")
    if differences:
        print(f"FAILED: {len(differences)} differences; first: {differences[0]}")
        return 1
    print("OK: the same rows on both sides, or both failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
