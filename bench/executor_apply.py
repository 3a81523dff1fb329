"""Issue #21 goals 1 and 2: does the apply stage scale with the executors, and how does it
compare with a plain append of the same change records? Prints figures; not a test.

    .venv/bin/python bench/executor_apply.py [--changes 200000] [--rows 100000]
                                             [--masters 'local[1],local[2]'] [--runs 1]

Workload (generated once, cached under .cache/bench/executor_apply/): target `bench.t`
(id BIGINT PRIMARY KEY, qty INT, note VARCHAR(32)) holding --rows rows (applied as batch 0, not
timed), then ONE batch of --changes row changes in transactions of 10, minimal images: 70 %
UPDATE of qty by id, 15 % INSERT of a new id, 10 % DELETE, 5 % UPDATE of note, plus 0.1 %
key-changing UPDATEs (id -> a free id). Each (master, path) runs in a fresh process (its own
Spark session): batch 0, then batch 1 timed with DeltaApplier on the executors
(executor_apply_min_changes 0) or on the driver (null), and a plain Delta append of the same
change records. The final table is compared with the generator's rows (exact, every row).
Path `replay`: the executors without the fold (executor_fold false: every change replayed one
by one, as before issue #37 item 4), to compare with `executors` (the fold, then the replay of
what it leaves).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_support import load_average  # noqa: E402

CACHE = REPO / ".cache" / "bench" / "executor_apply"
DDL = "CREATE TABLE bench.t (id bigint NOT NULL, qty int, note varchar(32), PRIMARY KEY (id))"
COLUMNS = ["id", "qty", "note"]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _image(values):
    if values is None:
        return None
    return [{"ordinal": COLUMNS.index(n), "name": n, "type_code": 3, "text": None if v is None else str(v),
             "binary": None} for n, v in values.items()]


class Generator:
    def __init__(self, seed: int):
        self.rng, self.trx, self.seq, self.rows = random.Random(seed), 0, 0, {}

    def change(self, op, before=None, after=None):
        if self.seq == 10 or self.trx == 0:
            self.trx, self.seq = self.trx + 1, 0
        self.seq += 1
        trx = self.trx
        return {"source": "bench", "trx_id": f"0-1-{trx}", "gtid": f"0-1-{trx}", "xid": trx, "server_id": 1,
                "commit_ts": T0 + dt.timedelta(milliseconds=trx), "trx_file": "mdb-bin.000001",
                "trx_end_pos": 1000 + trx * 1000, "change_seq": self.seq, "database": "bench", "table": "t",
                "op": op, "before": _image(before), "after": _image(after), "statement": None,
                "binlog_file": "mdb-bin.000001", "binlog_pos": 900 + trx * 1000 + self.seq}

    def initial(self, n: int) -> list[dict]:
        out = []
        for i in range(n):
            self.rows[i] = {"id": i, "qty": i % 100, "note": f"n{i % 7}"}
            out.append(self.change("insert", None, self.rows[i]))
        return out

    def batch(self, n: int) -> list[dict]:
        out, ids, next_id = [], list(self.rows), max(self.rows, default=-1) + 1
        alive = set(ids)
        while len(out) < n:
            roll = self.rng.random()
            if roll < 0.15 or not alive:
                row = {"id": next_id, "qty": self.rng.randrange(1000), "note": "new"}
                self.rows[next_id] = row
                alive.add(next_id)
                ids.append(next_id)
                next_id += 1
                out.append(self.change("insert", None, row))
                continue
            key = self.rng.choice(ids)
            if key not in alive:
                continue
            if roll < 0.85:
                qty = self.rng.randrange(1000)
                self.rows[key]["qty"] = qty
                out.append(self.change("update", {"id": key}, {"qty": qty}))
            elif roll < 0.95:
                alive.discard(key)
                del self.rows[key]
                out.append(self.change("delete", {"id": key}))
            elif roll < 0.999:
                note = f"u{self.rng.randrange(50)}"
                self.rows[key]["note"] = note
                out.append(self.change("update", {"id": key}, {"note": note}))
            else:
                alive.discard(key)
                row = {**self.rows.pop(key), "id": next_id}
                self.rows[next_id] = row
                alive.add(next_id)
                ids.append(next_id)
                next_id += 1
                out.append(self.change("update", {"id": key}, {"id": row["id"]}))
        return out


def _workload(changes: int, rows: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    from pipelines.job.schemas import spark_schema

    out = CACHE / f"{rows}-{changes}"
    if (out / "expected.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    gen = Generator(seed=21)
    schema = to_arrow_schema(spark_schema("change_record"))
    pq.write_table(pa.Table.from_pylist(gen.initial(rows), schema=schema), out / "batch0.parquet")
    pq.write_table(pa.Table.from_pylist(gen.batch(changes), schema=schema), out / "batch1.parquet")
    (out / "expected.json").write_text(json.dumps(sorted(gen.rows.values(), key=lambda r: r["id"])))
    return out


def _child(args) -> None:
    """One (master, path) in this process: batch 0 untimed, batch 1 timed, then the check."""
    import shutil

    from libs.config.job import JobConfig
    from libs.targets import build_catalog, parse_ddl
    from pipelines.apply import DeltaApplier
    from pipelines.job.schemas import spark_schema
    from pipelines.job.spark_session import SessionOptions, build_session

    work = Path(args.work)
    root = CACHE / "run" / f"{args.path}-{args.master.replace('[', '').replace(']', '').replace(',', '-')}"
    shutil.rmtree(root, ignore_errors=True)
    spark = build_session(SessionOptions(app_name="executor-apply-bench", master=args.master))
    schema = spark_schema("change_record")
    batches = [spark.read.schema(schema).parquet(str(work / f"batch{n}.parquet")).cache() for n in (0, 1)]
    for b in batches:
        b.count()
    figures = {"master": args.master, "path": args.path, "changes": batches[1].count(),
               "load_start": load_average()}
    if args.path == "append":
        batches[0].write.format("delta").save(str(root / "append"))
        t = time.perf_counter()
        batches[1].write.format("delta").mode("append").save(str(root / "append"))
        figures["seconds"] = time.perf_counter() - t
    else:
        cfg = JobConfig(delta_root=str(root / "delta"),
                        executor_apply_min_changes=0 if args.path in ("executors", "replay") else None,
                        executor_fold=args.path != "replay", target_mirror_max_rows=0)
        applier = DeltaApplier(build_catalog(None, "bench", parse_ddl(DDL, "bench.sql")), cfg)
        applier(batches[0], 0)
        t = time.perf_counter()
        applier(batches[1], 1)
        figures["seconds"] = time.perf_counter() - t
        got = sorted(({"id": r["id"], "qty": r["qty"], "note": r["note"]}
                      for r in spark.read.format("delta").load(str(root / "delta" / "bench__t")).collect()),
                     key=lambda r: r["id"])
        figures["equal"] = got == json.loads((work / "expected.json").read_text())
    figures["load_end"] = load_average()
    figures["changes_per_s"] = round(figures["changes"] / figures["seconds"])
    print(json.dumps(figures), flush=True)
    spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--paths", default="executors,driver,append")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return 0
    work = _workload(args.changes, args.rows)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    print(f"commit {commit}, {args.rows:,} rows then one batch of {args.changes:,} changes", flush=True)
    results = []
    for _ in range(args.runs):
        for master in args.masters.split(","):
            for path in args.paths.split(","):
                out = subprocess.run([sys.executable, __file__, "--child", "--master", master, "--path", path,
                                      "--work", str(work)], capture_output=True, text=True, cwd=REPO)
                lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
                if out.returncode or not lines:
                    print(f"{master} {path}: failed\n{out.stderr[-3000:]}")
                    return 1
                results.append(json.loads(lines[-1]))
                print(lines[-1], flush=True)
    by = {(r["master"], r["path"]): r for r in results}
    masters = args.masters.split(",")
    for path in args.paths.split(","):
        rates = [by[(m, path)]["changes_per_s"] for m in masters if (m, path) in by]
        if len(rates) == 2:
            print(f"{path}: {masters[0]} {rates[0]:,}/s -> {masters[1]} {rates[1]:,}/s = "
                  f"x{rates[1] / rates[0]:.2f}")
    for m in masters:
        if (m, "executors") in by and (m, "append") in by:
            ratio = by[(m, "executors")]["changes_per_s"] / by[(m, "append")]["changes_per_s"]
            print(f"{m}: executors' apply / plain append = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
