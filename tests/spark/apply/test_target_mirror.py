"""The applier's target mirror (libs/apply/target_mirror.py) on Delta: later batches replay on it with
no Delta read, its values are Delta's (float32, timestamps, decimals: a keyless table's whole
before image must find the row), another writer's commit makes it re-read the table, and a
table over the cap is read per batch as before."""

import struct
from decimal import Decimal

import pytest

from libs.apply.keyed_copy import KeyedCopy
from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.apply.applier import DeltaApplier as _Applier

from .builders import Source, catalog_from_ddl, changes_df, config, rows_of, version

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id));\n"
       "CREATE TABLE shop.n (f float DEFAULT 0.1, y int, ts datetime(6), d decimal(6,2))")
F01 = struct.unpack("<f", struct.pack("<f", 0.1))[0]  # what a row image of 0.1f carries
TS = "2024-01-02 03:04:05.000006"


def _image(y):
    return {"f": repr(F01), "y": y, "ts": TS, "d": "1.50"}


def _first_batch():
    a, n = Source("shop", "a", ["id", "v"]), Source("shop", "n", ["f", "y", "ts", "d"])
    n.trx = 100  # one source stream: transaction numbers must not repeat
    # Two identical keyless rows; f absent from the (minimal) after image: the 0.1 DEFAULT.
    return a, n, [a.insert({"id": 1, "v": "x"}), a.insert({"id": 2, "v": "y"}),
                  n.insert({"y": 1, "ts": TS, "d": "1.5"}), n.insert({"y": 1, "ts": TS, "d": "1.5"})]


@pytest.fixture
def delta_reads(monkeypatch):
    reads = []
    real = _Applier._read_touched

    def spy(self, spark, path, target, lookups):
        reads.append(target.delta_table)
        return real(spark, path, target, lookups)

    monkeypatch.setattr(_Applier, "_read_touched", spy)
    return reads


def test_later_batches_replay_on_the_mirror_and_another_writer_makes_it_reread(spark, tmp_path, delta_reads):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    a, n, first = _first_batch()
    applier(changes_df(spark, first), 0)
    paths = {t: D.table_path(cfg.delta_root, t) for t in ("shop__a", "shop__n")}
    mirrors = {t: applier.known.mirrors[TableLocation(path=p)] for t, p in paths.items()}  # keyed by location
    assert {t: m.version for t, m in mirrors.items()} == {t: version(spark, cfg, t) for t in paths}

    # Full before images of the keyless table: found by comparing every column to the mirror's.
    applier(changes_df(spark, [a.update({"id": 1}, {"v": "z"}), n.update(_image(1), _image(2))]), 1)
    assert delta_reads == []
    assert rows_of(spark, cfg, "shop__a") == [(1, "z"), (2, "y")]
    assert rows_of(spark, cfg, "shop__n", "f", "y") == [(F01, 1), (F01, 2)]

    # Another writer changes the remaining y=1 row: the mirror's version is stale, the table is
    # read again, and the next batch finds the row as the other writer left it.
    spark.sql(f"UPDATE delta.`{paths['shop__n']}` SET y = 7 WHERE y = 1")
    applier(changes_df(spark, [n.update(_image(7), _image(8))]), 2)
    assert rows_of(spark, cfg, "shop__n", "f", "y") == [(F01, 2), (F01, 8)]
    assert (applier.known.mirrors[TableLocation(path=paths["shop__n"])].version
            == version(spark, cfg, "shop__n"))
    assert delta_reads == []  # the re-read is the whole table (the mirror's reload), not a lookup


