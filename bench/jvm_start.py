"""A cold job's start with and without the JVM's class archive (pipelines/jvm_archive.py).

One topic of simulated minimal-image transactions; then cold `cdc-replicate --available-now`
runs, each a new process and JVM on a new Delta root and checkpoint, alternating with the
archive and without it (moved aside for that run, put back after). Per run: seconds to the
query's start ("cdc-replicate: reading"), the first batch's own seconds as the job prints them,
and the process's wall. Medians per side; compare only within one run (the machine is shared).

    .venv/bin/python bench/jvm_start.py [--runs 3] [--transactions 300]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import checkout_env, commit_hash, load_average, private_broker  # noqa: E402
from libs.runtime.paths import JVM_CLASS_ARCHIVE  # noqa: E402

VENV_BIN = Path(sys.executable).parent
BATCH = re.compile(r"batch \d+: [\d,]+ records in ([\d.]+) s")


def cold_run(bootstrap: str, topic: str, work: Path) -> tuple[float, float, float]:
    """(seconds to the query's start, the batch's seconds, wall) of one cold available-now run."""
    began, started, batch = time.monotonic(), None, None
    proc = subprocess.Popen([str(VENV_BIN / "cdc-replicate"), "--bootstrap", bootstrap, "--topic", topic,
                             "--delta-root", str(work / "delta"), "--checkpoint", str(work / "ckpt"),
                             "--available-now"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=checkout_env())
    for line in proc.stdout:
        if "cdc-replicate: reading" in line:
            started = time.monotonic() - began
        if (m := BATCH.search(line)) is not None:
            batch = float(m.group(1))
    if proc.wait() != 0 or started is None or batch is None:
        raise SystemExit(f"jvm_start: cdc-replicate exited {proc.returncode} without its lines")
    return started, batch, time.monotonic() - began


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="cold runs per side")
    ap.add_argument("--transactions", type=int, default=300)
    args = ap.parse_args(argv)
    if not JVM_CLASS_ARCHIVE.is_file():
        raise SystemExit(f"jvm_start: no archive at {JVM_CLASS_ARCHIVE}: run `scripts/dev setup` first")
    aside = JVM_CLASS_ARCHIVE.with_name(JVM_CLASS_ARCHIVE.name + ".bench-off")
    print(f"jvm_start: commit {commit_hash()}, load average {load_average()}, archive "
          f"{JVM_CLASS_ARCHIVE.stat().st_size // 2**20} MiB")
    figures: dict[str, list[tuple[float, float, float]]] = {"archive": [], "none": []}
    with (tempfile.TemporaryDirectory(prefix="jvm-start-") as tmp,
          private_broker(Path(tmp) / "kafka") as bootstrap):
        subprocess.run([str(VENV_BIN / "cdc-simulate"), "--bootstrap", bootstrap, "--topic", "t",
                        "--source", "sim", "--transactions", str(args.transactions), "--seed", "7",
                        "--row-image", "minimal"],
                       check=True, capture_output=True)
        for run in range(args.runs):
            for side in ("archive", "none") if run % 2 == 0 else ("none", "archive"):
                if side == "none":
                    JVM_CLASS_ARCHIVE.rename(aside)
                try:
                    got = cold_run(bootstrap, "t", Path(tmp) / f"{side}{run}")
                finally:
                    if side == "none":
                        aside.rename(JVM_CLASS_ARCHIVE)
                figures[side].append(got)
                print(f"  run {run} {side:7s}: query up {got[0]:5.1f} s, batch {got[1]:5.1f} s, "
                      f"wall {got[2]:5.1f} s",
                      flush=True)
    for side, runs in figures.items():
        print(f"jvm_start: {side:7s} median query up {statistics.median(r[0] for r in runs):5.1f} s, "
              f"batch {statistics.median(r[1] for r in runs):5.1f} s, "
              f"wall {statistics.median(r[2] for r in runs):5.1f} s")
    print(f"jvm_start: load average after {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
