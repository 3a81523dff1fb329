"""The applier's target mirror (libs/apply/target_mirror.py) on Delta: later batches replay on it with
no Delta read, its values are Delta's (float32, timestamps, decimals: a keyless table's whole
before image must find the row), another writer's commit makes it re-read the table, and a
table over the cap is read per batch as before."""

import struct

import pytest

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
