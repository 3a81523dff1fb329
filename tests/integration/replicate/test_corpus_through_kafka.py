"""Issue #4 proof: every binlog file of the corpus -> cdc-ship -> one Kafka topic (one source
id per file: independent streams) -> ONE available-now cdc-replicate query (decode pandas_udf,
applyInPandasWithState assembler, parallel rows) -> Delta change records and quarantine, each
file compared with its server decoder's text (binlog_oracle.py): transactions (count, end
positions, MariaDB GTIDs), row changes per table in order with their Annotate_rows statement,
statement texts, and the frames a replica must not apply (quarantine positions)."""
import collections
import time

import pytest
from confluent_kafka import Producer

from libs.binlog import TruncatedError, iter_frames
from libs.config.job import JobConfig
from libs.runtime.paths import CORPUS_DIR
from pipelines.replicate import build_query
from libs.tables.system_tables import CHANGES, QUARANTINE
from libs.shipper.file_source import Inputs, iter_file_events
from libs.shipper.kafka_sink import MAX_EVENT_BYTES, ensure_topic
from libs.contracts.topic import KafkaRecord
from tests.integration.replicate.corpus_files import (
    EXCLUDED, NOT_SHIPPABLE, REFUSED_BY_SHIPPER, corpus_binlogs, differences, oracle_of, source_id,
)

pytestmark = pytest.mark.integration

# MySQL's deliberately broken test files (corpus README section 4): where the server's decoder
# gave up must be in quarantine. The two truncated files end in a partial event that is never
# published (the shipper refuses the file there, naming the position; frames_to_ship publishes
# only the complete frames before it): no change and no quarantine row comes of them.
BROKEN = ("binlog_no_fd_event.000001", "bug40482-bin.000001", "corrupt-relay-bin.000624")
TRUNCATED = ("binlog_truncated_event.000001", "binlog_truncated_prev_gtid_event.000001")


def ship_all(bootstrap: str, topic: str, files: list[str]) -> None:
    """The shipper's file reader (what cdc-ship --from-file reads) and the Kafka record contract
    (libs/contracts/topic.py), one source id per file, through one producer: the CLI's per-call
    producer set-up and resume lookup cost seconds per file."""
    ensure_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 20, "message.max.bytes": MAX_EVENT_BYTES + (1 << 20)})
    for rel in files:
        source = source_id(rel)
        for name, pos, frame in frames_to_ship(rel):
            record = KafkaRecord(source, name, pos, frame)
            producer.produce(topic, value=record.value, key=record.key(), partition=0,
                             headers=record.headers())
            producer.poll(0)
    assert producer.flush(60) == 0


def frames_to_ship(rel: str):
    """(file, pos, frame) as cdc-ship publishes them; for a file the shipper refuses, its
    complete frames unverified (as a producer that does not check them would publish)."""
    path = CORPUS_DIR / rel
    if rel not in REFUSED_BY_SHIPPER:
        yield from iter_file_events(Inputs([path]), source_id(rel))
        return
    try:
        for pos, frame in iter_frames(path.read_bytes()):
            yield path.name, pos, frame
    except TruncatedError:
        pass  # the partial last event: never published


@pytest.fixture(scope="module")
def replicated(spark, kafka_broker, tmp_path_factory):
    """Ship every file, run the query once; (files, changes by source, quarantine by source)."""
    from uuid import uuid4

    topic, root = f"corpus-{uuid4().hex[:8]}", tmp_path_factory.mktemp("corpus")
    files = [rel for rel in corpus_binlogs() if rel not in EXCLUDED and rel not in NOT_SHIPPABLE]
    started = time.monotonic()
    ship_all(kafka_broker.bootstrap, topic, files)
    shipped = time.monotonic()
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(root / "delta"),
                    checkpoint=str(root / "ckpt"), available_now=True, kafka_read_tasks=4)
    # kafka_read_tasks: the topic's one partition read as 4 tasks, so each source's records reach
    # the assemble stage from several tasks, in no set order (it orders them by offset).
    # One micro-batch (each costs ~50 s here); transactions straddling batches: test_kill_and_restart.
    query = build_query(spark, cfg)
    query.awaitTermination()
    assert query.exception() is None
    batches = [(p["batchId"], p["numInputRows"], p["durationMs"]) for p in query.recentProgress]
    cols = ["source", "trx_id", "trx_end_pos", "gtid", "change_seq", "database", "table", "op", "statement"]
    changes = collections.defaultdict(list)
    for row in spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGES}").select(*cols).collect():
        changes[row["source"]].append(row.asDict())
    quarantine = collections.defaultdict(list)
    for row in spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").select(
            "source", "binlog_pos", "kind", "reason").collect():
        quarantine[row["source"]].append(row.asDict())
    print(f"\ncorpus through Kafka: {len(files)} files shipped in {shipped - started:.1f}s, "
          f"replicated in {time.monotonic() - shipped:.1f}s; (batch, rows, ms): {batches}")
    return files, changes, quarantine


def test_every_corpus_file_gives_its_oracles_transactions_and_quarantine(replicated):
    files, changes, quarantine = replicated
    assert len(files) > 100
    problems = []
    for rel in files:
        src = source_id(rel)
        problems += differences(rel, oracle_of(rel), changes.get(src, []),
                                {q["binlog_pos"] for q in quarantine.get(src, [])})
    assert problems == []
    compared = sum(len(t.changes) for rel in files for t in oracle_of(rel).transactions)
    assert compared > 15_000  # the comparison covered the corpus' row changes, not nothing


def test_nothing_twice(replicated):
    _, changes, _ = replicated
    seen = collections.Counter((src, c["trx_id"], c["change_seq"]) for src, cs in changes.items() for c in cs)
    assert [k for k, n in seen.items() if n > 1] == []


def test_deliberately_broken_files_are_quarantined_where_the_server_decoder_stopped(replicated):
    files, changes, quarantine = replicated
    broken = [rel for rel in files if rel.endswith(BROKEN)]
    assert len(broken) == 2 * len(BROKEN)  # the 5.7 and 8.0 copies
    for rel in broken:
        stopped = oracle_of(rel).stopped_at
        where = {q["binlog_pos"]: q for q in quarantine[source_id(rel)]}
        assert stopped in where, (rel, stopped, sorted(where))
        assert (f"file {rel.rsplit('/', 1)[1]}" in where[stopped]["reason"]
                or where[stopped]["kind"] == "boundary")
    for rel in (r for r in files if r.endswith(TRUNCATED)):
        assert not changes.get(source_id(rel)) and not quarantine.get(source_id(rel))