def test_a_table_over_the_cap_is_read_per_batch(spark, tmp_path, delta_reads):
    cfg = config(tmp_path, target_mirror_max_rows=1)
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    a, n, first = _first_batch()
    applier(changes_df(spark, first), 0)
    assert applier.known.mirrors == {}  # both tables grew past 1 row in their first write
    applier(changes_df(spark, [a.update({"id": 1}, {"v": "z"}), n.update(_image(1), _image(2))]), 1)
    assert sorted(delta_reads) == ["shop__a", "shop__n"]
    assert rows_of(spark, cfg, "shop__a") == [(1, "z"), (2, "y")]
    assert rows_of(spark, cfg, "shop__n", "f", "y") == [(F01, 1), (F01, 2)]


COPY_DDL = ("CREATE TABLE shop.k (id int NOT NULL, v varchar(10), ts datetime(6), d decimal(6,2), "
            "PRIMARY KEY (id))")


def _copy_batches(k):
    """Batches of a keyed table: rows inserted; then MINIMAL updates (the written row takes the
    stored ts and d: the copy's values must be Delta's), a key change, a delete, a new row."""
    first = [k.insert({"id": i, "v": f"v{i}", "ts": TS, "d": "1.5"}) for i in range(1, 6)]
    second = [k.update({"id": 1}, {"v": "one"}), k.update({"id": 2}, {"id": 20}), k.delete({"id": 3}),
              k.insert({"id": 6, "v": "six", "ts": TS, "d": "2.25"})]
    third = [k.update({"id": 20}, {"v": "twenty"}), k.update({"id": 4}, {"v": "four"}), k.delete({"id": 6})]
    return first, second, third


def test_a_big_keyed_table_replays_on_its_keyed_copy_as_on_delta(spark, tmp_path, delta_reads):
    """Past target_mirror_max_rows, with target_copy_max_rows: the table is read once as a keyed
    copy (libs/apply/keyed_copy.py), later batches replay on it with no Delta read, and another
    writer's commit makes it load again. Every batch leaves the table as the job without copies
    does (the oracle: the same batches on another root, read from Delta each batch)."""
    cfg = config(tmp_path / "copy", target_mirror_max_rows=1, target_copy_max_rows=100)
    oracle_cfg = config(tmp_path / "oracle", target_mirror_max_rows=1)
    applier = DeltaApplier(catalog_from_ddl(COPY_DDL), cfg)
    oracle = DeltaApplier(catalog_from_ddl(COPY_DDL), oracle_cfg)
    k = Source("shop", "k", ["id", "v", "ts", "d"])
    path = TableLocation(path=D.table_path(cfg.delta_root, "shop__k"))
    first, second, third = _copy_batches(k)
    fourth = [k.update({"id": 5}, {"d": "9.99"})]  # after another writer's UPDATE of the row
    job_reads, oracle_reads = [], []
    for batch_id, batch in enumerate([first, second, third, fourth]):
        if batch_id == 3:
            for root in (cfg.delta_root, oracle_cfg.delta_root):
                spark.sql(f"UPDATE delta.`{D.table_path(root, 'shop__k')}` SET v = 'ext' WHERE id = 5")
        before = len(delta_reads)
        applier(changes_df(spark, batch), batch_id)
        job_reads.append(delta_reads[before:])
        before = len(delta_reads)
        oracle(changes_df(spark, batch), batch_id)
        oracle_reads.append(delta_reads[before:])
        assert rows_of(spark, cfg, "shop__k") == rows_of(spark, oracle_cfg, "shop__k"), batch_id
        if batch_id > 0:
            copy = applier.known.mirrors[path]
            assert isinstance(copy, KeyedCopy) and copy.version == version(spark, cfg, "shop__k")
    assert job_reads == [[]] * 4  # batch 0: no table yet; then the copy (loaded again for batch 3)
    assert oracle_reads == [[], ["shop__k"], ["shop__k"], ["shop__k"]]
    assert sorted(rows_of(spark, cfg, "shop__k", "id", "v", "d")) == [
        (1, "one", Decimal("1.50")), (4, "four", Decimal("1.50")), (5, "ext", Decimal("9.99")),
        (20, "twenty", Decimal("1.50"))]
