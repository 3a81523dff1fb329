"""Records on the topic that are not the pipeline's (libs/stages/kafka_input.py) -> the real job (Kafka
broker, decode stage, assembler, rows stage, Delta), issue #38 items 7 and 8: each is kept in
_cdc_quarantine with its topic, partition and offset, the real binlog events around it are
applied as if it were not there, and a restart neither loops nor writes twice. Under
bad_input_policy: fail the job stops with one line naming the record's topic, partition and
offset, and naming that offset in accept_bad_input_through ({'kafka:TOPIC:PARTITION': OFFSET})
lets it go on. Before the issue, each of these shapes stopped the job at every restart (an ANSI
cast error, an executor NullPointerException, a TypeError in the assembler)."""
import dataclasses

import pytest
from confluent_kafka import Producer

from libs.stream.assembler import InMemorySpillStore
from libs.config.job import JobConfig
from libs.shipper.kafka_sink import ensure_topic
from libs.contracts.topic import KafkaRecord
from libs.stages.assembly import assemble_group, decode_segment
from libs.tables.system_tables import CHANGES
from pipelines.replicate import build_query
from tests.integration.replicate.test_poisoned_frame import run_until_stopped
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE
from tests.unit.stream.test_stream_assembly import frames_of

pytestmark = pytest.mark.integration
SOURCE = "s1"
FIRST_TRX = 7  # FDE, Previous_gtids, GTID, BEGIN, Table_map, Write_rows, Xid


def shipped(frame) -> dict:
    record = KafkaRecord(SOURCE, frame.file, frame.pos, frame.raw)
    return {"key": record.key(), "value": record.value, "headers": record.headers()}


def with_headers(frame, **changed) -> dict:
    """The frame's record with some headers changed (None: left out)."""
    record = shipped(frame)
    headers = dict(record["headers"]) | changed
    return record | {"headers": [(k, v) for k, v in headers.items() if v is not None]}


# (what a producer put on the topic, made from a real frame; what the quarantine row's reason
# says; its source). The real frame is a Write_rows event: a record fed to the assembler as a
# frame would change what is applied.
SHAPES = {
    "pos_not_a_number": (lambda f: with_headers(f, binlog_pos=b"abc"),
                         "binlog_pos header 'abc' is not a number", SOURCE),
    "epoch_not_a_number": (lambda f: with_headers(f, binlog_epoch=b"x"),
                           "binlog_epoch header 'x' is not a number", SOURCE),
    "third_party": (lambda f: {"key": None, "value": b'{"order": 17}', "headers": None},
                    "no key (the source id); no binlog_file header; no binlog_pos header; "
                    "value of 13 bytes is shorter than a binlog event header (19)", "kafka:{topic}:0"),
    "key_of_another_source": (lambda f: shipped(f) | {"key": b"s2"},
                              "key 's2' names another source than its source header 's1'", "s2"),
    "no_key": (lambda f: shipped(f) | {"key": None}, "no key (the source id)", SOURCE),
    "no_value": (lambda f: shipped(f) | {"value": None}, "no value", SOURCE),
    "unknown_kind": (lambda f: with_headers(f, record_kind=b"ddl"),
                     "record_kind header 'ddl' is not one of binlog, snapshot, format, heartbeat", SOURCE),
    "no_file": (lambda f: with_headers(f, binlog_file=None), "no binlog_file header", SOURCE),
    "no_pos": (lambda f: with_headers(f, binlog_pos=None), "no binlog_pos header", SOURCE),
    "huge": (lambda f: shipped(f) | {"value": f.raw + bytes(900_000)},
             "value of {size} bytes is not one binlog event (its header's event_size is {event_size})",
             SOURCE),
    "short": (lambda f: shipped(f) | {"value": f.raw[:7]},
              "value of 7 bytes is shorter than a binlog event header (19)", SOURCE),
}
WRITE_ROWS = 5  # of the first transaction


def produce(bootstrap: str, topic: str, frames, bad: dict[int, list[dict]]) -> dict[int, dict]:
    """The frames as the shipper writes them, the `bad` records before frame i; returns the bad
    records by their offset (one partition, a new topic: offsets count from 0)."""
    ensure_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    at, offset = {}, 0
    for i, frame in enumerate(frames):
        for record in bad.get(i, []):
            producer.produce(topic, partition=0, **record)
            at[offset], offset = record, offset + 1
        producer.produce(topic, partition=0, **shipped(frame))
        offset += 1
    assert producer.flush(30) == 0
    return at


def row_changes(frames) -> list[tuple]:
    """The oracle: the clean stream's row changes, by the pure assembler and rows stage."""
    records, _ = assemble_group(SOURCE, None, frames, InMemorySpillStore())
    return sorted((c["trx_end_pos"], c["binlog_pos"], c["change_seq"])
                  for r in records if r["kind"] == "segment" for c in decode_segment(r))


def applied_changes(spark, cfg: JobConfig) -> list[tuple]:
    rows = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGES}").collect()
    return sorted((r["trx_end_pos"], r["binlog_pos"], r["change_seq"]) for r in rows)


