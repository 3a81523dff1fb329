"""Lag where a user looks (issue #20 item 2): a micro-batch whose apply stalls 60 s shows a
Kafka -> Delta lag of at least 60 s in the streaming query's progress, on the progress line and
on the job's Prometheus endpoint; the shipper's endpoint shows what it published."""
from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from libs.config import JobConfig
from libs.lag import INPUT_METRICS, kafka_to_delta_lag_s
from pipelines.replicate import build_query, make_sink, watch_metrics
from tests.integration.replicate.test_poisoned_frame import produce
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE
from tests.unit.stream.test_stream_assembly import frames_of

pytestmark = pytest.mark.integration

STALL_S = 60


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
    """The foreachBatch sink, held up `seconds` before the first batch writes anything."""

    def __init__(self, sink, seconds: float):
        self.sink, self.seconds, self.stalled = sink, seconds, False

    def __call__(self, batch_df, batch_id):
        if not self.stalled:
            self.stalled = True
            time.sleep(self.seconds)
        return self.sink(batch_df, batch_id)


def test_a_stalled_apply_shows_its_lag_in_the_progress_and_on_the_metrics_endpoint(
        spark, kafka_broker, topic, tmp_path, capsys):
    produce(kafka_broker.bootstrap, topic, frames_of(str(MYSQL8_FILE)))
    port = free_port()
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, metrics_port=port)
    metrics = watch_metrics(spark, cfg)
    try:
        query = build_query(spark, cfg, sink=StalledOnce(make_sink(cfg, None, metrics=metrics), STALL_S))
        query.awaitTermination()
        assert query.exception() is None
        deadline = time.monotonic() + 30  # the listener's events arrive asynchronously
        while metrics.kafka_to_delta_s is None and time.monotonic() < deadline:
            time.sleep(0.2)
        stalled = json.loads(query.recentProgress[0].json)
        assert stalled["observedMetrics"][INPUT_METRICS]["records"] == len(frames_of(str(MYSQL8_FILE)))
        lag = kafka_to_delta_lag_s(stalled)
        assert lag >= STALL_S, stalled
        (sample,) = scrape(port)["cdc_kafka_to_delta_lag_seconds"]
        assert sample[1] >= STALL_S and sample[1] == pytest.approx(lag)
        assert scrape(port)["cdc_input_records_total"][0][1] == len(frames_of(str(MYSQL8_FILE)))
    finally:
        spark.streams.removeListener(metrics.listener)
    line = [l for l in capsys.readouterr().err.splitlines() if l.startswith("cdc-replicate: batch 0:")]
    assert line and "Kafka -> Delta" in line[0], line
