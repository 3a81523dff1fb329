"""The kill -9 tests at full breadth, round after round: what the suite samples, run whole.

The suite kills the job at 2 drawn points per run of each kill test (each cold restart costs
~30-40 s of CI's 45 minutes); over CI runs every point is hit. This runs them with every kill
point each round (CDC_EXACTLY_ONCE_KILLS=4, CDC_SIGKILL_DDL_KILLS=4) and a new seed each time,
and prints one line per test and round: passed or failed, its seconds and the seed that
repeats it. A failed round keeps its pytest output under --out.

    .venv/bin/python bench/kill_rounds.py --rounds 3
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = {  # test file -> (its kill-count variable, its seed variable)
    "tests/integration/exactly_once/test_sigkill_exactly_once.py":
        ("CDC_EXACTLY_ONCE_KILLS", "CDC_EXACTLY_ONCE_SEED"),
    "tests/integration/exactly_once/test_sigkill_across_ddl.py":
        ("CDC_SIGKILL_DDL_KILLS", "CDC_SIGKILL_DDL_SEED"),
}


def run_round(test: str, kills: int, out: Path) -> tuple[bool, float, str]:
    kills_var, seed_var = TESTS[test]
    env = {**os.environ, kills_var: str(kills)}
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", test],
                         cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    seed = re.search(rf"{seed_var}=(\d+)", run.stdout)
    if run.returncode != 0:
        out.write_text(run.stdout + run.stderr)
    return run.returncode == 0, seconds, seed.group(1) if seed else "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--kills", type=int, default=4, help="kills per run of each test (the suite: 2)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/kill_rounds"), help="failed rounds' output")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for n in range(1, args.rounds + 1):
        for test in TESTS:
            ok, seconds, seed = run_round(test, args.kills, args.out / f"round{n}-{Path(test).stem}.log")
            failed += not ok
            print(f"round {n}: {Path(test).stem}: {'passed' if ok else 'FAILED'} in {seconds:.0f} s, "
                  f"{args.kills} kills, {TESTS[test][1]}={seed}", flush=True)
    print(f"kill rounds: {args.rounds * len(TESTS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
