"""The Avro schemas in schemas/, read as plain JSON (no Spark): libs/ take field names from them,
pipelines/job/schemas.py derives the Spark types (DESIGN.md: every schema declared once)."""
from __future__ import annotations

import json
from functools import lru_cache

from libs.runtime.paths import REPO_ROOT


@lru_cache(maxsize=None)
def avro_schema(name: str) -> dict:
    """The parsed Avro schema schemas/<name>.avsc."""
    return json.loads((REPO_ROOT / "schemas" / f"{name}.avsc").read_text())


def field_names(name: str) -> tuple[str, ...]:
    """The field names of the record schemas/<name>.avsc, in order."""
    return tuple(f["name"] for f in avro_schema(name)["fields"])
