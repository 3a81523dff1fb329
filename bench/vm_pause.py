"""A local session's JVM paused longer than Spark's heartbeat timeout (as a VM snapshot or a
laptop's sleep pauses it), then resumed: does the driver expire its own executor, which ends the
JVM ~10 minutes later ("Exit as unable to send heartbeats to driver more than 60 times")?

    .venv/bin/python bench/vm_pause.py [--seconds 135] [--conf KEY=VALUE ...]

Builds the job's local session (pipelines/job/spark_session.py), runs a query, SIGSTOPs the JVM for
--seconds, SIGCONTs it, waits 40 s, runs a query again; prints whether the driver removed its
executor and how many heartbeats failed. `--conf spark.storage.blockManagerHeartbeatTimeoutMs=120000`
gives Spark's default back, to see the failure.
"""
from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=135)
    parser.add_argument("--conf", action="append", default=[])
    args = parser.parse_args()
    log = Path("/tmp") / f"vm_pause_{os.getpid()}.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    saved = os.dup(2)
    os.dup2(fd, 2)  # the JVM inherits stderr: its log lines go to the file
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="vm-pause",
                                         extra_conf=tuple(tuple(c.split("=", 1)) for c in args.conf)))
    spark.range(1000).selectExpr("sum(id)").first()
    pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    os.kill(pid, signal.SIGSTOP)
    time.sleep(args.seconds)
    os.kill(pid, signal.SIGCONT)
    time.sleep(40)
    answer = spark.range(1000).selectExpr("sum(id)").first()[0]
    spark.stop()
    os.dup2(saved, 2)
    text = io.open(log).read()
    print(f"paused {args.seconds} s, conf {args.conf or 'the job defaults'}: query after resume {answer}; "
          f"executor removed by the driver: {'Removing executor driver' in text}; "
          f"failed heartbeats in 40 s: {text.count('Issue communicating with driver in heartbeater')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
