"""Issue #6 "Proof": with capability 0 the master sends dummy events in place of what an old
replica cannot read (GTID -> BEGIN Query, Annotate_rows -> dummy, ...), and the pipeline still
produces the right tables.

A private MariaDB (libs/local/mariadb_server.py) runs a MINIMAL and a FULL round of the
shipper workload; `cdc-ship --server --capability 0` ships them; the real query (build_query with
the Delta apply stage, available-now) applies the topic to Delta with the server's own
`SHOW CREATE TABLE` as the replica's declaration. Oracles come from the server: `SELECT *` per
table, and the row changes of `mariadb-binlog -vv` over the same files.
"""
from __future__ import annotations

import collections

import pytest

from libs.binlog import iter_frames, substitute_for_replica
from libs.config.job import JobConfig
from libs.shipper.rebuild import read_records
from libs.tables.system_tables import CHANGE_LOG
from pipelines.replicate import build_query, make_applier
from libs.tables.system_tables import QUARANTINE
from pipelines.ship import main as ship
from tests.integration.exactly_once.oracle import binlog_row_changes, delta_rows, server_rows

from .helpers import password_file
from .workload import row_image_round, schema

pytestmark = pytest.mark.integration

DB = "ship_cp"
TABLES = ("t_pk", "t_uk", "t_nokey")


def test_capability_0_stream_with_dummies_replays_to_the_servers_tables(mariadb, kafka_broker, topic,
                                                                        spark, tmp_path):
    start = mariadb.flush_binlogs()
    mariadb.sql(schema(DB) + row_image_round(DB, "MINIMAL", 1) + row_image_round(DB, "FULL", 10))
    current = mariadb.flush_binlogs()
    assert ship(["--server", f"{mariadb.host}:{mariadb.port}", "--user", mariadb.user,
                 "--password-file", password_file(mariadb), "--bootstrap", kafka_broker.bootstrap,
                 "--topic", topic, "--source", "cap0", "--start-file", start,
                 "--capability", "0", "--non-block"]) == 0

    # The topic really holds the server's substitutions (GTID -> BEGIN Query, ...): its event
    # types are those of the codec's substitution of the file on disk (test_ship_server checks
    # the bytes), and no GTID event is left although the file has some.
    shipped_types = collections.Counter(r.event_type
                                        for r in read_records(kafka_broker.bootstrap, topic, "cap0")
                                        if r.binlog_file == start)
    disk = [frame for _, frame in iter_frames(mariadb.binlog_path(start).read_bytes())]
    substituted = collections.Counter(substitute_for_replica(f, 0, dump_flags=2, checksum=True)[4]
                                      for f in disk)
    assert shipped_types == substituted
    assert sum(f[4] == 162 for f in disk) > 0 and shipped_types[162] == 0

    ddl = tmp_path / "targets.sql"
    ddl.write_text(f"USE `{DB}`;\n" + "".join(mariadb.query(f"SHOW CREATE TABLE `{DB}`.`{t}`")[0][1] + ";\n"
                                            for t in TABLES))
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, target_ddl=str(ddl),
                    delta_root=str(tmp_path / "delta"), checkpoint=str(tmp_path / "ckpt"), available_now=True)
    query = build_query(spark, cfg, make_applier(cfg))
    query.awaitTermination()
    assert query.exception() is None

    for table in TABLES:
        columns, expected = server_rows(mariadb, DB, table)
        assert expected, f"{table}: the workload left no rows to compare"
        assert delta_rows(spark, f"{cfg.delta_root}/{DB}__{table}", columns) == expected, table

    # every row change of the server's own decoder, once (identity is file:pos here: no GTIDs)
    log = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGE_LOG}")
    applied = collections.Counter((r["table"], r["op"]) for r in log.filter("database = 'ship_cp'")
                                  .filter("op in ('insert', 'update', 'delete')").collect())
    oracle = collections.Counter((c.table, c.op) for c in
                                 binlog_row_changes([mariadb.binlog_path(start)]) if c.database == DB)
    assert applied == oracle
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0
    assert current != start
