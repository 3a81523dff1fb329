"""The figures of bench/oltp_bench.py: the printed lines and final table, the job's batches
(its log lines and its Delta commits), commit-to-visible latency, equality, sizes."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from bench_support import load_average
from oltp_delta import JobTables, bytes_written, disk_size, live_files, median, percentile
from oltp_sysbench import DB, row_bytes

from libs.binlog.file_names import binlog_sort_key
from libs.tables.system_tables import CHANGE_LOG, PROGRESS

BATCH_LINE = re.compile(r"cdc-replicate: batch (\d+): ([\d,]+) records in ([\d.]+) s")
STEPS_LINE = re.compile(r"cdc-replicate: batch (\d+): .*?(?:; (\d+) Spark jobs)?; steps \(s\): (.*)$", re.M)
SPARK_JOBS = "spark jobs"  # pipelines/job/batch_jobs.py: a count among the seconds, printed as they are


@dataclass
class Figures:
    commit: str
    rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def line(self, phase: str, command: str, figure: str, value: str, met: bool | None = None) -> None:
        verdict = "" if met is None else (" MET" if met else " NOT MET")
        load = load_average()
        self.rows.append((phase, figure, value + verdict, load, command))
        print(f"[{phase}] {command} | {figure}: {value}{verdict} | load {load} | commit {self.commit}",
              flush=True)

    def table(self) -> None:
        print(f"\nfigures (commit {self.commit}):")
        width = max((len(r[1]) for r in self.rows), default=10)
        for phase, figure, value, load, _ in self.rows:
            print(f"  {phase:9s} {figure:{width}s}  {value}  [load {load}]")


def job_batches(log: Path) -> dict[int, tuple[int, float]]:
    """batch id -> (Kafka records, trigger seconds) from the job's progress lines (the last run's)."""
    out = {}
    for m in BATCH_LINE.finditer(log.read_text(errors="replace")):
        out[int(m.group(1))] = (int(m.group(2).replace(",", "")), float(m.group(3)))
    return out


def job_steps(log: Path) -> dict[int, dict[str, float]]:
    """batch id -> seconds per step (libs/runtime/step_clock.py) from the job's progress lines,
    and the batch's Spark jobs under SPARK_JOBS when the line gives them."""
    out = {}
    for m in STEPS_LINE.finditer(log.read_text(errors="replace")):
        out[int(m.group(1))] = {name: float(value) for name, value in
                                (part.rsplit(" ", 1) for part in m.group(3).split(", ") if part)}
        if m.group(2) is not None:
            out[int(m.group(1))][SPARK_JOBS] = float(m.group(2))
    return out


def step_medians(steps: dict[int, dict[str, float]], first: int, last: int, phase: str) -> None:
    """The phase's batches' split: per step, the median and the sum of its seconds (a step a
    batch did not print counts as 0 there)."""
    mine = [steps[b] for b in range(first, last + 1) if b in steps]
    if not mine:
        return
    names = list(dict.fromkeys(name for s in mine for name in s))
    print(f"[{phase}] {len(mine)} batches' steps (s, median / sum; {SPARK_JOBS}: a count): " + ", ".join(
        f"{name} {median([s.get(name, 0.0) for s in mine]):.1f} / {sum(s.get(name, 0.0) for s in mine):.1f}"
        for name in names), flush=True)


