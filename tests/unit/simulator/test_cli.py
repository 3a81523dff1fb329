"""cdc-simulate command line: file mode writes the binlog and the expected tables; bad
arguments are a usage error, not a traceback."""
import json

import pytest

from libs.binlog import iter_events
from pipelines.simulate import main


def test_file_mode_writes_binlog_and_expected(tmp_path, capsys):
    out, exp = tmp_path / "s.bin", tmp_path / "exp"
    rc = main(["--out", str(out), "--expected", str(exp), "--flavour", "mysql", "--row-image",
               "minimal", "--transactions", "25", "--seed", "3", "--markers", "--no-rows-query",
               "--ignorable-rate", "0.1", "--binlog-format", "mixed"])
    assert rc == 0
    evs = list(iter_events(out.read_bytes()))
    assert evs[0].body.server_version == "8.0.43"
    assert not [e for e in evs if e.type_code == 29]
    assert [e for e in evs if e.type_code == 0x7A]
    settings = json.loads((exp / "manifest.json").read_text())["settings"]
    assert settings["row_image"] == "minimal" and settings["binlog_format"] == "MIXED"
    assert "groups to" in capsys.readouterr().out


def test_engine_option_reaches_the_decision(tmp_path):
    exp = tmp_path / "exp"
    rc = main(["--out", str(tmp_path / "s.bin"), "--expected", str(exp), "--transactions", "40",
               "--binlog-format", "STATEMENT", "--engine", "t_pk=ndbcluster"])
    assert rc == 0
    stmts = [json.loads(x) for x in (exp / "statements.jsonl").read_text().splitlines()]
    on_pk = [s for s in stmts if "`t_pk`" in s["sql"] and not s["sql"].startswith(("CREATE", "ALTER"))]
    assert on_pk and all(s["decision"] == "error" and s["message"] == "not loggable" for s in on_pk)
    assert json.loads((exp / "manifest.json").read_text())["tables"]["sim.t_pk"]["rows"] == 0


@pytest.mark.parametrize("argv", [
    ["--transactions", "3"],  # neither --out nor --bootstrap
    ["--out", "x.bin"],  # no --expected
    ["--bootstrap", "h:1", "--topic", "t"],  # no --source
    ["--out", "x.bin", "--expected", "d", "--row-image", "tiny"],
])
def test_usage_errors(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_capability_is_refused_for_mysql(tmp_path, capsys):
    rc = main(["--out", str(tmp_path / "s.bin"), "--expected", str(tmp_path / "e"),
               "--flavour", "mysql", "--capability", "0"])
    assert rc == 2 and "mariadb_slave_capability" in capsys.readouterr().err
