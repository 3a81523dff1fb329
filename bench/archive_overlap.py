"""The first part of `scripts/dev test` on a fresh machine: the JVM class archive's training run
(pipelines/jvm_archive.py) and tests/unit (`pytest -n 2`), one after the other or side by side
(what scripts/dev does), alternated; prints each run's seconds and the medians.

    .venv/bin/python bench/archive_overlap.py [--rounds N]

Each run trains a scratch archive (never .cache/jvm's)."""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNIT = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "tests/unit"]


def _archive(work: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipelines.jvm_archive", str(work / "classes.jsa")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_run(side_by_side: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="archive-overlap-") as tmp:
        began = time.monotonic()
        archive = _archive(Path(tmp))
        if not side_by_side and archive.wait() != 0:
            raise RuntimeError("the training run failed")
        unit = subprocess.run(UNIT, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if archive.wait() != 0 or unit.returncode != 0:
            raise RuntimeError(f"training run exit {archive.returncode}, tests/unit exit {unit.returncode}")
        return time.monotonic() - began


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    rounds = ap.parse_args().rounds
    seconds: dict[str, list[float]] = {"one after the other": [], "side by side": []}
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for _ in range(rounds):
        for name in seconds:
            seconds[name].append(one_run(side_by_side=name == "side by side"))
            print(f"{name}: {seconds[name][-1]:.1f} s", flush=True)
    for name, values in seconds.items():
        print(f"{name}: median {statistics.median(values):.1f} s "
              f"({min(values):.1f}-{max(values):.1f}), {rounds} runs")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
