"""`python -m tests.integration.snapshot.stalled_ship ARGS`: cdc-ship whose snapshot run stops
before the SELECT of table STALL_TABLE (environment), after its `table` record was sent, until it
is killed: where test_ship_snapshot.py's SIGKILL lands. A LOCK TABLES ... WRITE cannot do it: a
run takes its tables' metadata locks before P (libs/snapshot/schema_lock.py), so the lock would
stop the run before it publishes anything."""
from __future__ import annotations

import os
import sys
import time

from libs.snapshot import source
from pipelines.ship import main


def _stalled(original, table: str):
    def stream_batches(conn, statement, *args, **kwargs):
        if statement.endswith(f".`{table}`"):
            while True:  # until SIGKILL
                time.sleep(1)
        return original(conn, statement, *args, **kwargs)
    return stream_batches


if __name__ == "__main__":
    source.stream_batches = _stalled(source.stream_batches, os.environ["STALL_TABLE"])
    sys.exit(main())
