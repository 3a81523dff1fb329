"""Assemble stage: groupBy(source).applyInPandasWithState over the pure core in
libs/stages/assembly.py (WL#4162 boundary parser + assembler). This adapter only moves data
between pandas / GroupState and dicts (STYLE.md practice 7: the state has a named schema and is
never unpacked by position)."""
from __future__ import annotations

import time
import warnings
from typing import Iterator

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from libs.contracts.assembled import RecordKind
from libs.stream.assembler import STATE_FIELDS, Assembler, AssemblerState, IdleAction, idle_action
from libs.stream.assembler.file_spill import FileSpillStore
from libs.binlog.fastrec import fast_constructor
from libs.runtime.gc_pause import gc_paused
from libs.contracts.topic_tag import TopicKeys, tag_problems
from libs.stages.kafka_input import rejected_record
from libs.stages.counters import SourceCounters
from libs.stages.assembly import InputFrame, StageConfig, assemble_group, quarantine_record
from pipelines.job.schemas import ASSEMBLED_RECORD, ASSEMBLER_STATE, spark_schema
from pipelines.stages.pandas_records import chunked

# PySpark's applyInPandasWithState serializer concatenates the group's frames, some empty, and
# pandas 2.x warns about that on every micro-batch (pyspark/sql/pandas/serializers.py). Not ours
# to change, and pandas is pinned: this module is loaded in each worker before the serializer runs.
warnings.filterwarnings("ignore",
                        message="The behavior of DataFrame concatenation with empty or all-NA entries",
                        category=FutureWarning)


# One InputFrame per Kafka record, on the source's one core: built in half the time of a frozen
# dataclass' __init__ (0.9 us vs 1.9 us, libs/binlog/fastrec.py)
_make_input = fast_constructor(InputFrame)


def _input_frames(pdf: pd.DataFrame) -> list[InputFrame]:
    pdf = pdf.sort_values("kafka_offset", kind="stable")
    # Python lists, not Series: iterating a Series boxes each value as a numpy scalar
    columns = (pdf[name].tolist() for name in ("raw", "binlog_file", "binlog_pos", "kafka_partition",
                                               "kafka_offset", "record_kind"))
    return [_make_input(bytes(raw), file, None if pd.isna(pos) else int(pos), int(part), int(off), kind)
            for raw, file, pos, part, off, kind in zip(*columns)]


def _rejected(source: str, pdf: pd.DataFrame) -> tuple[list[dict], pd.DataFrame]:
    """The records that are not the pipeline's (decode stage's record_problem) as quarantine
    records, and the others: the source's assembler never sees the rejected ones, so the frames
    around them are applied as if they were not there (libs/stages/kafka_input.py)."""
    bad = pdf["record_problem"].notna()
    if not bad.any():
        return [], pdf
    rows = pdf[bad]
    columns = (rows[name].tolist() for name in ("record_problem", "raw", "binlog_file", "binlog_pos",
                                                "kafka_topic", "kafka_partition", "kafka_offset"))
    rejected = [rejected_record(source, problem, raw, file, None if pd.isna(pos) else int(pos), topic,
                                int(part), int(off))
                for problem, raw, file, pos, topic, part, off in zip(*columns)]
    return rejected, pdf[~bad]


def _tag_checked(pdf: pd.DataFrame, keys: TopicKeys) -> pd.DataFrame:
    """Each record's cdc_tag verified (libs/contracts/topic_tag.py; the decode stage's tag columns):
    one that does not verify gets that problem added to its record_problem, and _rejected quarantines
    it as a record that is not the pipeline's. One HMAC-SHA256 per record, in this Python pass."""
    tags = [t if isinstance(t, str) else None for t in pdf["tag"].tolist()]
    problems = tag_problems(keys, tags, pdf["tag_head"].tolist(), pdf["raw"].tolist())
    if not any(problems):
        return pdf
    before = pdf["record_problem"].tolist()
    merged = [b if p is None else p if not isinstance(b, str) else f"{b}; {p}"
              for b, p in zip(before, problems)]
    return pdf.assign(record_problem=pd.Series(merged, index=pdf.index, dtype=object))


