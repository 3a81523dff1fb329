"""Driver-side cost per change of the apply stage's pure-Python steps, no Spark session
(bench/README.md "Session 5"): turning the collected Arrow batch into dicts (pa.Table.to_pylist
vs libs.contracts.arrow_rows.rows) or into the apply stage's Changes (libs.contracts.change.changes_of, what
DeltaApplier does since issue #37 item 6), and the replay of a steady-state batch on warm target mirrors with
Python's garbage collector running vs paused (libs.runtime.gc_pause, as DeltaApplier runs it), and the
batch's change-log table: from the entries' dicts (Table.from_pylist of ChangeLogEntry.to_dict,
session 5's way) vs copied from the collected Arrow table (libs.apply.change_log, session 6).

    .venv/bin/python bench/collect_cost.py [--transactions 60000] [--rounds 2]

The apply_steady workload (minimal images, seed 3), cut into two batches: the first fills the
mirrors, the second (~42,700 changes for 60,000 transactions) is measured, alternating.
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import load_average  # noqa: E402


def _micros(changes: list[dict]) -> list:
    """The replay's Changes, commit_ts as epoch micros, as DeltaApplier._collect gives it."""
    from libs.contracts.change import Change
    return [Change.of(c if isinstance(c["commit_ts"], int)
                      else {**c, "commit_ts": int(c["commit_ts"].timestamp() * 1_000_000)}) for c in changes]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=60000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.pandas.types import to_arrow_schema

    from bench.apply_steady import decoded_batches
    from libs.contracts.change import changes_of
    from libs.apply.plan import group_changes, replay_touched
    from libs.contracts.arrow_rows import rows as arrow_rows
    from libs.apply.change_log import change_log_table
    from libs.runtime.gc_pause import gc_paused
    from libs.replay import ROW_ID_COLUMN
    from libs.simulator.schema import replica_ddl, standard_tables
    from libs.apply.target_mirror import TargetMirror
    from libs.targets import load_targets
    from pipelines.apply.tables import change_log_schema
    from pipelines.job.schemas import CHANGE_RECORD, spark_schema

    first, second = decoded_batches(args.transactions, 2)
    table = pa.Table.from_pylist(second, schema=to_arrow_schema(spark_schema(CHANGE_RECORD)))
    n = table.num_rows
    print(f"load {load_average()}; measured batch: {n} changes")
    for _ in range(args.rounds):
        for name, convert in (("pa.Table.to_pylist", pa.Table.to_pylist),
                              ("libs.contracts.arrow_rows.rows", arrow_rows),
                              ("change.changes_of", changes_of)):
            t0 = time.perf_counter()
            out = convert(table)
            seconds = time.perf_counter() - t0
            print(f"  {name:22s} {seconds:5.2f} s = {seconds / n * 1e6:5.1f} us/change")
            del out

    ddl = Path(tempfile.mkdtemp(prefix="collect-cost-")) / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), "sim"))
    catalog = load_targets(None, [str(ddl)])
    mirrors = {}
    for (database, name), group in group_changes(_micros(first)).items():
        target = catalog.get(database, name)
        if target is None:  # database-level DDL: no table to replay on
            continue
        result = replay_touched(target, group, None, mode="strict")
        columns = list(target.column_names) + [ROW_ID_COLUMN]
        rows = [{c: w.to_record().get(c) for c in columns} for w in result.upserts]
        mirrors[(database, name)] = TargetMirror(rows, 1, 10**7)
    measured = _micros(second)
    row_of = {id(change): row for row, change in enumerate(measured)}
    groups = [(catalog.get(*key), group, mirrors[key]) for key, group in group_changes(measured).items()
              if key in mirrors]
    log_rows = [row_of[id(change)] for _, group, _ in groups for change in group]
    for _ in range(args.rounds):
        for label in ("gc running", "gc paused"):
            t0 = time.perf_counter()
            if label == "gc paused":
                with gc_paused():
                    results = [replay_touched(t, g, m.select, mode="strict") for t, g, m in groups]
            else:
                results = [replay_touched(t, g, m.select, mode="strict") for t, g, m in groups]
            seconds = time.perf_counter() - t0
            print(f"  replay, {label:11s} {seconds:5.2f} s = {seconds / n * 1e6:5.1f} us/change")
            log = [entry for result in results for entry in result.change_log]
            del results
            gc.collect()

    # the applier's collected table carries commit_ts as epoch micros (DeltaApplier._collect)
    collected = table.set_column(table.schema.get_field_index("commit_ts"), "commit_ts",
                                 pc.cast(table["commit_ts"], pa.int64()))
    schema = to_arrow_schema(change_log_schema())
    print(f"  change log: {len(log)} entries")
    for _ in range(args.rounds):
        for label in ("entry dicts", "arrow copy"):
            t0 = time.perf_counter()
            with gc_paused():
                if label == "entry dicts":
                    out = pa.Table.from_pylist([{**e.to_dict(), "batch_id": 1} for e in log], schema=schema)
                else:
                    out = change_log_table(collected, log, log_rows, 1, schema)
            seconds = time.perf_counter() - t0
            print(f"  change log, {label:11s} {seconds:5.2f} s = {seconds / len(log) * 1e6:5.1f} us/entry")
            del out
            gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
