"""Lag where a user looks (issue #20 item 2): a micro-batch whose apply stalls 60 s shows a
Kafka -> Delta lag of at least 60 s in the streaming query's progress, on the progress line and
on the job's Prometheus endpoint, per source; the endpoint also shows the assembler's counts
(ignorable and dummy events, spilled bytes) of each source. Scraped during the stall, the lag
grows (issue #39 item 5)."""
from __future__ import annotations

import dataclasses
import json
import re
import socket
import struct
import time
import urllib.request
import zlib

import pytest
from prometheus_client.parser import text_string_to_metric_families

from libs.stream.assembler import InMemorySpillStore, AssemblerState
from libs.binlog.constants import EventType
from libs.binlog.dummy import make_dummy
from libs.config.job import JobConfig
from libs.apply.lag import INPUT_METRICS, kafka_to_delta_lag_s
from libs.stages.counters import SourceCounters
from libs.stages.assembly import assemble_group
from pipelines.replicate import build_query, make_sink, watch_metrics
from tests.integration.replicate.test_poisoned_frame import produce
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE
from tests.unit.stream.test_stream_assembly import CORPUS, frames_of

pytestmark = pytest.mark.integration

STALL_S = 20  # the lag it shows is at least this: longer proves no more
MARIADB_FILE = f"{CORPUS}/row_full/mdb-bin.000001"


def as_ignorable(raw: bytes) -> bytes:
    """The same-size frame as an unknown type (99) flagged LOG_EVENT_IGNORABLE_F, its CRC32 redone."""
    out = bytearray(raw)
    out[4] = 99
    struct.pack_into("<H", out, 17, struct.unpack_from("<H", out, 17)[0] | 0x80)
    struct.pack_into("<I", out, len(out) - 4, zlib.crc32(out[:-4]))
    return bytes(out)


def mariadb_with_placeholders():
    """The MariaDB corpus file as a low-capability replica would read it: every Annotate_rows a
    same-size dummy, Gtid_list and Binlog_checkpoint ignorable events; cut before the last Xid,
    so its transaction stays open (spilled) at the end. Returns (frames, ignorable, dummies)."""
    frames = frames_of(MARIADB_FILE)
    last_xid = max(i for i, f in enumerate(frames) if f.raw[4] == EventType.XID)
    frames, out, ignorable, dummies = frames[:last_xid], [], 0, 0
    for f in frames:
        if f.raw[4] == EventType.ANNOTATE_ROWS:
            f, dummies = dataclasses.replace(f, raw=make_dummy(f.raw, checksum=True)), dummies + 1
        elif f.raw[4] in (EventType.GTID_LIST, EventType.BINLOG_CHECKPOINT):
            f, ignorable = dataclasses.replace(f, raw=as_ignorable(f.raw)), ignorable + 1
        out.append(f)
    return out, ignorable, dummies


