"""Rows stage: segments of complete transactions -> change records, decoded in parallel
(mapInPandas over segments spread across tasks: a large transaction's segments decode on every
core, issue #4 "Heavy row decoding must not serialise"). A segment that cannot be decoded (a row
image that does not match its table map) becomes an error row: its whole transaction is
quarantined by the caller, never partially applied."""
from __future__ import annotations

from typing import Iterator

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from libs.binlog.errors import BinlogError
from libs.stream_assembly import decode_segment
from pipelines.schemas import ASSEMBLED_RECORD, CHANGE_RECORD, spark_schema
from pipelines.stages.pandas_records import pandas_to_records, records_to_pandas

ERROR_FIELDS = [T.StructField("decode_error", T.StringType()), T.StructField("error_kind", T.StringType())]


def decoded_schema() -> T.StructType:
    """change_record with every field nullable (error rows carry only identity) + the error."""
    fields = [T.StructField(f.name, f.dataType, True) for f in spark_schema(CHANGE_RECORD).fields]
    return T.StructType(fields + ERROR_FIELDS)


def _frames_as_dicts(frames) -> list[dict]:
    return [f if isinstance(f, dict) else f.asDict() for f in frames]


class DecodeSegments:
    def __init__(self):
        self.in_schema, self.out_schema = spark_schema(ASSEMBLED_RECORD), decoded_schema()

    def __call__(self, pdfs: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in pdfs:
            out: list[dict] = []
            for seg in pandas_to_records(pdf, self.in_schema):
                seg["frames"] = _frames_as_dicts(seg["frames"])
                try:
                    out.extend(decode_segment(seg))
                except (BinlogError, ValueError, KeyError) as err:
                    kind = getattr(err, "kind", type(err).__name__)
                    out.append({"source": seg["source"], "trx_id": seg["trx_id"], "trx_file": seg["trx_file"],
                                "trx_end_pos": seg["trx_end_pos"], "decode_error": str(err), "error_kind": kind})
            yield records_to_pandas(out, self.out_schema)


def decode_rows(segments: DataFrame, partitions: int) -> DataFrame:
    """segments (kind == 'segment') -> decoded change records (+ error rows)."""
    spread = segments.repartition(partitions, F.col("trx_id"), F.col("segment_no"))
    return spread.mapInPandas(DecodeSegments(), decoded_schema())


def change_records(decoded: DataFrame) -> DataFrame:
    """Change records of transactions that decoded completely (schema: change_record)."""
    failed = decoded.filter(F.col("decode_error").isNotNull()).select("source", "trx_id").distinct()
    ok = decoded.filter(F.col("decode_error").isNull()).join(failed, ["source", "trx_id"], "left_anti")
    return ok.select(*spark_schema(CHANGE_RECORD).fieldNames())
