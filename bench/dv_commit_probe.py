"""Probe: a table write that does not scan the table (issue #57 item 3, research/write-path-design.md
§3.1 / §6). For a batch whose changed and deleted rows' positions are known (id -> data file, row
index), ONE Delta commit of deletion vectors + the changed rows' new images + SetTransaction,
driven through py4j (pipelines/delta/dv_commit.py), against the project's MERGE by `_row_id`
(pipelines/apply/target_writes.merge) on a copy of the same table. Prints its figures.

    .venv/bin/python bench/dv_commit_probe.py [--rows 1000000] [--changes 100] [--rounds 3]

The table is sysbench's sbtest (id 1..N, k, c 119 chars, pad 59 chars) + `_row_id` = id, with
deletion vectors on, written as `--files` files of contiguous ids. k and pad are functions of
id and c a function of id until an update replaces it, so a change's full new image is known
without reading the target (as a FULL binlog row image is). The table, its changes and the
position index: bench/dv_probe_table.py; the checks of each round and the final ones:
bench/dv_probe_checks.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.dv_probe_checks import (  # noqa: E402
    commit_log, final_checks, index_spot_check, retry_check, round_equal,
)
from bench.dv_probe_table import (  # noqa: E402
    Changes, PositionIndex, build_table, draw_changes, read_positions,
)

APP_ID = "dv-probe"


def jobs_of(spark, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def in_group(spark, group: str):
    spark.sparkContext.setJobGroup(group, group)


@dataclass
class Probe:
    """What the rounds share: the session and options, the two tables, the DV table's AddFile
    catalog and position index, what the generator knows (live ids, each updated id's c) and the
    rows' Spark schemas (the MERGE source's with the op column)."""
    spark: Any
    args: argparse.Namespace
    dv_path: str
    merge_path: str
    table: Any  # pipelines.delta.dv_commit.DvTable
    index: PositionIndex
    url_to_path: dict[str, str]
    rng: np.random.Generator
    alive: np.ndarray = field(init=False)
    current_c: dict[int, str] = field(default_factory=dict)
    schema: Any = field(init=False)
    source_schema: Any = field(init=False)
    names: list[str] = field(init=False)

    def __post_init__(self):
        from pyspark.sql import types as T
        from pipelines.apply.target_writes import OP_COLUMN
        self.alive = np.ones(self.args.rows + 1, dtype=bool)
        self.alive[0] = False
        self.schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("k", T.IntegerType()),
                                    T.StructField("c", T.StringType()), T.StructField("pad", T.StringType()),
                                    T.StructField("_row_id", T.StringType())])
        self.source_schema = T.StructType(self.schema.fields
                                          + [T.StructField(OP_COLUMN, T.StringType(), False)])
        self.names = [f.name for f in self.source_schema.fields]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--keep", action="store_true", help="keep the tables (printed path)")
    parser.add_argument("--except-every-round", action="store_true",
                        help="EXCEPT ALL both ways after every round (else: checksums + the "
                             "touched rows each round, EXCEPT ALL after the last)")
    return parser.parse_args()


def build_tables(spark, root: Path, args: argparse.Namespace, figures: dict[str, object]) -> None:
    """The DV table written, and copied for the MERGE."""
    dv_path, merge_path = str(root / "dv"), str(root / "merge")
    t = time.perf_counter()
    build_table(spark, dv_path, args.rows, args.files)
    shutil.copytree(dv_path, merge_path)
    size = sum(p.stat().st_size for p in Path(dv_path).glob("*.parquet"))
    figures["build s"] = round(time.perf_counter() - t, 1)
    figures["files"] = len(list(Path(dv_path).glob("*.parquet")))
    figures["MB"] = round(size / 2 ** 20, 1)
    print(f"tables: {root}  {figures['files']} files, {figures['MB']} MB each copy", flush=True)


def index_table(spark, dv_path: str, rows: int, figures: dict[str, object]):
    """The DV table's AddFile catalog and its position index, read once: (table, index, url_to_path)."""
    from pipelines.delta.dv_commit import DvTable
    table = DvTable(spark, dv_path)
    in_group(spark, "index")
    t = time.perf_counter()
    table.load_files()
    t_files = time.perf_counter() - t
    url_to_path = {table.file_url(a): p for p, a in table.files.items()}
    positions = read_positions(spark, spark.read.format("delta").load(dv_path))
    index = PositionIndex(rows)
    index.load(positions, url_to_path)
    figures["index build s"] = round(time.perf_counter() - t, 2)
    figures["index: files catalog s"] = round(t_files, 2)
    figures["index jobs"] = jobs_of(spark, "index")
    del positions
    print(f"index built: {figures['index build s']} s ({figures['index jobs']} jobs, "
          f"AddFile catalog {t_files:.2f} s)", flush=True)
    return table, index, url_to_path


