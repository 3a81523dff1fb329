"""One Delta append or MERGE timed with and without Delta's txn identifiers and with a commit
mark (libs/tables/commit_marks.py), counting the "Compute snapshot" jobs (state reconstruction) each
one ran (bench/README.md "Session 7").

    .venv/bin/python bench/append_marks.py
"""
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines.job.spark_session import SessionOptions, build_session
from bench.bench_support import spark_ui
from pyspark.sql import functions as F
from delta.tables import DeltaTable
spark = build_session(SessionOptions(app_name="txn", ui=True))
root = tempfile.mkdtemp()
path = f"{root}/t"
spark.range(0, 5000).withColumn("v", F.lit("x")).write.format("delta").save(path)
def snapshot_jobs():
    return sum(1 for j in spark_ui(spark, "/jobs")
               if "Compute snapshot" in (j.get("description") or "") + j.get("name", ""))
def merge(session, n, conf):
    for k, v in conf.items():
        session.conf.set(k, v)
    src = session.range(n * 10, n * 10 + 2000).withColumn("v", F.lit(f"y{n}"))
    (DeltaTable.forPath(session, path).alias("t").merge(src.alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    for k in conf:
        session.conf.unset(k)
def append(n, opts):
    w = spark.range(n, n + 100).withColumn("v", F.lit("a")).write.format("delta").mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    w.save(path)
cases = [
    ("append, no txn", lambda n: append(n, {})),
    ("append, txnAppId", lambda n: append(n, {"txnAppId": "app", "txnVersion": str(n)})),
    ("append, userMetadata", lambda n: append(n, {"userMetadata": f"app:{n}"})),
    ("merge, no txn", lambda n: merge(spark, n, {})),
    ("merge, txn confs", lambda n: merge(spark, n, {"spark.databricks.delta.write.txnAppId": "m",
                                                    "spark.databricks.delta.write.txnVersion": str(n)})),
    ("merge, userMetadata conf",
     lambda n: merge(spark, n, {"spark.databricks.delta.commitInfo.userMetadata": f"m:{n}"})),
]
n = 1
for rnd in range(3):
    for name, fn in cases:
        before = snapshot_jobs()
        t0 = time.perf_counter()
        fn(n)
        n += 1
        time.sleep(0.3)
        print(f"round {rnd} {name:26s} {time.perf_counter() - t0 - 0.3:5.2f} s, "
              f"snapshot jobs {snapshot_jobs() - before}")
print(spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation", "userMetadata")
      .limit(3).collect())
spark.stop()
