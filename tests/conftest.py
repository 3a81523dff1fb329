"""Shared fixtures: one session-scoped local SparkSession with Delta, one real Kafka broker.

Tiers (DESIGN.md): tests/unit needs neither; tests/spark uses `spark`; tests/integration uses
`kafka_broker` (the real Apache Kafka broker started by the project's own code) and Delta.
"""
from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pipelines.job.spark_session import SessionOptions, build_session

    session = build_session(SessionOptions(
        app_name="binlog-cdc-tests", driver_memory="3g",
        warehouse_dir=str(tmp_path_factory.mktemp("warehouse"))))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real single-node KRaft broker on a free port, stopped after the session."""
    from libs.local.kafka_broker import BrokerConfig, free_port_pair, start, stop
    from libs.runtime.paths import KAFKA_JARS_DIR

    cfg = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=tmp_path_factory.mktemp("kafka"),
                       port=free_port_pair())
    start(cfg)
    yield cfg
    stop(cfg)


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"
