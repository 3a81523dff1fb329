"""bench/dv_commit_probe.py's table and what it knows of it. The table: sysbench's sbtest + `_row_id`
= id, deletion vectors on, k and pad functions of id and c a function of id until an update
replaces it (the probe's docstring), so a change's full new image is known without reading the
target. A round's changes: drawn live ids, the updates' new images. The position index: id ->
(data file, row index), the positions a deletion vector needs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

C_GROUPS, PAD_GROUPS = 10, 5
MOD = 10 ** 11


def mult(g: int) -> int:
    return 48271 + 7919 * g


def add(g: int) -> int:
    return 1_000_003 * (g + 1)


def k_of(ids: np.ndarray) -> np.ndarray:
    return ((ids * 2654435761) % 1_000_003).astype(np.int32)


def digits(i: int, groups: range) -> str:
    return "-".join(f"{(i * mult(g) + add(g)) % MOD:011d}" for g in groups)


def spark_columns(F):
    """k, c, pad of the generated table as Spark expressions of `id` (same values as above)."""
    def groups(rng):
        return F.concat_ws("-", *[F.format_string("%011d", (F.col("id") * mult(g) + add(g)) % MOD)
                                  for g in rng])
    k = ((F.col("id") * 2654435761) % 1_000_003).cast("int")
    return k, groups(range(C_GROUPS)), groups(range(C_GROUPS, C_GROUPS + PAD_GROUPS))


def build_table(spark, path: str, rows: int, files: int) -> None:
    from pyspark.sql import functions as F
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, k INT, c STRING, pad STRING, _row_id STRING)"
              " USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    k, c, pad = spark_columns(F)
    (spark.range(1, rows + 1, numPartitions=files)
     .select("id", k.alias("k"), c.alias("c"), pad.alias("pad"), F.col("id").cast("string").alias("_row_id"))
     .write.format("delta").mode("append").save(path))


@dataclass
class Changes:
    """One round's batch: updated ids (sorted) with their new c, deleted ids (sorted), and the
    updates' full new images (id, k, c, pad, _row_id)."""
    upd: np.ndarray
    dele: np.ndarray
    new_c: list[str]
    images: pa.Table

    def ids(self) -> list[int]:
        """Every id the batch touches, sorted."""
        return sorted(set(self.upd.tolist()) | set(self.dele.tolist()))


def draw_changes(rng: np.random.Generator, alive: np.ndarray, changes: int) -> Changes:
    """`changes` updates and changes // 10 deletes of distinct live ids; an update draws a new c
    (k and pad stay the generated ones)."""
    candidates = np.flatnonzero(alive)
    drawn = rng.choice(candidates, size=changes + changes // 10, replace=False)
    upd, dele = np.sort(drawn[:changes]), np.sort(drawn[changes:])
    new_c = ["-".join(f"{x:011d}" for x in rng.integers(0, MOD, C_GROUPS)) for _ in upd]
    images = pa.table({"id": pa.array(upd, pa.int64()), "k": pa.array(k_of(upd), pa.int32()),
                       "c": pa.array(new_c, pa.string()),
                       "pad": pa.array([digits(int(i), range(C_GROUPS, C_GROUPS + PAD_GROUPS))
                                        for i in upd], pa.string()),
                       "_row_id": pa.array([str(i) for i in upd], pa.string())})
    return Changes(upd, dele, new_c, images)


class PositionIndex:
    """id -> (file number, row index); file number -> AddFile.path. Dense ids: two arrays."""

    def __init__(self, size: int):
        self.file = np.full(size + 1, -1, dtype=np.int32)
        self.row = np.zeros(size + 1, dtype=np.int64)
        self.paths: list[str] = []
        self.numbers: dict[str, int] = {}

    def number(self, path: str) -> int:
        if path not in self.numbers:
            self.numbers[path] = len(self.paths)
            self.paths.append(path)
        return self.numbers[path]

    def load(self, table: pa.Table, url_to_path: dict[str, str]) -> None:
        """Rows (id, f = _metadata.file_path, r = _metadata.row_index) into the arrays."""
        encoded = table.column("f").combine_chunks().dictionary_encode()
        numbers = np.array([self.number(url_to_path[u]) for u in encoded.dictionary.to_pylist()],
                           dtype=np.int32)
        ids = table.column("id").to_numpy()
        self.file[ids] = numbers[encoded.indices.to_numpy()]
        self.row[ids] = table.column("r").to_numpy()

    def by_file(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        files, rows = self.file[ids], self.row[ids]
        assert (files >= 0).all(), "a changed id is not in the index"
        return {self.paths[f]: np.sort(rows[files == f]) for f in np.unique(files)}


def read_positions(spark, reader_df):
    from pyspark.sql import functions as F
    return reader_df.select("id", F.col("_metadata.file_path").alias("f"),
                            F.col("_metadata.row_index").alias("r")).toArrow()
