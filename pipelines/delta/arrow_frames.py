"""Driver-side dict rows -> Arrow -> Spark, the one way the apply stage and the quarantine
writer build small DataFrames (PySpark's row path verifies and pickles every nested value:
seconds per 10k change-log rows, bench/README.md)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema


def arrow_table(rows: Sequence[Mapping[str, Any]], schema: T.StructType) -> pa.Table:
    """Driver-side dict rows as one Arrow table of the Spark schema's Arrow types. Naive
    datetimes are UTC here (libs/targets/values.py), as Arrow's timestamp[us, UTC] reads them."""
    return pa.Table.from_pylist(list(rows), schema=to_arrow_schema(schema))


def arrow_frame(spark: SparkSession, rows: Sequence[Mapping[str, Any]], schema: T.StructType) -> DataFrame:
    """DataFrame of driver-side dict rows through one Arrow table."""
    return spark.createDataFrame(arrow_table(rows, schema), schema)
