"""cdc-ship's Prometheus metrics (libs/runtime/metrics.py): what its progress line and stats already
hold, read at scrape time."""
from __future__ import annotations

from libs.runtime.metrics import labelled

from libs.shipper.progress import Progress


def families(source: str, progress: Progress, stats) -> list:
    """The metric families of one shipper (`stats`: shipper.ShipStats)."""
    def of(value):
        return {} if value is None else {(source,): value}
    return [
        labelled("counter", "cdc_ship_events", "Binlog events published to Kafka", ("source",),
                 of(progress.total)),
        labelled("counter", "cdc_ship_heartbeats", "Heartbeat records published (caught up with the server)",
                 ("source",), of(stats.heartbeats)),
        labelled("counter", "cdc_ship_reconnects", "Reconnections to the server", ("source",),
                 of(stats.reconnects)),
        labelled("gauge", "cdc_ship_commit_to_kafka_lag_seconds",
                 "Publish time minus the commit time of the last event published", ("source",),
                 of(progress.commit_to_kafka_s)),
        labelled("gauge", "cdc_ship_lag_bytes", "Bytes of the server's binlog not yet shipped",
                 ("source",), of(progress.last_lag_bytes)),
        labelled("gauge", "cdc_ship_caught_up_as_of_seconds",
                 "Unix time of the last heartbeat published: the server had logged nothing more",
                 ("source",), of(progress.caught_up_as_of)),
    ]