def dv_write(probe: Probe, rnd: int, changes: Changes, rec: dict):
    """(a) deletion vectors + append + SetTransaction: one commit, no read of the table. Returns
    (the touched files' row indexes, the commit)."""
    from pipelines.delta.delta_txn import committed_version
    spark, index = probe.spark, probe.index
    in_group(spark, f"dv-{rnd}")
    t = time.perf_counter()
    if (committed_version(spark, probe.dv_path, APP_ID) or -1) >= rnd:
        raise SystemExit("round already committed")  # (the caller's check; not the case here)
    touched = index.by_file(np.concatenate([changes.upd, changes.dele]))
    new_rows = spark.createDataFrame(changes.images, probe.schema).coalesce(1)
    outcome = probe.table.commit(touched, new_rows, APP_ID, rnd)
    rec["dv s"] = time.perf_counter() - t
    rec["dv jobs"] = jobs_of(spark, f"dv-{rnd}")
    rec.update({f"dv {k} s": v for k, v in outcome.seconds.items()})
    rec["files touched"] = len(touched)
    rec["dv bytes"] = outcome.dv_bytes
    # the index learns the new rows' positions from the commit's new files only
    in_group(spark, f"reindex-{rnd}")
    t = time.perf_counter()
    index.file[changes.dele] = -1
    new_urls = {probe.table.file_url(outcome.added[p]): p for p in outcome.new_files}
    probe.url_to_path.update(new_urls)
    index.load(read_positions(spark, spark.read.format("parquet").load(list(new_urls))), probe.url_to_path)
    rec["reindex s"] = time.perf_counter() - t
    rec["reindex jobs"] = jobs_of(spark, f"reindex-{rnd}")
    rec["dv version"] = outcome.version
    return touched, outcome


def merge_write(probe: Probe, rnd: int, changes: Changes, rec: dict) -> None:
    """(b) the project's MERGE by _row_id on the copy."""
    from libs.apply.write_op import WriteOp
    from pipelines.apply.target_writes import OP_COLUMN, merge
    from pipelines.delta.delta_txn import delta_txn
    spark, upd, dele = probe.spark, changes.upd, changes.dele
    source = pa.concat_tables([
        changes.images.append_column(OP_COLUMN, pa.array([WriteOp.UPSERT.value] * len(upd), pa.string())),
        pa.table({"id": pa.nulls(len(dele), pa.int64()), "k": pa.nulls(len(dele), pa.int32()),
                  "c": pa.nulls(len(dele), pa.string()), "pad": pa.nulls(len(dele), pa.string()),
                  "_row_id": pa.array([str(i) for i in dele], pa.string()),
                  OP_COLUMN: pa.array([WriteOp.DELETE.value] * len(dele), pa.string())})])
    in_group(spark, f"merge-{rnd}")
    t = time.perf_counter()
    with delta_txn(spark, APP_ID, rnd):
        merge(spark, spark.createDataFrame(source, probe.source_schema), probe.names, probe.merge_path)
    rec["merge s"] = time.perf_counter() - t
    rec["merge jobs"] = jobs_of(spark, f"merge-{rnd}")


def one_round(probe: Probe, rnd: int) -> dict:
    """One batch written both ways, then checked; its figures printed as one JSON line."""
    spark, args = probe.spark, probe.args
    changes = draw_changes(probe.rng, probe.alive, args.changes)
    rec: dict[str, Any] = {"round": rnd}
    touched, outcome = dv_write(probe, rnd, changes, rec)
    merge_write(probe, rnd, changes, rec)
    spark.sparkContext.setJobGroup("verify", "verify")

    # verification
    probe.alive[changes.dele] = False
    probe.current_c.update(zip(changes.upd.tolist(), changes.new_c))
    except_all = args.except_every_round or rnd == args.rounds
    rec.update(round_equal(spark, (probe.dv_path, probe.merge_path), changes, probe.current_c,
                           probe.alive, except_all))
    rec.update(commit_log(spark, probe.dv_path, outcome.version))
    rec["retry"] = retry_check(spark, probe.table, touched, APP_ID, rnd)
    rec["index ok"] = index_spot_check(spark, probe.dv_path, changes, probe.index, probe.url_to_path)
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()},
                     default=str), flush=True)
    return rec


def summary(rounds: list[dict]) -> dict[str, object]:
    med = lambda key: round(statistics.median(r[key] for r in rounds), 3)  # noqa: E731
    return {
        "DV commit wall s (median)": med("dv s"),
        "  of which DV files s": med("dv dv s"),
        "  of which writeFiles s": med("dv write s"),
        "  of which commit s": med("dv commit s"),
        "index refresh s (median)": med("reindex s"),
        "MERGE wall s (median)": med("merge s"),
        "DV jobs/round": [r["dv jobs"] for r in rounds],
        "reindex jobs/round": [r["reindex jobs"] for r in rounds],
        "MERGE jobs/round": [r["merge jobs"] for r in rounds],
        "files touched/round": [r["files touched"] for r in rounds],
        "equal/round": [r["equal"] for r in rounds],
        "index ok/round": [r["index ok"] for r in rounds],
        "DV per round s": [round(r["dv s"], 2) for r in rounds],
        "MERGE per round s": [round(r["merge s"], 2) for r in rounds],
        "load average": os.getloadavg()[0],
    }


def main() -> None:
    args = parse_args()
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="dv-commit-probe", driver_memory="3g"))
    root = Path(tempfile.mkdtemp(prefix="dv_probe_"))
    dv_path, merge_path = str(root / "dv"), str(root / "merge")
    figures: dict[str, object] = {"rows": args.rows, "changes": args.changes,
                                  "deletes": args.changes // 10}
    rng = np.random.default_rng(args.seed)
    try:
        build_tables(spark, root, args, figures)
        table, index, url_to_path = index_table(spark, dv_path, args.rows, figures)
        probe = Probe(spark, args, dv_path, merge_path, table, index, url_to_path, rng)
        rounds = [one_round(probe, rnd) for rnd in range(1, args.rounds + 1)]
        # final checks: the AddFile catalog and a fresh index against the table's own state
        figures.update(final_checks(spark, table, index, probe.alive, args.rows))
        figures.update(summary(rounds))
        print("\nFIGURES")
        for key, value in figures.items():
            print(f"  {key:40s} {value}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
