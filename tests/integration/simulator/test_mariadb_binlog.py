"""The real tool: Debian's mariadb-binlog (scripts/install_mariadb.sh) reads the MariaDB-flavour
files (rc 0) and prints the rows and Annotate_rows texts the simulator logged."""
import re
import shutil
import subprocess

import pytest

from libs.binlog import RowsQuery, iter_events
from libs.simulator.master import Master, Session
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.schema import standard_tables
from libs.simulator.sinks import FileSink
from libs.simulator.statements import Delete, Insert, Update
from decimal import Decimal

pytestmark = pytest.mark.integration
MARIADB_BINLOG = shutil.which("mariadb-binlog")


def _vv(path) -> str:
    assert MARIADB_BINLOG, "mariadb-binlog missing: run `bash scripts/install_mariadb.sh`"
    proc = subprocess.run([MARIADB_BINLOG, "--no-defaults", "-vv", "--base64-output=decode-rows",
                           str(path)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"ERROR" not in proc.stderr
    return proc.stdout.decode("latin-1")


@pytest.mark.parametrize("image,checksum,markers,ignorable,fmt,min_rows", [
    ("full", True, False, 0.0, "ROW", 100), ("noblob", True, True, 0.1, "ROW", 100),
    ("minimal", False, False, 0.1, "ROW", 100), ("minimal", True, True, 0.0, "ROW", 100),
    ("full", True, False, 0.05, "MIXED", 1)])  # MIXED: only unsafe statements go as rows
def test_mariadb_binlog_accepts_workload_files(tmp_path, image, checksum, markers, ignorable,
                                              fmt, min_rows):
    sink = FileSink()
    opts = SimulationOptions(row_image=image, checksum=checksum, markers=markers,
                             ignorable_rate=ignorable, transactions=150, seed=21,
                             binlog_format=fmt)
    simulate(opts, sink)
    path = sink.write(tmp_path / "sim-bin.000001")
    out = _vv(path)
    ours = [e.body.text for e in iter_events(sink.bytes()) if isinstance(e.body, RowsQuery)]
    # mariadb-binlog prints every Annotate_rows text as "#Q> " lines (multi-line texts: "#Q> "
    # on each line); our texts are single-line
    assert re.findall(r"^#Q> (.*)$", out, re.M) == ours
    n_rows = sum(len(e.body.rows) for e in iter_events(sink.bytes()) if e.type_code in (23, 24, 25))
    printed = len(re.findall(r"^### (INSERT INTO|UPDATE|DELETE FROM) `sim`", out, re.M))
    assert printed == n_rows >= min_rows


def test_mariadb_binlog_prints_the_rows_we_wrote(tmp_path):
    sink = FileSink()
    master = Master(standard_tables("mariadb"), sink, session=Session("ROW", "minimal", True))
    master.execute(Insert("t_pk", ({0: 1, 1: b"alpha", 2: 10, 3: Decimal("1.50")},)))
    master.execute(Update("t_pk", {0: 1}, {2: 11}))
    master.execute(Insert("t_defaults", ({1: b"open"},)))
    master.execute(Insert("t_blob", ({0: 2, 3: b"\x01\x02", 4: b"some text"},)))
    master.execute(Delete("t_pk", {0: 1}))
    master.close()
    out = _vv(sink.write(tmp_path / "sim-bin.000001"))
    blocks = [b for b in out.split("#Q> ")[1:]]
    rows = [[ln for ln in b.splitlines() if ln.startswith("###")] for b in blocks]
    # hand-written: what -vv prints for each statement under MINIMAL (WL#5092 R1)
    assert blocks[0].startswith("INSERT INTO `t_pk` (`id`, `name`, `qty`, `price`) "
                                "VALUES (1, 'alpha', 10, 1.50)")
    assert rows[0] == [
        "### INSERT INTO `sim`.`t_pk`", "### SET",
        "###   @1=1 /* INT meta=0 nullable=0 is_null=0 */",
        "###   @2='alpha' /* VARSTRING(50) meta=50 nullable=1 is_null=0 */",
        "###   @3=10 /* INT meta=0 nullable=1 is_null=0 */",
        "###   @4=1.50 /* DECIMAL(10,2) meta=2562 nullable=1 is_null=0 */"]
    assert rows[1] == [
        "### UPDATE `sim`.`t_pk`", "### WHERE",
        "###   @1=1 /* INT meta=0 nullable=0 is_null=0 */", "### SET",
        "###   @3=11 /* INT meta=0 nullable=1 is_null=0 */"]
    assert rows[2] == [
        "### INSERT INTO `sim`.`t_defaults`", "### SET",
        "###   @1=1 /* INT meta=0 nullable=0 is_null=0 */",
        "###   @2='open' /* VARSTRING(10) meta=10 nullable=0 is_null=0 */"]
    assert rows[3][2:] == [
        "###   @1=2 /* INT meta=0 nullable=0 is_null=0 */",
        "###   @4='\\x01\\x02' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */",
        "###   @5='some text' /* BLOB/TEXT meta=2 nullable=1 is_null=0 */"]
    assert rows[4] == ["### DELETE FROM `sim`.`t_pk`", "### WHERE",
                       "###   @1=1 /* INT meta=0 nullable=0 is_null=0 */"]


def test_mariadb_binlog_accepts_dummy_substituted_stream(tmp_path):
    from libs.simulator.sinks import Substitution
    sink = FileSink(Substitution(0, True))
    simulate(SimulationOptions(transactions=40, seed=8, capability=0), sink)
    out = _vv(sink.write(tmp_path / "sim-bin.000001"))
    assert "# Dummy event replacing event type 160" in out or "# Du" in out
