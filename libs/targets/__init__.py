"""Target table declarations (replica-side schema): YAML + CREATE TABLE DDL -> frozen Targets.

Public API:
    load_targets(config_path=None, ddl_paths=()) -> TargetCatalog
    build_catalog(yaml_data, path, ddl_tables=()) -> TargetCatalog
    parse_ddl(text, path) -> list[TableDDL]
    Target, Column, TargetCatalog, TargetConfigError
    values.from_column_value(column, text, binary), values.implicit_default(column)
"""

from libs.targets.config import TargetCatalog, build_catalog, load_targets
from libs.targets.ddl import TableDDL, parse_ddl
from libs.targets.errors import TargetConfigError
from libs.targets.model import Column, Target, default_delta_table_name

__all__ = [
    "Column", "TableDDL", "Target", "TargetCatalog", "TargetConfigError",
    "build_catalog", "default_delta_table_name", "load_targets", "parse_ddl",
]
