"""cdc-replicate --catalog-schema on this machine (a subprocess, as a user runs it): its catalog
tables outlive the process (a Derby metastore under delta_root, pipelines/job/spark_session.py), so
a second run appends to the tables the first one made, nothing twice."""
import os
import subprocess
import sys
from collections import Counter

import pytest

from libs.runtime.paths import CORPUS_DIR, REPO_ROOT
from libs.tables.system_tables import CHANGES
from pipelines.ship import main as cdc_ship
from tests.integration.short_jobs import short_job_env

pytestmark = pytest.mark.integration

CLI = os.path.join(os.path.dirname(sys.executable), "cdc-replicate")
FILES = {"minimal": CORPUS_DIR / "mariadb/row_minimal/mdb-bin.000002",
         "full": CORPUS_DIR / "mariadb/row_full/mdb-bin.000001"}


def run_job(bootstrap: str, topic: str, root) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, "--bootstrap", bootstrap, "--topic", topic, "--delta-root", str(root / "delta"),
         "--catalog-schema", "spark_catalog.cdc", "--checkpoint", str(root / "ckpt"),
         "--conf", str(root / "job.yaml"), "--available-now"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, env=short_job_env())


def test_a_second_run_appends_to_the_catalog_tables_of_the_first(spark, kafka_broker, topic, tmp_path):
    (tmp_path / "job.yaml").write_text("tables: {from_source: false}"
                                       "  # no targets: change records to _cdc_changes\n")
    counts = {}
    for source, binlog in FILES.items():  # one source shipped per run
        assert cdc_ship(["--from-file", str(binlog), "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                         "--source", source]) == 0
        done = run_job(kafka_broker.bootstrap, topic, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "into spark_catalog.cdc" in done.stderr
        # The managed table's files, where the local metastore keeps them: <delta_root>/<schema>.db/<name>.
        changes = spark.read.format("delta").load(str(tmp_path / "delta" / "cdc.db" / CHANGES))
        counts[source] = Counter(r["source"] for r in changes.select("source").collect())
    assert set(counts["minimal"]) == {"minimal"} and counts["minimal"]["minimal"] > 0
    assert counts["full"]["minimal"] == counts["minimal"]["minimal"] and counts["full"]["full"] > 0
    keys = changes.groupBy("source", "trx_id", "change_seq").count().where("count > 1")
    assert keys.collect() == []
