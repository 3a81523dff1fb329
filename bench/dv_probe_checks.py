"""bench/dv_commit_probe.py's verification: after each round, the DV table against the MERGE copy
and the generator (checksums, the touched rows, EXCEPT ALL both ways), the DV commit's log entry,
a retry of the same batch, the position index against the table; at the end, the AddFile catalog
and the index against the table's own state, and two readers that are not Delta-on-Spark:
delta-rs (the `deltalake` package) and a hand-written one (the JSON log replayed, each deletion
vector decoded: file layout + portable Roaring in pure Python, the parquet read with pyarrow).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.dv_probe_table import C_GROUPS, PAD_GROUPS, Changes, PositionIndex, digits, k_of, read_positions


def checksum(spark, path: str):
    from pyspark.sql import functions as F
    df = spark.read.format("delta").load(path)
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum("id").alias("ids"),
                 F.sum(F.hash("id", "k", "c", "pad", "_row_id").cast("long")).alias("h1"),
                 F.sum(F.hash("c", "id").cast("long")).alias("h2")).first()
    return tuple(row)


def rows_of(spark, path: str, ids: list[int]):
    from pyspark.sql import functions as F
    df = spark.read.format("delta").load(path).where(F.col("id").isin(ids))
    return sorted(tuple(r) for r in df.select("id", "k", "c", "pad", "_row_id").collect())


def round_equal(spark, paths: tuple[str, str], changes: Changes, current_c: dict[int, str],
                alive: np.ndarray, except_all: bool) -> dict:
    """count and equal: both tables' checksums, their touched rows and the generator's expected
    rows (the updates' current images; the deletes gone), and the count of live ids; with
    `except_all`, EXCEPT ALL both ways too."""
    dv_path, merge_path = paths
    ck_dv, ck_merge = checksum(spark, dv_path), checksum(spark, merge_path)
    ids = changes.ids()
    got_dv, got_merge = rows_of(spark, dv_path, ids), rows_of(spark, merge_path, ids)
    expected = sorted((int(i), int(k_of(np.array([i]))[0]), current_c[int(i)],
                       digits(int(i), range(C_GROUPS, C_GROUPS + PAD_GROUPS)), str(i)) for i in changes.upd)
    rec = {"count": ck_dv[0]}
    rec["equal"] = (ck_dv == ck_merge and got_dv == got_merge == expected
                    and ck_dv[0] == int(alive.sum()))
    if except_all:
        a, b = spark.read.format("delta").load(dv_path), spark.read.format("delta").load(merge_path)
        rec["except all"] = (a.exceptAll(b).count(), b.exceptAll(a).count())
        rec["equal"] = rec["equal"] and rec["except all"] == (0, 0)
    return rec


def commit_log(spark, dv_path: str, version: int) -> dict:
    """The DV commit as the log holds it: DESCRIBE HISTORY's line, its txn action, its actions."""
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{dv_path}` LIMIT 1").first()
    commit_json = Path(dv_path, "_delta_log", f"{version:020d}.json").read_text().splitlines()
    txn = [json.loads(line)["txn"] for line in commit_json if '"txn"' in line]
    kinds = [next(iter(json.loads(line))) for line in commit_json]
    return {"history": f"v{hist['version']} {hist['operation']} blind={hist['isBlindAppend']}",
            "txn": txn, "actions": {k: kinds.count(k) for k in dict.fromkeys(kinds)}}


def retry_check(spark, table, touched: dict[str, np.ndarray], app_id: str, txn_version: int) -> str:
    """The same batch again: the caller's check (as pipelines/delta/delta_txn.py) and the
    transaction's own (txnVersion) both skip it."""
    from pipelines.delta.delta_txn import committed_version
    before = int(table.log.update(False, table.scala.none(), table.scala.none()).version())
    caller_skip = committed_version(spark, table.path, app_id) >= txn_version
    again = table.commit(touched, None, app_id, txn_version)
    after = int(table.log.update(False, table.scala.none(), table.scala.none()).version())
    return (f"caller check skips={caller_skip}, commit() again -> version={again.version}, "
            f"table version {before}->{after}")


def index_spot_check(spark, dv_path: str, changes: Changes, index: PositionIndex,
                     url_to_path: dict[str, str]) -> bool:
    """The updated rows' positions in the index as the table reads them now."""
    from pyspark.sql import functions as F
    touched = spark.read.format("delta").load(dv_path).where(F.col("id").isin(changes.ids()))
    pos = read_positions(spark, touched)
    want = {(int(i), index.paths[index.file[i]], int(index.row[i])) for i in changes.upd}
    have = {(i, url_to_path[f], r) for i, f, r in zip(pos.column("id").to_pylist(),
                                                        pos.column("f").to_pylist(),
                                                        pos.column("r").to_pylist())}
    return want == have


def final_checks(spark, table, index: PositionIndex, alive: np.ndarray, rows: int) -> dict[str, object]:
    """The AddFile catalog and a fresh index against the table's own state; the live ids as
    delta-rs and the hand-written reader read them."""
    from pipelines.delta.dv_commit import DvTable
    fresh = PositionIndex(rows)
    table_check = DvTable(spark, table.path)
    table_check.load_files()
    fresh_urls = {table_check.file_url(a): p for p, a in table_check.files.items()}
    fresh.load(read_positions(spark, spark.read.format("delta").load(table.path)), fresh_urls)
    live = index.file >= 0
    same_index = (np.array_equal(live, fresh.file >= 0)
                  and np.array_equal(np.array(index.paths, dtype=object)[index.file[live]],
                                     np.array(fresh.paths, dtype=object)[fresh.file[live]])
                  and np.array_equal(index.row[live], fresh.row[live]))
    dv_ids = {p: (a.deletionVector().uniqueId() if a.deletionVector() else None)
              for p, a in table.files.items()}
    log_ids = {p: (a.deletionVector().uniqueId() if a.deletionVector() else None)
               for p, a in table_check.files.items()}
    figures: dict[str, object] = {"final: index == fresh index": bool(same_index),
                                  "final: catalog == snapshot files+DVs": dv_ids == log_ids}
    stats = [json.loads(a.stats()) for a in table_check.files.values() if a.deletionVector()]
    figures["final: DV files' stats tightBounds"] = sorted({s.get("tightBounds") for s in stats}, key=str)
    expected_ids = set(np.flatnonzero(alive).tolist())
    figures["delta-rs"] = delta_rs_check(table.path, len(expected_ids), expected_ids)
    try:
        figures["hand-written log+DV reader"] = log_reader_check(table.path, expected_ids)
    except Exception as err:  # noqa: BLE001 - a probe: report and go on
        figures["hand-written log+DV reader"] = f"failed: {type(err).__name__}: {err}"
    return figures


def delta_rs_check(path: str, expected_count: int, expected_ids: set[int]) -> str:
    """Read the DV table with a second engine, delta-rs (the `deltalake` package)."""
    try:
        from deltalake import DeltaTable
        dt = DeltaTable(path)
        protocol = dt.protocol()
        try:
            ids = dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        except AttributeError:
            import pyarrow.dataset as ds  # noqa: F401
            ids = dt.to_pyarrow_dataset().to_table(columns=["id"]).column("id").to_pylist()
        ok = len(ids) == expected_count and set(ids) == expected_ids
        return (f"deltalake read {len(ids)} rows (expected {expected_count}), "
                f"ids equal={set(ids) == expected_ids}"
                f" -> {'OK' if ok else 'MISMATCH'} (reader features {protocol.reader_features})")
    except Exception as err:  # noqa: BLE001 - the probe reports what the second engine says
        return f"deltalake refused: {type(err).__name__}: {str(err)[:300]}"


Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_uuid(text: str) -> str:
    import uuid
    raw = b""
    for i in range(0, 20, 5):
        value = 0
        for ch in text[i:i + 5]:
            value = value * 85 + Z85.index(ch)
        raw += value.to_bytes(4, "big")
    return str(uuid.UUID(bytes=raw))


def roaring32(buf: bytes, pos: int) -> tuple[list[int], int]:
    """One 32-bit RoaringBitmap in the portable format (RoaringFormatSpec): its values, end."""
    import struct
    cookie = struct.unpack_from("<I", buf, pos)[0]
    pos += 4
    runs = None
    if cookie & 0xFFFF == 12347:
        size = (cookie >> 16) + 1
        runs = buf[pos:pos + (size + 7) // 8]
        pos += (size + 7) // 8
    elif cookie == 12346:
        size = struct.unpack_from("<I", buf, pos)[0]
        pos += 4
    else:
        raise ValueError(f"not a portable roaring bitmap (cookie {cookie})")
    header = [struct.unpack_from("<HH", buf, pos + 4 * i) for i in range(size)]
    pos += 4 * size
    if runs is None or size >= 4:
        pos += 4 * size  # offset header
    values = []
    for i, (key, card_minus_1) in enumerate(header):
        high = key << 16
        if runs is not None and runs[i // 8] >> (i % 8) & 1:
            n = struct.unpack_from("<H", buf, pos)[0]
            pairs = struct.unpack_from(f"<{2 * n}H", buf, pos + 2)
            pos += 2 + 4 * n
            for start, length in zip(pairs[::2], pairs[1::2]):
                values.extend(high | v for v in range(start, start + length + 1))
        elif card_minus_1 + 1 <= 4096:
            values.extend(high | v for v in struct.unpack_from(f"<{card_minus_1 + 1}H", buf, pos))
            pos += 2 * (card_minus_1 + 1)
        else:
            words = struct.unpack_from("<1024Q", buf, pos)
            pos += 8192
            values.extend(high | (w * 64 + b) for w, word in enumerate(words) for b in range(64)
                          if word >> b & 1)
    return values, pos


def dv_rows(table_path: str, dv: dict) -> set[int]:
    """The row indexes a deletion vector descriptor (the log's JSON) marks deleted."""
    import struct
    import zlib
    if dv["storageType"] == "i":
        raise ValueError("inline DV (not written by this probe)")
    if dv["storageType"] == "u":
        prefix, encoded = dv["pathOrInlineDv"][:-20], dv["pathOrInlineDv"][-20:]
        path = Path(table_path, prefix, f"deletion_vector_{z85_uuid(encoded)}.bin")
    else:
        path = Path(dv["pathOrInlineDv"].removeprefix("file:"))
    raw = path.read_bytes()
    assert raw[0] == 1, "DV file format version"
    offset = dv.get("offset", 1)
    size = struct.unpack_from(">i", raw, offset)[0]
    data = raw[offset + 4:offset + 4 + size]
    assert struct.unpack_from(">I", raw, offset + 4 + size)[0] == zlib.crc32(data) & 0xFFFFFFFF, "DV crc"
    magic, count = struct.unpack_from("<iq", data, 0)
    assert magic == 1681511377, f"DV magic {magic}"
    pos, rows = 12, set()
    for _ in range(count):
        key = struct.unpack_from("<I", data, pos)[0]
        values, pos = roaring32(data, pos + 4)
        rows.update((key << 32) | v for v in values)
    assert len(rows) == dv["cardinality"], "DV cardinality"
    return rows


def log_reader_check(path: str, expected_ids: set[int]) -> str:
    """A reader independent of Spark and Delta: replay the JSON log by hand, decode each DV
    (file layout + portable Roaring in pure Python), read the parquet with pyarrow."""
    import pyarrow.parquet as pq
    from urllib.parse import unquote
    log = sorted(Path(path, "_delta_log").glob("*.json"))
    if list(Path(path, "_delta_log").glob("*.checkpoint*.parquet")):
        return "skipped (the log has a checkpoint; this reader replays JSON only)"
    def file_id(action: dict) -> tuple:  # a file's identity: path + DV (PROTOCOL.md)
        dv = action.get("deletionVector") or {}
        return action["path"], dv.get("storageType"), dv.get("pathOrInlineDv"), dv.get("offset")

    live: dict[tuple, dict] = {}
    for commit in log:  # a commit's removes, then its adds (same path, new DV: both in one commit)
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in actions:
            if "remove" in action:
                live.pop(file_id(action["remove"]), None)
        for action in actions:
            if "add" in action:
                live[file_id(action["add"])] = action["add"]
    assert len({key[0] for key in live}) == len(live), "a path live twice"
    ids, with_dv = [], 0
    for add in live.values():
        column = pq.read_table(Path(path, unquote(add["path"])), columns=["id"]).column("id").to_numpy()
        if add.get("deletionVector"):
            with_dv += 1
            keep = np.ones(len(column), dtype=bool)
            keep[sorted(dv_rows(path, add["deletionVector"]))] = False
            column = column[keep]
        ids.extend(column.tolist())
    ok = len(ids) == len(expected_ids) and set(ids) == expected_ids
    return (f"{'OK' if ok else 'MISMATCH'}: {len(ids)} rows from {len(live)} files ({with_dv} with DVs), "
            f"expected {len(expected_ids)}")

