"""Where the job's Delta tables live: decided once, here (issue #20 item 5).

JobConfig.catalog_schema unset (the default): every target and `_cdc_*` table is a Delta table
at the path `<delta_root>/<name>`, as it always was. Set to "catalog.schema": every one is the
catalog table `catalog`.`schema`.`<name>` of the session's catalog (Unity Catalog on Databricks;
locally Spark's catalog with Delta's DeltaCatalog, whose catalog is `spark_catalog`), a managed
table: the catalog decides where its files go, so delta_root holds no table then. Same names in
both: a table's directory name is its catalog name.

A TableLocation is the value the Spark stages pass around instead of a path string
(pipelines/delta/delta_tables.py reads, writes and asks Delta about one); `sql_ref` is its one SQL
spelling, identifiers quoted (libs/contracts/sql_names.py: names from a binlog are data).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from libs.settings.errors import quoted
from libs.contracts.sql_names import quote_identifier

# Spark's session catalog refuses other table and schema names (SessionCatalog.validateName: a
# Delta log is committed before that refusal, so it is checked here first); Unity Catalog
# accepts these too.
_CATALOG_NAME = re.compile(r"[A-Za-z0-9_]+")


class TableNameError(ValueError):
    """A table name that cannot name a table where the job keeps its tables."""


@dataclass(frozen=True)
class TableLocation:
    """One Delta table: at `path`, or the catalog table `name` = (catalog, schema, table)."""

    path: str | None = None
    name: tuple[str, str, str] | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.name is None):
            raise ValueError("a TableLocation is a path or a catalog name, exactly one")  # a programmer error

    @property
    def is_catalog(self) -> bool:
        return self.name is not None

    def sql_ref(self) -> str:
        """delta.`/the/path`, or `catalog`.`schema`.`table`."""
        if self.name is None:
            return "delta." + quote_identifier(self.path)
        return ".".join(quote_identifier(part) for part in self.name)

    def __str__(self) -> str:  # for messages
        return self.path if self.name is None else ".".join(self.name)


@dataclass(frozen=True)
class TableRoot:
    """Where every table of one job lives: under `delta_root`, or in `catalog_schema`."""

    delta_root: str
    catalog_schema: tuple[str, str] | None = None

    @classmethod
    def of(cls, delta_root: str, catalog_schema: str | None = None) -> "TableRoot":
        return cls(delta_root, None if catalog_schema is None else parse_catalog_schema(catalog_schema))

    def table(self, name: str) -> TableLocation:
        """The table called `name` (a target's delta_table, or one of libs/tables/system_tables.py)."""
        if self.catalog_schema is None:
            if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
                raise TableNameError(f"Delta table name {name!r} is not a single path segment")
            return TableLocation(path=self.delta_root.rstrip("/") + "/" + name)
        if not isinstance(name, str) or not _CATALOG_NAME.fullmatch(name):
            raise TableNameError(f"Delta table name {name!r} cannot be a table of "
                                 f"{'.'.join(self.catalog_schema)} (catalog_schema): a catalog table name is "
                                 f"letters, digits and '_'; name it with `delta_table:` in the targets YAML")
        return TableLocation(name=(*self.catalog_schema, name))

    def schema_ref(self) -> str | None:
        """`catalog`.`schema`, or None for path tables."""
        return None if self.catalog_schema is None else ".".join(map(quote_identifier, self.catalog_schema))

    def __str__(self) -> str:
        return self.delta_root if self.catalog_schema is None else ".".join(self.catalog_schema)


def as_root(root: "TableRoot | str") -> TableRoot:
    """A TableRoot; a plain string is a delta_root (the path tables of before)."""
    return root if isinstance(root, TableRoot) else TableRoot(root)


def parse_catalog_schema(text: str) -> tuple[str, str]:
    """'catalog.schema' -> (catalog, schema); ValueError saying what is wrong."""
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 2 or not all(_CATALOG_NAME.fullmatch(p) for p in parts):
        raise ValueError(f"must be 'catalog.schema' (two names of letters, digits and '_', e.g. main.cdc, or "
                         f"spark_catalog.cdc for Spark's own catalog), got {quoted(text)}")
    return parts[0], parts[1]
