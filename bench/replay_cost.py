"""Pure-Python cost per change of the apply stage's replay (libs/apply/plan.replay_touched), no
Spark: the apply_steady workload (minimal images, the simulator's 5 tables) decoded by libs/,
one batch, every table replayed on an empty read (the touched-row lookups are still computed,
as with a mirror or a Delta read). Prints the best of --runs, in us per change.

    .venv/bin/python bench/replay_cost.py [--transactions 20000] [--runs 5] [--profile]

A/B: run it with PYTHONPATH=<a tree of the other commit> (the editable install imports this
checkout's libs otherwise).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_steady import decoded_batches  # noqa: E402
from bench.bench_support import load_average  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="print the top of a cProfile of one more run")
    args = ap.parse_args(argv)

    from libs.contracts.change import Change
    from libs.apply.plan import group_changes, replay_touched, with_ddl_truncates
    from libs.simulator.schema import replica_ddl, standard_tables
    from libs.targets import load_targets

    changes = [Change.of(c) for c in decoded_batches(args.transactions, 1)[0]]
    ddl = Path(tempfile.mkdtemp(prefix="replay-cost-")) / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), "sim"))
    catalog = load_targets(None, [str(ddl)])
    work = [(catalog.get(database, table), with_ddl_truncates(group))
            for (database, table), group in sorted(group_changes(changes).items())
            if catalog.get(database, table)]
    total = sum(len(group) for _, group in work)

    def run() -> float:
        started = time.process_time()
        for target, group in work:
            replay_touched(target, group, lambda lookups: [], mode="idempotent")
        return time.process_time() - started

    gc.disable()  # as the apply stage runs it (libs/runtime/gc_pause.py)
    run()  # warm: compiled decoders, cached target views
    best = min(run() for _ in range(args.runs))
    print(f"load {load_average()}; {total} changes over {len(work)} tables; replay CPU best of {args.runs}: "
          f"{best:.3f} s = {best / total * 1e6:.1f} us/change")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(run)
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
