"""Snapshot records -> what the stream stages carry (no Spark).

assemble stage: every snapshot record leaves as one assembled record of kind `snapshot`
  (schemas/assembled_record.avsc) with its head decoded (kind, table, chunk) and its bytes as
  the one frame of a segment, so the rows stage spreads chunks over its tasks like segments, and
  an undecodable record is quarantined with its bytes like a failed transaction's frames.
rows stage: `change_records` turns one into change records (schemas/change_record.avsc):
  table  -> one `truncate` (the table's content is replaced from here on; statement = the
            source's SHOW CREATE TABLE),
  rows   -> one `snapshot` per row (an insert that replaces a row with the same key), statement
            = the SELECT that read it; the server's bytes converted here, on the executors, by
            the binlog path's rules (SnapshotRecord.row_images; change_batch: the same as Arrow columns),
  begin / table_end / end -> none (they order the run; the shipper needs them to resume).
Every record of a run is at the run's consistent position P: trx_file/trx_end_pos and
binlog_file/binlog_pos = P, commit_ts = the snapshot's time, trx_id = one per (run, table).
change_seq: 0 for the truncate, (chunk_no + 1) * 2^20 + row for the rows, so the truncate sorts
first and a row id (source, trx_id, change_seq) is unique.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from libs.contracts.assembled import RecordKind
from libs.contracts.change import Op
from libs.stream.assembler.change_records import ROWS_PER_EVENT
from libs.snapshot.chunk_images import after_images

from libs.snapshot.record import ROWS, TABLE, SnapshotRecord

TRUNCATE, SNAPSHOT_OP = Op.TRUNCATE.value, Op.SNAPSHOT.value  # the wire's text (change_record.avsc)


def assembled_record(source: str, raw: bytes, file: str | None, pos: int | None,
                     kafka_partition: int | None, kafka_offset: int | None) -> dict:
    """The assemble stage's record for one snapshot record; a record whose head does not decode
    is a quarantine record (kind bad_snapshot_record), kept with its bytes."""
    where = {"source": source, "binlog_file": file, "binlog_pos": pos,
             "kafka_partition": kafka_partition, "kafka_offset": kafka_offset}
    try:
        head = SnapshotRecord.decode(raw, head_only=True)
    except ValueError as err:
        return {"kind": RecordKind.QUARANTINE.value, **where, "type_code": None,
                "q_kind": "bad_snapshot_record", "reason": f"{err} (source {source}, offset {kafka_offset})",
                "raw": raw}
    return {"kind": RecordKind.SNAPSHOT.value, **where, "snapshot_kind": head.kind,
            "snapshot_rows": head.row_count if head.kind == ROWS else None,
            "snapshot_table": head.qualified_table if head.table is not None else None,
            "trx_id": head.trx_id if head.table is not None else f"snapshot:{head.snapshot_id}",
            "gtid": head.gtid, "server_id": head.server_id, "commit_ts": head.snapshot_ts,
            "trx_file": head.binlog_file, "trx_end_pos": head.binlog_pos, "segment_no": head.chunk_no or 0,
            "frames": [{"file": file, "pos": pos, "raw": raw, "event_index": 0, "context": False}]}


def change_records(source: str, record: SnapshotRecord) -> list[dict]:
    """The change records of one decoded snapshot record (module docstring)."""
    if record.kind not in (TABLE, ROWS):
        return []
    base = {"source": source, "trx_id": record.trx_id, "gtid": record.gtid, "xid": None,
            "server_id": record.server_id, "commit_ts": record.snapshot_ts, "trx_file": record.binlog_file,
            "trx_end_pos": record.binlog_pos, "database": record.database, "table": record.table,
            "before": None, "binlog_file": record.binlog_file, "binlog_pos": record.binlog_pos}
    if record.kind == TABLE:
        return [{**base, "change_seq": 0, "op": TRUNCATE, "after": None, "statement": record.create_table}]
    images = record.row_images()
    first = _first_change_seq(record, len(images))
    return [{**base, "change_seq": first + i, "op": SNAPSHOT_OP, "after": row, "statement": record.statement}
            for i, row in enumerate(images)]


def change_batch(source: str, record: SnapshotRecord, schema: pa.Schema) -> pa.RecordBatch:
    """A `rows` record's change records as one Arrow batch of `schema` (change_record's fields,
    any more null; timestamps as the schema types them): `change_records`' rows, built column
    by column (libs/snapshot/chunk_images.py)."""
    if record.kind != ROWS:
        raise ValueError(f"change_batch of a {record.kind} record")
    images = after_images(record.columns, record.values)
    n = len(images)
    first = _first_change_seq(record, n)
    constants = {"source": source, "trx_id": record.trx_id, "gtid": record.gtid,
                 "server_id": record.server_id, "commit_ts": record.snapshot_ts,
                 "trx_file": record.binlog_file, "trx_end_pos": record.binlog_pos,
                 "database": record.database, "table": record.table, "op": SNAPSHOT_OP,
                 "statement": record.statement, "binlog_file": record.binlog_file,
                 "binlog_pos": record.binlog_pos}
    columns = []
    for field in schema:
        if field.name == "after":
            columns.append(images.cast(field.type))
        elif field.name == "change_seq":
            columns.append(pa.array(np.arange(first, first + n, dtype=np.int64)).cast(field.type))
        elif pa.types.is_timestamp(field.type) and constants.get(field.name) is not None:
            columns.append(pa.repeat(pa.scalar(constants[field.name], pa.int64()), n).cast(field.type))
        else:
            columns.append(pa.repeat(pa.scalar(constants.get(field.name), field.type), n))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _first_change_seq(record: SnapshotRecord, rows: int) -> int:
    """change_seq of the chunk's first row (module docstring); ValueError when its rows would
    reach the next chunk's."""
    if rows >= ROWS_PER_EVENT:
        raise ValueError(f"snapshot chunk {record.chunk_no} of {record.qualified_table} holds {rows} "
                         f"rows, more than {ROWS_PER_EVENT - 1}")
    return (record.chunk_no + 1) * ROWS_PER_EVENT
