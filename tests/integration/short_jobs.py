"""The environment of a test's job subprocess: runs of a few minutes at most, started cold.

Its JVM compiles with C1 only (`-XX:TieredStopAtLevel=1`, through Spark's launcher variable
SPARK_SUBMIT_OPTS: no "Picked up" line on the job's stderr). A cold job's first batch spends much
of its time compiling; C2's optimised code only pays in a JVM that runs for minutes. Measured on
this 2-core machine (one run each, session 33): the exactly-once kill test 224 -> 185 s, the
stopping tests 103 -> 79 s and 62 -> 54 s; session 34, alternated pairs: the killed run with a
200,000-row transaction open and its restart 99-101 -> 84-93 s, the onboarding round (100,000
snapshot rows, three runs) 173-181 -> 147-162 s. The same flag made the shared session's tests of
tests/spark twice as slow (a JVM that lives for the whole tier): that session keeps the JVM's
default. The product's JVM always keeps the default (tiered, C2).

C1 alone also shrinks the JVM's code cache to 48 MiB (tiered: 240 MiB). A job that applies more
than a few batches fills it, the JVM disables its compiler and runs on in the interpreter: in one
of two onboarding rounds the last run failed (a Py4JJavaError in a MERGE) right after the JVM
printed "CodeCache is full" (session 34). The cache keeps the tiered size.

It collects with the serial collector: G1's concurrent and parallel threads compete with the
job's own on 2 cores, for heaps a short run hardly fills. Alternated pairs, session 35,
tests/integration/replicate/test_one_line_stops.py (two cold job runs): G1 91.9 and 86.9 s,
serial 82.9 and 79.8 s."""
from __future__ import annotations

import os
from typing import Mapping

SHORT_JOB_JVM = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"


def short_job_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment by default) with SHORT_JOB_JVM added to SPARK_SUBMIT_OPTS."""
    env = dict(os.environ if base is None else base)
    env["SPARK_SUBMIT_OPTS"] = f"{env.get('SPARK_SUBMIT_OPTS', '')} {SHORT_JOB_JVM}".strip()
    return env