def run_once(spark, cfg: JobConfig) -> list[tuple]:
    """Run the job to its end; the changes it applied."""
    query = build_query(spark, cfg)
    query.awaitTermination()
    assert query.exception() is None
    return applied_changes(spark, cfg)


def quarantine_rows(spark, cfg: JobConfig) -> dict[int, dict]:
    rows = spark.read.format("delta").load(f"{cfg.delta_root}/_cdc_quarantine").collect()
    return {r["kafka_offset"]: r.asDict() for r in rows}


def test_records_that_are_not_the_pipelines_are_quarantined_and_the_events_around_them_applied(
        spark, kafka_broker, topic, tmp_path):
    frames = frames_of(str(MYSQL8_FILE))
    made = {name: make(frames[WRITE_ROWS]) for name, (make, _, _) in SHAPES.items()}
    names = list(SHAPES)  # inside a transaction (after its GTID and BEGIN), and between two
    bad = {FIRST_TRX + 2: [made[n] for n in names[:5]], FIRST_TRX + 5: [made[n] for n in names[5:]]}
    at = produce(kafka_broker.bootstrap, topic, frames, bad)
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True)

    applied = run_once(spark, cfg)  # one micro-batch: the bad records among the real events
    assert applied == row_changes(frames)  # every real change applied, nothing else
    quarantined = quarantine_rows(spark, cfg)
    assert sorted(quarantined) == sorted(at)  # every bad record, by its offset, nothing else
    offsets = {name: offset for offset, record in at.items() for name in names if made[name] is record}
    for name, (_, problem, source) in SHAPES.items():
        row = quarantined[offsets[name]]
        assert (row["kind"] == "kafka_record"
                and (row["kafka_topic"], row["kafka_partition"]) == (topic, 0)), row
        value = at[offsets[name]]["value"] or b""
        problem = problem.format(size=len(value), event_size=len(frames[WRITE_ROWS].raw))
        assert row["reason"] == f"topic {topic} partition 0 offset {offsets[name]}: {problem}", name
        assert row["source"] == source.format(topic=topic), name
        assert row["raw"] == value, name

    assert run_once(spark, cfg) == applied  # restarted: no loop, nothing twice
    assert quarantine_rows(spark, cfg) == quarantined


def test_fail_mode_names_the_records_kafka_position_and_accepting_its_offset_goes_on(
        spark, kafka_broker, topic, tmp_path):
    frames = frames_of(str(MYSQL8_FILE))
    third_party = SHAPES["third_party"][0](frames[0])
    forged_heartbeat = with_headers(frames[0], record_kind=b"heartbeat")
    forged_snapshot = with_headers(frames[0], record_kind=b"snapshot", binlog_file=b"mdb-bin.999999")
    at = produce(kafka_broker.bootstrap, topic, frames,
                 {FIRST_TRX: [third_party, with_headers(frames[0], binlog_pos=b"abc"), forged_heartbeat,
                              forged_snapshot]})
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, max_offsets_per_trigger=FIRST_TRX,
                    bad_input_policy="fail")  # batch 0: the first transaction; batch 1: the bad records

    line = str(run_until_stopped(spark, cfg))
    first = FIRST_TRX  # the third-party record: under its pseudo-source kafka:TOPIC:0, first by name
    assert "\n" not in line and line.startswith(
        f"stopped on bad input (bad_input_policy: fail): source kafka:{topic}:0, "
        f"topic {topic} partition 0 offset {first}, kafka_record: topic {topic} partition 0 offset {first}: "
        f"{SHAPES['third_party'][1]} (3 more in this batch).")
    assert f"accept_bad_input_through: {{'kafka:{topic}:0': {first}}}" in line
    # batch 0 applied, nothing of batch 1
    assert applied_changes(spark, cfg) == row_changes(frames[:FIRST_TRX])
    assert sorted(quarantine_rows(spark, cfg)) == sorted(at)  # kept before stopping

    partly = dataclasses.replace(cfg, accept_bad_input_through={f"kafka:{topic}:0": first + 1})
    line = str(run_until_stopped(spark, partly))  # the forged snapshot, first by the file it claims
    # the way past it is its offset, not the position it claims
    assert (f"source s1, mdb-bin.999999:4, topic {topic} partition 0 offset {first + 3}, "
            "bad_snapshot_record: " in line), line
    assert "(1 more in this batch). " in line and f"{{'kafka:{topic}:0': {first + 3}}}" in line, line

    accepted = dataclasses.replace(cfg, accept_bad_input_through={f"kafka:{topic}:0": max(at)})
    assert run_once(spark, accepted) == row_changes(frames)
    kinds = {o: r["kind"] for o, r in quarantine_rows(spark, cfg).items()}
    assert kinds == {first: "kafka_record", first + 1: "kafka_record", first + 2: "bad_heartbeat_record",
                     first + 3: "bad_snapshot_record"}