def batch_timeline(delta: JobTables, batches: dict[int, tuple[int, float]], first: int, last: int,
                   phase: str, log: Path | None = None) -> None:
    """Per batch: its records and seconds, and when its commits came (seconds after its start,
    start = its last commit - its trigger seconds): the time before the first target commit is
    the job's read, decode, assemble and replay, and the change-log append (written first); then
    the target writes and the progress append. `log`: the job's, for its batches' steps."""
    commits = delta.refresh().batch_commits(first, last)
    steps = job_steps(log) if log is not None else {}
    pre, writes, totals = [], [], []
    print(f"[{phase}] batches {first}..{last}: records, trigger s | change log, first target, last target, "
          f"progress commit (s after the start) | target ops (executionTimeMs)")
    for batch in range(first, last + 1):
        records, seconds = batches.get(batch, (0, 0.0))
        mine = commits.get(batch, [])
        if not mine:
            continue
        start = max(c.mtime for _, c in mine) - seconds
        targets = sorted(c.mtime - start for name, c in mine if name not in (PROGRESS, CHANGE_LOG))
        progress = [c.mtime - start for name, c in mine if name == PROGRESS]
        change_log = [c.mtime - start for name, c in mine if name == CHANGE_LOG]
        ops = ", ".join(f"{name[-1]}:{c.info.get('operation', '?')}"
                        f"({c.info.get('operationMetrics', {}).get('executionTimeMs', '-')})"
                        for name, c in sorted(mine, key=lambda nc: nc[0])
                        if name not in (PROGRESS, CHANGE_LOG))
        if targets:
            pre.append(targets[0])
            writes.append(targets[-1] - targets[0])
        totals.append(seconds)
        print(f"  batch {batch}: {records:,} records, {seconds:.1f} s | "
              + (f"{change_log[0]:.1f}, " if change_log else "-, ")
              + (f"{targets[0]:.1f}, {targets[-1]:.1f}" if targets else "-, -")
              + (f", {progress[0]:.1f}" if progress else ", -") + f" | {ops}")
        if batch in steps:
            print("    steps (s): " + ", ".join(f"{name} {s:.1f}" for name, s in steps[batch].items()))
    if totals:
        print(f"[{phase}] {len(totals)} batches: median {median(totals):.1f} s per batch; before the first "
              f"target commit median {median(pre):.1f} s, first to last target commit median "
              f"{median(writes):.1f} s",
              flush=True)
    step_medians(steps, first, last, phase)


def latency_figures(delta: JobTables, polls: list[tuple[float, str, int]]) -> tuple[float, float, float, int]:
    """p50, p99, max of commit-to-visible over the poll intervals in which the binlog grew (the
    module doc of bench/oltp_bench.py, phase 3), and how many intervals there were."""
    delta.refresh()
    visible = delta.visible_at()
    reached = sorted((pos, batch) for batch, pos in delta.positions().items() if batch in visible)
    latencies = []
    for (t0, f0, p0), (t1, f1, p1) in zip(polls, polls[1:]):
        if (f1, p1) == (f0, p0):
            continue
        want = (binlog_sort_key(f1), p1)
        batch = next((b for pos, b in reached if pos >= want), None)
        if batch is None:
            raise SystemExit(f"binlog position {f1}:{p1} of {t1:.1f} never visible")
        latencies.append(visible[batch] - t0)
    if not latencies:
        raise SystemExit("the live phase wrote nothing to the binlog")
    return percentile(latencies, 0.5), percentile(latencies, 0.99), max(latencies), len(latencies)


def equality(spark, server, delta: JobTables, figures: Figures) -> bool:
    """Every target against the server's SELECT * (all columns, all rows, as multisets)."""
    from pipelines.delta.table_equality import delta_rows, server_rows

    ok = True
    for name, path in delta.targets.items():
        columns, want = server_rows(server, DB, name)
        got = delta_rows(spark, str(path), columns)
        if got == want:
            figures.line("equality", f"SELECT * FROM {DB}.{name} vs Delta", name,
                         f"OK ({sum(got.values()):,} rows)")
            continue
        ok = False
        missing, extra = want - got, got - want
        figures.line("equality", f"SELECT * FROM {DB}.{name} vs Delta", name,
                     f"DIFFERENT: server {sum(want.values()):,} rows, Delta {sum(got.values()):,}; "
                     f"{sum(missing.values())} missing, {sum(extra.values())} extra")
        for label, rows in (("missing in Delta", missing), ("extra in Delta", extra)):
            for row in sorted(rows, key=repr)[:5]:
                print(f"    {label}: "
                      f"{tuple(v[:20] + '...' if isinstance(v, str) and len(v) > 20 else v for v in row)}")
    return ok


