"""binlog-dump: print binlog files like `mysqlbinlog -vv --base64-output=decode-rows`, with
the WL#4162 boundary type of every event, or as JSON Lines (issue #3). A thin shell: the
logic lives in libs/dump/ (walk.py, text_format.py, json_format.py).

    binlog-dump mdb-bin.000001                     # text, like mysqlbinlog -vv
    binlog-dump --json mdb-bin.000001 | jq .rows   # one JSON object per event
    cat mdb-bin.000001 | binlog-dump -             # read from stdin

Exit codes: 0 every event printed; 1 decode error (events before it are printed, stderr names
file, position, type and error kind); 2 usage (bad options, unreadable file).
--start-position applies to the first file, --stop-position to the last (mysqlbinlog's rule).
"""
from __future__ import annotations

import argparse
import sys

from libs.binlog.context import DecodeContext
from libs.dump.json_format import dump_json
from libs.dump.text_format import dump_text
from libs.dump.walk import walk
from libs.binlog.errors import BinlogError
from libs.contracts.table_names import parse_table_key

EXIT_OK, EXIT_DECODE_ERROR, EXIT_USAGE = 0, 1, 2


def _fsp_option(text: str) -> tuple[tuple[str, str], dict[int, int]]:
    """DB.TABLE:ORDINAL=FSP[,ORDINAL=FSP...] (0-based ordinals) -> ((db, table), {ord: fsp})."""
    try:
        name, _, spec = text.partition(":")
        db, table = parse_table_key(name)  # `db`.`table` quoted when a name has a '.'
        pairs = dict(tuple(int(x) for x in item.split("=", 1)) for item in spec.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected DB.TABLE:ORDINAL=FSP[,...], got {text!r}")
    return (db, table), pairs


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="binlog-dump", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE", help="binlog file(s); '-' reads stdin")
    p.add_argument("--json", action="store_true", help="one JSON object per event (JSON Lines)")
    p.add_argument("--start-position", type=int, metavar="N",
                   help="print from the first event at or after offset N (first file)")
    p.add_argument("--stop-position", type=int, metavar="N",
                   help="stop at the first event at or after offset N (last file)")
    p.add_argument("--old-temporal-fsp", type=_fsp_option, action="append", default=[],
                   metavar="DB.TABLE:ORD=FSP,...",
                   help="fsp of MariaDB 5.3-format TIME/DATETIME/TIMESTAMP columns (0-based "
                        "ordinals), which the Table_map does not carry; repeatable")
    return p


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    with open(name, "rb") as fh:
        return fh.read()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 for --help
        return int(exc.code or 0)
    fsp = {key: pairs for key, pairs in args.old_temporal_fsp}
    out = sys.stdout.buffer
    render = dump_json if args.json else dump_text
    last = len(args.files) - 1
    for index, name in enumerate(args.files):
        try:
            data = _read(name)
        except OSError as exc:
            print(f"binlog-dump: cannot read {name}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
        label = "stdin" if name == "-" else name
        items = walk(data, label, ctx=DecodeContext(old_temporal_fsp=fsp),
                     start=args.start_position if index == 0 else None,
                     stop=args.stop_position if index == last else None)
        try:
            for line in render(items):
                out.write(line.encode("latin-1") + b"\n")
        except BinlogError as err:
            out.flush()
            type_part = f"type {err.type_code}" if err.type_code is not None else "type unknown"
            print(f"binlog-dump: {err.kind} error in {err.file or label} at pos {err.pos} "
                  f"({type_part}): {err.message}", file=sys.stderr)
            return EXIT_DECODE_ERROR
        except BrokenPipeError:  # e.g. `binlog-dump FILE | head`
            sys.stderr.close()
            return EXIT_OK
    out.flush()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
