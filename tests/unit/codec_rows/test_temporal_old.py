"""MariaDB 5.3 temporal format (corpus mariadb/temporal_old): mariadb-binlog cannot print these
rows, so the final table dumps (tables/*.tsv, UTC) are the oracle. We replay the decoded row
images (insert/update/delete by id) and compare every cell's text with the dump."""
from datetime import datetime, timezone

from .corpus import MARIADB, decoded_events, temporal_old_context

PATH = MARIADB / "temporal_old" / "mdb-bin.000006"


def _cell(value, column: str) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(value)
    if column.startswith("ts"):  # TIMESTAMP text is 'seconds[.frac]' since the epoch, UTC
        sec, _, frac = value.partition(".")
        if sec == "0":
            return "0000-00-00 00:00:00" + ("." + "0" * len(frac) if frac else "")
        text = datetime.fromtimestamp(int(sec), timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        return text + ("." + frac if frac else "")
    return value


def _replay():
    ctx = temporal_old_context(PATH)
    tables: dict[str, dict] = {}
    for _frame, rec in decoded_events(PATH, ctx):
        if not hasattr(rec, "rows"):
            continue
        table = tables.setdefault(ctx.table_maps[rec.table_id].table, {})
        for change in rec.rows:
            if change.before is not None:
                table.pop(change.before[0])
            if change.after is not None:
                table[change.after[0]] = change.after
    return tables


def test_old_temporal_rows_equal_the_table_dumps():
    tables = _replay()
    compared = 0
    for name in ("t_temporal_old", "t_mixed_fmt_old", "t_mixed_fmt_new"):
        lines = (MARIADB / "temporal_old" / "tables" / f"temporal_old.{name}.tsv").read_text().splitlines()
        header = lines[0].split("\t")
        expected = [line.split("\t") for line in lines[1:]]
        got = [[_cell(row[i], header[i]) for i in range(len(header))]
               for _, row in sorted(tables[name].items())]
        assert got == expected, name
        compared += sum(len(r) for r in expected)
    assert compared == 20 + 7 + 7
