"""Issue #4 proof: kill cdc-replicate (SIGKILL, a subprocess) while a transaction bigger than a
micro-batch is open and spilled, restart it from its checkpoint, drain with --available-now:
the change records are the oracle's - same set, nothing twice, nothing missing.

The transaction: big_trx's file 1, ONE transaction of 200,000 row changes in 1,178 rows events
(corpus README) in 1,207 frames, read 700 per micro-batch: open after batch 0, spilled."""
import collections
import os
import subprocess
import sys
import time
from urllib.parse import unquote

import pytest

from libs.runtime.paths import CORPUS_DIR, REPO_ROOT
from libs.stream.assembler.release_log import ReleaseLog
from libs.tables.system_tables import CHANGES, QUARANTINE
from pipelines.stages.sink import RELEASES_DIR
from pipelines.ship import main as cdc_ship
from tests.integration.process_tree import sigkill_tree
from tests.integration.replicate.binlog_oracle import read_oracle
from tests.integration.replicate.corpus_files import our_transactions
from tests.integration.short_jobs import short_job_env

pytestmark = pytest.mark.integration

BIG_TRX = CORPUS_DIR / "mariadb/big_trx/mdb-bin.000009"
CLI = os.path.join(os.path.dirname(sys.executable), "cdc-replicate")


def replicate(bootstrap, topic, root, log) -> subprocess.Popen:
    return subprocess.Popen(
        [CLI, "--bootstrap", bootstrap, "--topic", topic, "--delta-root", str(root / "delta"),
         "--checkpoint", str(root / "ckpt"), "--conf", str(root / "job.yaml"), "--available-now"],
        cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=short_job_env())


def spilled_chunks(root) -> int:
    return sum(len(files) for _, _, files in os.walk(root / "ckpt" / "spill"))


def test_sigkill_while_a_spilled_transaction_is_open_then_restart_gives_the_oracles_changes(
        spark, kafka_broker, topic, tmp_path):
    assert cdc_ship(["--from-file", str(BIG_TRX), "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                     "--source", "big", "--progress", "3600"]) == 0
    (tmp_path / "job.yaml").write_text("max_offsets_per_trigger: 700\ntables: {from_source: false}"
                                       "  # no targets: change records to _cdc_changes\n")
    log_path = tmp_path / "replicate.log"
    started = time.monotonic()
    with open(log_path, "wb") as log:
        first = replicate(kafka_broker.bootstrap, topic, tmp_path, log)
        commits = tmp_path / "ckpt" / "query" / "commits"
        # batch 0 committed: the transaction's first 700 frames are spilled, it is still open
        while not (commits / "0").exists():
            assert first.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() - started < 300, "batch 0 never committed"
            time.sleep(0.2)
        chunks_at_kill = spilled_chunks(tmp_path)
        sigkill_tree(first)  # the JVM and its Python workers too (their daemon has its own group)
        killed = time.monotonic()
        assert chunks_at_kill > 0 and not (commits / "1").exists()
        second = replicate(kafka_broker.bootstrap, topic, tmp_path, log)
        assert second.wait(timeout=600) == 0, log_path.read_text()[-3000:]
    print(f"\nkill/restart: killed after {killed - started:.1f}s with {chunks_at_kill} spilled chunk(s); "
          f"restart drained in {time.monotonic() - killed:.1f}s")

    # No spill chunk leaks: what is left on disk is what the last batches released, recorded for
    # deletion by the next batch (libs/stream/assembler/release_log.py).
    pending = {(r.source, r.trx_key) for _, releases in ReleaseLog(tmp_path / "ckpt" / RELEASES_DIR)
               .pending_before(2 ** 62) for r in releases}
    left = {(unquote(d.parent.name), unquote(d.name)) for d in (tmp_path / "ckpt" / "spill").glob("*/*")}
    assert pending and left <= pending

    changes = [r.asDict() for r in spark.read.format("delta").load(str(tmp_path / "delta" / CHANGES))
               .select("trx_id", "trx_end_pos", "gtid", "change_seq", "database", "table", "op", "statement")
               .collect()]
    # nothing twice
    twice = [k for k, n in collections.Counter((c["trx_id"], c["change_seq"]) for c in changes).items()
             if n > 1]
    assert twice == []
    # same set, nothing missing: the server decoder's transactions, every row in order
    oracle = read_oracle(str(BIG_TRX))
    expected = {t.end: (t.gtid, t.changes) for t in oracle.transactions if t.changes}
    assert sum(len(c) for _, c in expected.values()) >= 200_000
    assert our_transactions(changes) == expected
    assert spark.read.format("delta").load(str(tmp_path / "delta" / QUARANTINE)).count() == 0
