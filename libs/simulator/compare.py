"""Compare a replicated table with the simulator's expected table (libs/simulator/expected.py).

The replicated rows come as Python values the way Spark returns a Delta row (Decimal, datetime,
bytearray, str, int, float); `expected_form` renders them in the expected files' JSON form so
the two compare as multisets (keyless tables may hold identical rows: WL#5092 "no PK").
Only the manifest's columns are compared: the target's lineage columns are not the master's.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping

_FSP = re.compile(r"^(?:DATETIME|TIMESTAMP|TIME)\((\d)\)", re.IGNORECASE)


def expected_form(sql_type: str, value: Any) -> Any:
    """One replicated value in the expected files' JSON form (expected.py's layout)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex().upper()}
    if isinstance(value, dt.datetime):
        match = _FSP.match(sql_type)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        digits = int(match.group(1)) if match else 0
        return text + (f".{value.microsecond:06d}"[:digits + 1] if digits else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"no expected-file form for {type(value).__name__} ({sql_type})")


@dataclass(frozen=True)
class TableComparison:
    table: str
    expected_rows: int
    actual_rows: int
    missing: tuple[str, ...]  # expected rows the replica lacks (JSON)
    extra: tuple[str, ...]  # replica rows the master does not hold (JSON)

    @property
    def equal(self) -> bool:
        return not self.missing and not self.extra

    def summary(self, limit: int = 3) -> str:
        if self.equal:
            return f"{self.table}: {self.actual_rows} rows, equal to the expected table"
        lines = [f"{self.table}: {self.actual_rows} rows, expected {self.expected_rows}; "
                 f"{len(self.missing)} missing, {len(self.extra)} extra"]
        lines += [f"  missing {row}" for row in self.missing[:limit]]
        lines += [f"  extra   {row}" for row in self.extra[:limit]]
        return "\n".join(lines)


def _multiset(rows: Iterable[Mapping[str, Any]]) -> Counter:
    return Counter(json.dumps(dict(row), sort_keys=True) for row in rows)


def compare_table(table: str, manifest_entry: Mapping[str, Any], expected_rows: list[dict],
                  actual_rows: Iterable[Mapping[str, Any]]) -> TableComparison:
    columns = [(c["name"], c["type"]) for c in manifest_entry["columns"]]
    actual = [{name: expected_form(sql_type, row[name]) for name, sql_type in columns}
              for row in actual_rows]
    want, got = _multiset(expected_rows), _multiset(actual)
    return TableComparison(table, sum(want.values()), sum(got.values()),
                           tuple(sorted((want - got).elements())), tuple(sorted((got - want).elements())))


def load_expected(directory) -> tuple[dict, dict[str, list[dict]]]:
    """(manifest, {"db.table": expected rows}) of an --expected directory."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    rows = {name: [json.loads(line) for line in (directory / entry["file"]).read_text().splitlines() if line]
            for name, entry in manifest["tables"].items()}
    return manifest, rows
