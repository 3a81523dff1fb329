"""Peer side of bench/codec_bench.py: python-mysql-replication streaming ONE binlog file from a
MariaDB server, decoding and touching every row value. Runs in the bench venv
(.cache/bench-venv, created by codec_bench.py; python-mysql-replication is not a project
dependency). Prints one JSON line: {"seconds", "cpu_seconds", "events", "rows", "rows_events"}.

    .cache/bench-venv/bin/python bench/peer_stream.py --socket S --file mdb-bin.000010

`events` counts every event packet the stream received for that file (the peer does not ask
for Annotate_rows, so MariaDB does not send them), including the fake Rotate the dump starts
with; counting stops at the Rotate that leaves the file. `seconds` runs from opening the stream
(connect, COM_BINLOG_DUMP) to the last rows event of the file.
"""
from __future__ import annotations

import argparse
import json
import time

from pymysqlreplication import BinLogStreamReader, binlogstream
from pymysqlreplication.event import RotateEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--server-id", type=int, default=4242)
    args = ap.parse_args()

    state = {"events": 0, "left": False}
    base = binlogstream.BinLogPacketWrapper

    class Counting(base):  # counts every event packet the stream parses
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            if state["left"]:
                return
            state["events"] += 1
            ev = self.event
            if isinstance(ev, RotateEvent) and ev.next_binlog != args.file:
                state["left"] = True

    binlogstream.BinLogPacketWrapper = Counting

    t0 = time.perf_counter()
    c0 = time.process_time()
    stream = BinLogStreamReader(
        connection_settings={"unix_socket": args.socket, "user": "root", "passwd": ""},
        server_id=args.server_id, log_file=args.file, log_pos=4, resume_stream=True,
        blocking=False, only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        ignore_decode_errors=True)
    rows = rows_events = touched = 0
    for ev in stream:
        if stream.log_file != args.file:
            break
        rows_events += 1
        for row in ev.rows:
            rows += 1
            if "values" in row:
                for v in row["values"].values():
                    touched += v is not None
            else:
                for v in row["before_values"].values():
                    touched += v is not None
                for v in row["after_values"].values():
                    touched += v is not None
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    stream.close()
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "events": state["events"], "rows": rows,
                      "rows_events": rows_events, "non_null_values": touched}))


if __name__ == "__main__":
    main()
