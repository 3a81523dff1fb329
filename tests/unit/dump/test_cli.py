"""binlog-dump as a user runs it: the console script in a subprocess (exit codes, stdin,
stderr), plus --start/--stop-position and --old-temporal-fsp."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .oracle import MARIADB

SCRIPT = Path(sys.executable).with_name("binlog-dump")
NOCRC = MARIADB / "nochecksum" / "mdb-bin.000014"
TEMPORAL_OLD = MARIADB / "temporal_old" / "mdb-bin.000006"


def run(*args, stdin: bytes | None = None):
    return subprocess.run([str(SCRIPT), *map(str, args)], input=stdin, capture_output=True,
                          timeout=60)


def at_positions(stdout: bytes) -> list[int]:
    return [int(line[5:]) for line in stdout.splitlines() if line.startswith(b"# at ")]


def test_text_dump_exit_0_with_boundaries():
    res = run(NOCRC)
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode("latin-1")
    assert "# boundary: Start Transaction (parser)" in out
    assert "# boundary: End Transaction (parser)" in out
    assert "### INSERT INTO `nocrc_db`.`t`" in out
    assert at_positions(res.stdout)[0] == 4 and res.stderr == b""


def test_stdin_gives_the_same_output_as_the_file():
    by_file, by_stdin = run(NOCRC), run("-", stdin=NOCRC.read_bytes())
    assert by_stdin.returncode == 0
    assert by_stdin.stdout == by_file.stdout
    first = json.loads(run("--json", "-", stdin=NOCRC.read_bytes()).stdout.splitlines()[0])
    assert first["file"] == "stdin" and first["type_name"] == "FORMAT_DESCRIPTION"


def test_usage_errors_exit_2(tmp_path):
    assert run().returncode == 2
    assert run("--no-such-option", NOCRC).returncode == 2
    assert run("--start-position", "x", NOCRC).returncode == 2
    res = run(tmp_path / "missing.bin")
    assert res.returncode == 2 and b"cannot read" in res.stderr


def test_truncated_file_exit_1_after_printing_what_came_before(tmp_path):
    cut = tmp_path / "cut.000014"
    cut.write_bytes(NOCRC.read_bytes()[:1000])  # the Write_rows at 968 is cut
    res = run(cut)
    assert res.returncode == 1
    assert at_positions(res.stdout)[-1] == 917  # everything before the bad frame was printed
    err = res.stderr.decode()
    assert "truncated" in err and str(cut) in err and "pos 968" in err and "type 23" in err


def test_corrupt_checksum_exit_1_names_the_kind(tmp_path):
    data = bytearray((MARIADB / "misc" / "mdb-bin.000012").read_bytes())
    data[280] ^= 0xFF  # inside the 2nd event (Gtid_list, 256..299)
    bad = tmp_path / "bad.000012"
    bad.write_bytes(bytes(data))
    res = run("--json", bad)
    assert res.returncode == 1
    assert len(res.stdout.splitlines()) == 1  # the FDE
    assert "checksum error" in res.stderr.decode() and "pos 256" in res.stderr.decode()


def test_start_and_stop_position():
    res = run("--start-position", 917, "--stop-position", 1239, NOCRC)
    assert res.returncode == 0
    assert at_positions(res.stdout) == [917, 968, 1026, 1053, 1091, 1142, 1212]


def test_old_temporal_needs_configuration():
    res = run(TEMPORAL_OLD)
    assert res.returncode == 1
    assert b"@3 (TIME, ordinal 2)" in res.stderr and b"old_temporal_fsp" in res.stderr
    configured = run("--old-temporal-fsp", "temporal_old.t_temporal_old:2=3,3=6,5=3,6=6,8=3,9=6",
                     "--old-temporal-fsp", "temporal_old.t_mixed_fmt_old:1=6,2=6,3=6",
                     TEMPORAL_OLD)
    assert configured.returncode == 0, configured.stderr
    assert configured.stdout.count(b"### INSERT INTO `temporal_old`.") > 0
    assert run("--old-temporal-fsp", "nonsense", TEMPORAL_OLD).returncode == 2
