"""Prometheus metrics of cdc-ship and cdc-replicate (issue #20 item 2), through the
prometheus_client library: one registry per process, served on 127.0.0.1:PORT/metrics when the
command is given a metrics port.

The values are the ones the commands already keep for their progress lines, read when a scrape
asks (a custom collector): nothing is counted twice and the shipper's per-event loop pays
nothing for them. Times are exported as Unix seconds (`..._as_of_seconds`), as Prometheus does
for timestamps: the age is `time() - metric` in PromQL.

    cdc-ship       cdc_ship_events_total, cdc_ship_heartbeats_total, cdc_ship_reconnects_total,
                   cdc_ship_commit_to_kafka_lag_seconds (publish time - the event's commit time),
                   cdc_ship_lag_bytes (server binlog end - shipped position),
                   cdc_ship_caught_up_as_of_seconds (last heartbeat published)
    cdc-replicate  cdc_batches_total, cdc_input_records_total,
                   cdc_kafka_to_delta_lag_seconds{source} (now - oldest Kafka record of the source
                   read and not yet visible in Delta; none pending: its last batch's, 0 once caught up),
                   cdc_commit_to_delta_lag_seconds{source,table} (the same for the table's source
                   commits; libs/runtime/lag_gauge.py),
                   cdc_caught_up_as_of_seconds{source}, cdc_quarantined_total{source},
                   cdc_applied_changes_total{table,how} (row changes applied to the Delta table:
                   how="folded" per row in Arrow, libs/apply/fold.py; "replayed" change by change),
                   cdc_ignorable_events_total{source}, cdc_dummy_events_total{source},
                   cdc_spilled_bytes_total{source} (written to the spill store, ever),
                   cdc_spill_held_bytes{source} (held in it now by open and XA-prepared transactions)
"""
from __future__ import annotations

from typing import Callable, Iterable

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


class ReadAtScrape(Collector):
    """A collector whose metric families are built by `collect_fn` when a scrape asks."""

    def __init__(self, collect_fn: Callable[[], Iterable]):
        self.collect_fn = collect_fn

    def collect(self):
        return list(self.collect_fn())


def serve(collect_fn: Callable[[], Iterable], port: int, addr: str = "127.0.0.1") -> CollectorRegistry:
    """Serve the families `collect_fn` builds on http://addr:port/metrics (a daemon thread)."""
    registry = CollectorRegistry()
    registry.register(ReadAtScrape(collect_fn))
    start_http_server(port, addr=addr, registry=registry)
    return registry


def metric(kind: str, name: str, doc: str, value: float | None):
    """A family of one sample (kind "counter" or "gauge"); a gauge without a value yet (None)
    has no sample: absent, not 0."""
    family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, doc)
    if value is not None:
        family.add_metric([], value)
    return family


def labelled(kind: str, name: str, doc: str, labels: tuple[str, ...], values: dict[tuple, float]):
    """A family of one sample per label-value tuple of `values`."""
    family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, doc, labels=list(labels))
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family