def by_source(samples) -> dict[str, float]:
    return {labels["source"]: value for labels, value in samples}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, list]:
    """name -> [(labels, value)] of every sample on the endpoint."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


class StalledOnce:
    """Holds up the first batch `seconds` once the sink has counted what it read (JobMetrics.read:
    from then on its lag gauge grows), before it writes anything; scrapes the metrics endpoint 1 s
    and 5 s into the stall (the endpoint serves from its own thread)."""

    SCRAPE_AT = (1, 5)

    def __init__(self, metrics, seconds: float, port: int):
        self.read, self.seconds, self.port = metrics.read, seconds, port
        self.scrapes: list[dict[str, float]] = []  # the Kafka -> Delta lags per source, per scrape
        metrics.read = self

    def __call__(self, batch_id, counters):
        self.read(batch_id, counters)
        if self.scrapes:
            return
        start = time.monotonic()
        for at in self.SCRAPE_AT:
            time.sleep(max(0.0, start + at - time.monotonic()))
            self.scrapes.append(by_source(scrape(self.port).get("cdc_kafka_to_delta_lag_seconds", [])))
        time.sleep(max(0.0, start + self.seconds - time.monotonic()))


def test_a_stalled_apply_shows_its_lag_in_the_progress_and_on_the_metrics_endpoint(
        spark, kafka_broker, topic, tmp_path, capsys):
    mysql8 = frames_of(str(MYSQL8_FILE))
    mariadb, ignorable, dummies = mariadb_with_placeholders()
    assert ignorable == 2 and dummies > 50
    produce(kafka_broker.bootstrap, topic, mysql8, source="mysql8")
    produce(kafka_broker.bootstrap, topic, mariadb, source="mariadb")
    port = free_port()
    # one frame per spill chunk: chunks do not depend on how the topic is cut into batches
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, metrics_port=port,
                    assembly={"chunk_max_events": 1})
    metrics = watch_metrics(spark, cfg)
    stall = StalledOnce(metrics, STALL_S, port)
    try:
        query = build_query(spark, cfg, sink=make_sink(cfg, None, metrics=metrics))
        query.awaitTermination()
        assert query.exception() is None
        deadline = time.monotonic() + 30  # the listener's events arrive asynchronously
        while metrics.kafka_to_delta_s is None and time.monotonic() < deadline:
            time.sleep(0.2)
        stalled = json.loads(query.recentProgress[0].json)
        assert stalled["observedMetrics"][INPUT_METRICS]["records"] == len(mysql8) + len(mariadb)
        lag = kafka_to_delta_lag_s(stalled)
        assert lag >= STALL_S, stalled
        first, then = stall.scrapes  # during the stall: the gauge grows with the clock
        assert set(first) == set(then) == {"mysql8", "mariadb"}, stall.scrapes
        for source in first:
            assert then[source] - first[source] >= 3, stall.scrapes
        scraped = scrape(port)
        lags = by_source(scraped["cdc_kafka_to_delta_lag_seconds"])
        assert set(lags) == {"mysql8", "mariadb"} and min(lags.values()) >= STALL_S, lags
        assert max(lags.values()) == pytest.approx(lag)  # the oldest source's is the batch's
        assert scraped["cdc_input_records_total"][0][1] == len(mysql8) + len(mariadb)
        # the assembler's counts as the pure core counts them on the same frames, at the same
        # Kafka offsets (they are in the spilled frames: one partition, mysql8's records first)
        expected, at_offsets = {}, [dataclasses.replace(f, kafka_offset=len(mysql8) + i)
                                    for i, f in enumerate(mariadb)]
        for source, frames in (("mysql8", mysql8), ("mariadb", at_offsets)):
            store = InMemorySpillStore()
            _, row = assemble_group(source, None, frames, store, cfg.assembly.stage_config(cfg.decode_limits))
            expected[source] = SourceCounters.of(AssemblerState.from_row(row), store, None)
        assert (expected["mariadb"].ignorable_events == ignorable
                and expected["mariadb"].dummy_events == dummies)
        assert expected["mariadb"].spill_bytes > 0  # the open transaction's frames
        for name, field in (("cdc_ignorable_events_total", "ignorable_events"),
                            ("cdc_dummy_events_total", "dummy_events"),
                            ("cdc_spilled_bytes_total", "spilled_bytes_total"),
                            ("cdc_spill_held_bytes", "spill_bytes")):
            assert by_source(scraped[name]) == {s: getattr(c, field) for s, c in expected.items()}, name
    finally:
        spark.streams.removeListener(metrics.listener)
    line = [l for l in capsys.readouterr().err.splitlines()  # noqa: E741 - l: a line of stderr
            if l.startswith("cdc-replicate: batch 0:")]
    assert line and "Kafka -> Delta" in line[0], line
    # the Spark jobs the batch submitted (pipelines/job/batch_jobs.py): read, so some
    jobs = re.search(r"; (\d+) Spark jobs; steps \(s\): ", line[0])
    assert jobs and int(jobs.group(1)) > 0, line
