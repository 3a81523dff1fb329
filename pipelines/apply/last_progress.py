"""Each source's last `_cdc_progress` row as this process knows it: a heartbeat-only source's row
is repeated with its new caught-up position (BatchWrites.append_progress), so it is read from the
table once per process and then kept up to date by the job's own appends (only this job writes
rows of its app_id).

`prefetch` reads every source's row beside the query's start. The first batch after a restart
is often the heartbeats Spark had planned before the stop; it read this row itself, cold: 3.8 of
its 11 s (bench/README.md "Issue #37 goal a, session 29")."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterable, Mapping

from pyspark.sql import SparkSession

import pipelines.apply.tables as D
from libs.table_location import TableLocation


class LastProgress:
    def __init__(self, table: TableLocation, app_id: str):
        self.table, self.app_id = table, app_id
        self.rows: dict[str, dict[str, Any]] = {}  # source -> its last row
        self._complete = False  # every source's row was read (a source without one has none)
        self._pending: Future | None = None

    def prefetch(self, spark: SparkSession) -> None:
        """Read every source's last row in the background; the first batch that needs one waits."""
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="last-progress")
        self._pending = pool.submit(D.last_progress, spark, self.table, self.app_id, None)
        pool.shutdown(wait=False)

    def of(self, spark: SparkSession, sources: Iterable[str]) -> Mapping[str, dict[str, Any]]:
        """The rows, with those of `sources` read if this process has not seen them yet."""
        self._settle()
        missing = set() if self._complete else set(sources) - self.rows.keys()
        if missing:
            self.rows.update(D.last_progress(spark, self.table, self.app_id, missing))
        return self.rows

    def update(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Rows this process appended: newer than any it read."""
        self.rows.update((r["source"], dict(r)) for r in rows)

    def _settle(self) -> None:
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        try:
            found = pending.result()
        except Exception:  # noqa: BLE001 - read again where needed, which raises what the read raises
            return
        for source, row in found.items():
            self.rows.setdefault(source, row)  # rows appended since are newer
        self._complete = True