def _with_topic(records: list[dict], pdf: pd.DataFrame) -> list[dict]:
    """Quarantine records of this batch's frames name their topic when the batch has one (the
    job subscribes to one topic; libs/stages/assembly.py's frames carry only partition and offset)."""
    quarantine = RecordKind.QUARANTINE  # looked up once, not per record
    untold = [r for r in records if r["kind"] == quarantine and r.get("kafka_topic") is None
              and r.get("kafka_offset") is not None]
    topics = pdf["kafka_topic"].unique() if untold else ()
    if len(topics) == 1:
        for r in untold:
            r["kafka_topic"] = topics[0]
    return records


def _oldest_kafka_ms(pdf: pd.DataFrame) -> int | None:
    oldest = pdf["kafka_ms"].min()
    return None if pd.isna(oldest) else int(oldest)


class AssembleFn:
    """The applyInPandasWithState function: picklable, configured, no globals."""

    def __init__(self, spill_root: str, config: StageConfig, idle_timeout_ms: int,
                 keys: TopicKeys | None = None):
        self.spill_root, self.config, self.idle_timeout_ms = spill_root, config, idle_timeout_ms
        self.keys = keys  # the topic secrets: every record's tag is verified (None: none is)
        self.schema = spark_schema(ASSEMBLED_RECORD)

    def __call__(self, key: tuple, pdfs: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        source, now = key[0], int(time.time())
        store = FileSpillStore(self.spill_root)
        row = dict(zip(STATE_FIELDS, state.get)) if state.exists else None
        with gc_paused():  # a batch of frames alive at once, no cycles (libs/runtime/gc_pause.py)
            if state.hasTimedOut:
                records, row = self._on_idle(source, row, store, now)
                oldest = None
            else:
                pdf = pd.concat(list(pdfs), ignore_index=True)
                if self.keys is not None:
                    pdf = _tag_checked(pdf, self.keys)
                rejected, good = _rejected(source, pdf)
                if good.empty and row is None:  # only rejected records (kafka:TOPIC:PARTITION): no state
                    yield from chunked(rejected, self.schema)
                    return
                records, row = assemble_group(source, row, _input_frames(good), store, self.config, now=now)
                records = _with_topic(records, pdf) + rejected
                oldest = _oldest_kafka_ms(pdf)
            # the driver's metrics of this source (libs/stages/counters.py): one small record
            records.append(SourceCounters.of(AssemblerState.from_row(row), store, oldest).record())
        state.update(tuple(row[name] for name in STATE_FIELDS))
        state.setTimeoutDuration(self.idle_timeout_ms)
        yield from chunked(records, self.schema)

    def _on_idle(self, source: str, row: dict, store, now: int) -> tuple[list[dict], dict]:
        """Idle source: its state times out (idle_source_timeout_s); an open transaction waits in
        the spill store unless JobConfig.assembly.open_trx_timeout_seconds says to quarantine it
        (never applied: DESIGN.md "Whole transactions")."""
        state = AssemblerState.from_row(row)
        if idle_action(state, now, self.config.assembler) is not IdleAction.QUARANTINE_OPEN:
            return [], row
        assembler = Assembler(source, store, self.config.assembler, state)
        out = assembler.expire_open()
        return [quarantine_record(q) for q in out.quarantined], assembler.state.to_row()


def assemble(frames_df: DataFrame, spill_root: str, config: StageConfig, idle_timeout_ms: int,
             keys: TopicKeys | None = None) -> DataFrame:
    """frames (decode stage) -> assembled records (schemas/assembled_record.avsc), keyed by source.
    `keys`: the topic secrets, with frames(..., tagged=True): records whose tag does not verify are
    quarantined (kind kafka_record)."""
    return frames_df.groupBy("source").applyInPandasWithState(
        AssembleFn(spill_root, config, idle_timeout_ms, keys),
        outputStructType=spark_schema(ASSEMBLED_RECORD),
        stateStructType=spark_schema(ASSEMBLER_STATE),
        outputMode="append",
        timeoutConf=GroupStateTimeout.ProcessingTimeTimeout,
    )
