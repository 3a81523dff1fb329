"""cdc-ship's snapshot flags: documented, refused where they mean nothing, a bad regex one line."""
import pytest

from pipelines.ship import build_parser, main

SERVER = ["--server", "127.0.0.1:1", "--user", "u", "--bootstrap", "127.0.0.1:1", "--topic", "t",
          "--source", "s"]


def test_help_documents_every_snapshot_flag():
    text = build_parser().format_help()
    for flag in ("--snapshot ", "--resnapshot", "--include REGEX", "--exclude REGEX",
                 "--snapshot-chunk-rows N"):
        assert flag in text, flag


def test_flags_parse_to_mode_patterns_and_chunk_rows():
    args = build_parser().parse_args(SERVER + ["--resnapshot", "--include", r"d\..*", "--include",
                                               "e.t", "--exclude", "d.x",
                                               "--snapshot-chunk-rows", "77"])
    assert (args.snapshot, args.include, args.exclude, args.snapshot_chunk_rows) == (
        "resnapshot", [r"d\..*", "e.t"], ["d.x"], 77)
    assert build_parser().parse_args(SERVER + ["--snapshot"]).snapshot == "initial"
    assert build_parser().parse_args(SERVER).snapshot is None


def test_bad_regex_is_one_line_exit_2(capsys):
    assert main(SERVER + ["--snapshot", "--include", "db.(t"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cdc-ship: --include 'db.(t' is not a regular")


@pytest.mark.parametrize("argv, message", [
    (["--from-file", "x", "--bootstrap", "b:1", "--topic", "t", "--source", "s", "--snapshot"],
     "need --server"),
    (SERVER + ["--snapshot", "--resnapshot"], "not allowed with argument"),
    (SERVER + ["--include", "d.t"], "select the tables of --snapshot"),
    (SERVER + ["--snapshot", "--start-file", "mdb-bin.000001"], "no --start-file or --gtid"),
    (SERVER + ["--snapshot", "--snapshot-chunk-rows", "0"], "positive number of rows"),
])
def test_refused_combinations_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
