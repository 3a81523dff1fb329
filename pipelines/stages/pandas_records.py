"""dict records <-> pandas frames for the pandas UDF stages, driven by the derived Spark schema
(timestamp-micros fields travel as int micros in libs/ and as timestamps in Spark)."""
from __future__ import annotations

from typing import Iterator

import pandas as pd
from pyspark.sql import types as T


def timestamp_fields(schema: T.StructType) -> list[str]:
    return [f.name for f in schema.fields if isinstance(f.dataType, T.TimestampType)]


_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def records_to_pandas(records: list[dict], schema: T.StructType) -> pd.DataFrame:
    names = schema.fieldNames()
    pdf = (pd.DataFrame.from_records(records, columns=names) if records
           else pd.DataFrame({n: [] for n in names}))
    for field in schema.fields:
        col = pdf[field.name]
        if isinstance(field.dataType, T.TimestampType):
            pdf[field.name] = pd.to_datetime(col, unit="us")
        elif col.dtype.kind == "f" and isinstance(field.dataType, _INTEGRAL):
            pdf[field.name] = col.astype("Int64")  # integers with nulls: pandas made them float
        elif not isinstance(field.dataType, (T.FloatType, T.DoubleType) + _INTEGRAL):
            # a key missing from some records comes back as NaN: Spark wants None for null
            pdf[field.name] = col.astype(object).where(col.notna(), None)
    return pdf


def pandas_to_records(pdf: pd.DataFrame, schema: T.StructType) -> Iterator[dict]:
    micros = {name: pdf[name].astype("int64") // 1000 for name in timestamp_fields(schema) if name in pdf}
    for i, row in enumerate(pdf.to_dict("records")):
        for name, col in micros.items():
            row[name] = None if pd.isna(pdf[name].iat[i]) else int(col.iat[i])
        yield row


def chunked(records: list[dict], schema: T.StructType, size: int = 2048) -> Iterator[pd.DataFrame]:
    for start in range(0, len(records), size):
        yield records_to_pandas(records[start:start + size], schema)
