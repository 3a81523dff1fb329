"""The job's own Delta tables all carry the prefix target declarations may not use
(libs/tables/system_tables.py SYSTEM_TABLE_PREFIX, refused by libs/targets/target_entry.py): a new
system table outside it would be unguarded."""
import pytest

from libs.targets import TargetConfigError, build_catalog, parse_ddl
from libs.tables.system_tables import (CHANGE_LOG, CHANGES, PROGRESS, QUARANTINE, SYSTEM_TABLE_PREFIX,
                                       SYSTEM_TABLES as DECLARED)

SYSTEM_TABLES = {CHANGE_LOG, PROGRESS, QUARANTINE, CHANGES, *DECLARED}


@pytest.mark.parametrize("name", sorted(SYSTEM_TABLES))
def test_every_system_table_is_reserved(name):
    assert name.startswith(SYSTEM_TABLE_PREFIX)
    ddl = parse_ddl("CREATE TABLE d.t (id INT PRIMARY KEY)", "t.sql")
    with pytest.raises(TargetConfigError, match="reserved"):
        build_catalog({"targets": {"d.t": {"delta_table": name}}}, "t.yaml", ddl)
