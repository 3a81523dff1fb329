"""The sink's contract with the apply stage: what pipelines/stages/sink.py calls of it, declared
once, so neither side probes the other."""
from __future__ import annotations

from typing import Mapping, Protocol, Sequence

from pyspark.sql import DataFrame, SparkSession

from libs.contracts.change import Change
from libs.stages.assembly import DdlEvent
from libs.targets.decoding import DecodeHints
from libs.apply.lag import AppliedBatch
from pipelines.apply.snapshot_fusion import SnapshotFusion


class ApplyStage(Protocol):
    """What the sink asks of the apply stage (pipelines/apply/applier.py DeltaApplier), in the
    order of one batch: prepare_batch, plan_fusion, then the call (or record_caught_up for a batch
    without changes); last_batch once the batch is committed. Without an apply stage (None) the
    sink writes the change records as they are (_cdc_changes)."""

    decode_hints: DecodeHints  # what the declarations tell the rows stage (libs/targets/decoding.py)
    last_batch: AppliedBatch   # the last batch's lag and counts, for the metrics

    def prepare_batch(self, spark: SparkSession, truncates: Sequence[Change], batch_id: int,
                      ddl: Sequence[DdlEvent] = ()) -> DecodeHints: ...

    def plan_fusion(self, spark: SparkSession, batch_id: int, chunks: list,
                    batch_has_ddl: bool) -> SnapshotFusion | None: ...

    def __call__(self, changes_df: DataFrame, batch_id: int, caught_up: Mapping[str, int] | None = None,
                 fused: SnapshotFusion | None = None) -> dict: ...

    def record_caught_up(self, spark: SparkSession, batch_id: int, caught_up: Mapping[str, int]) -> None: ...


class ForwardingApplyStage:
    """An apply stage that hands every step to `inner`: what a wrapper that watches the batches
    (pipelines/embedded.py, bench/) derives from, overriding only the steps it watches."""

    def __init__(self, inner: ApplyStage):
        self.inner = inner

    @property
    def decode_hints(self) -> DecodeHints:
        return self.inner.decode_hints

    @property
    def last_batch(self) -> AppliedBatch:
        return self.inner.last_batch

    def prepare_batch(self, spark: SparkSession, truncates: Sequence[Change], batch_id: int,
                      ddl: Sequence[DdlEvent] = ()) -> DecodeHints:
        return self.inner.prepare_batch(spark, truncates, batch_id, ddl)

    def plan_fusion(self, spark: SparkSession, batch_id: int, chunks: list,
                    batch_has_ddl: bool) -> SnapshotFusion | None:
        return self.inner.plan_fusion(spark, batch_id, chunks, batch_has_ddl)

    def __call__(self, changes_df: DataFrame, batch_id: int, caught_up: Mapping[str, int] | None = None,
                 fused: SnapshotFusion | None = None) -> dict:
        return self.inner(changes_df, batch_id, caught_up, fused)

    def record_caught_up(self, spark: SparkSession, batch_id: int, caught_up: Mapping[str, int]) -> None:
        self.inner.record_caught_up(spark, batch_id, caught_up)
