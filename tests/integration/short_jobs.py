"""The environment of a job subprocess that lives about a minute and applies little.

Its JVM compiles with C1 only (`-XX:TieredStopAtLevel=1`, through Spark's launcher variable
SPARK_SUBMIT_OPTS: no "Picked up" line on the job's stderr). A cold job's first batch spends much
of its time compiling; C2's optimised code only pays in a JVM that runs for minutes. Measured on
this 2-core machine (one run each, session 33): the exactly-once kill test 224 -> 185 s, the
stopping tests 103 -> 79 s and 62 -> 54 s; the same flag made the shared session's tests of
tests/spark twice as slow, and a job that applies a big snapshot or transaction is not short:
those keep the JVM's default. The product's JVM always keeps the default (tiered, C2)."""
from __future__ import annotations

import os
from typing import Mapping

QUICK_JIT = "-XX:TieredStopAtLevel=1"


def short_job_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment by default) with QUICK_JIT added to SPARK_SUBMIT_OPTS."""
    env = dict(os.environ if base is None else base)
    env["SPARK_SUBMIT_OPTS"] = f"{env.get('SPARK_SUBMIT_OPTS', '')} {QUICK_JIT}".strip()
    return env