def changed_rows(spark, delta: JobTables, first: int, last: int) -> dict[tuple[int, str], int]:
    """(batch, delta table name) -> change-log entries of the batches first..last."""
    from pyspark.sql import functions as F
    log = spark.read.format("delta").load(str(delta.change_log_path))
    rows = (log.where(F.col("batch_id").between(first, last)).groupBy("batch_id", "delta_table").count()
            .collect())
    return {(r["batch_id"], r["delta_table"]): r["count"] for r in rows}


def size_figures(spark, server, delta: JobTables, phases: dict[str, tuple[int, int]],
                 figures: Figures) -> None:
    delta.refresh()
    for name, path in delta.targets.items():
        log = delta.logs[name]
        live = live_files(log)
        files, data, log_bytes = disk_size(path)
        figures.line("size", f"ls -R {path.name}", name,
                     f"{len(live)} live files, "
                     f"{sum(int(a['size']) for a in live.values()) / 2**20:.1f} MB live; "
                     f"on disk {files} files, {data / 2**20:.1f} MB + _delta_log {log_bytes / 2**20:.1f} MB")
    for phase, (first, last) in phases.items():
        changed = changed_rows(spark, delta, first, last)
        for name in delta.targets:
            size, by_version = row_bytes(server, name), bytes_written(delta.logs[name])
            ratios, written = [], []
            for batch, commits in sorted(delta.batch_commits(first, last).items()):
                wrote = sum(by_version[c.version] for table, c in commits if table == name)
                rows = next((n for (b, t), n in changed.items() if b == batch and t.endswith(name)), 0)
                if rows:
                    written.append(wrote)
                    ratios.append(wrote / (rows * size))
            if ratios:
                figures.line("size",
                             f"{phase} batches {first}..{last}, Delta log add actions / _cdc_change_log",
                             f"{name}, {phase}: bytes written per batch / changed rows' size "
                             f"({size:.0f} B a row)",
                             f"median {median(written) / 1024:.0f} KB, x{median(ratios):.1f}; "
                             f"max x{max(ratios):.1f} over {len(ratios)} batches (goal b <= 20)",
                             met=max(ratios) <= 20)
    for name, log in list(delta.logs.items())[:1]:
        print(f"[size] {name}'s last commits (Delta history, operationMetrics):")
        for version in sorted(log.commits)[-6:]:
            info = log.commits[version].info
            metrics = {k: v for k, v in (info.get("operationMetrics") or {}).items()
                       if k in ("executionTimeMs", "numTargetRowsUpdated", "numTargetRowsInserted",
                                "numTargetRowsDeleted", "numOutputRows", "numTargetFilesAdded",
                                "numTargetFilesRemoved", "numTargetBytesAdded",
                                "numTargetDeletionVectorsAdded", "numFiles", "numOutputBytes",
                                "numAddedFiles", "numRemovedFiles")}
            print(f"  v{version} {info.get('operation')}: {metrics}")


def compaction_figures(spark, delta: JobTables, figures: Figures) -> None:
    """Goal b's second half: each target's files and bytes on disk as the job left them, against
    the same table after OPTIMIZE + VACUUM RETAIN 0 HOURS (run here, the job stopped)."""
    from delta.tables import DeltaTable
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    for name, path in delta.targets.items():
        files, data, _ = disk_size(path)
        table = DeltaTable.forPath(spark, str(path))
        table.optimize().executeCompaction()
        table.vacuum(0)
        compact_files, compact_data, _ = disk_size(path)
        figures.line("size", f"OPTIMIZE + VACUUM RETAIN 0 HOURS {path.name}",
                     f"{name}: on disk as the job left it / after OPTIMIZE + VACUUM",
                     f"{files} files {data / 2**20:.1f} MB / {compact_files} files "
                     f"{compact_data / 2**20:.1f} MB = x{data / max(compact_data, 1):.2f} (goal b <= 2)",
                     met=data <= 2 * compact_data)
