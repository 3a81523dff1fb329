"""Why the apply stage stops the job (libs/runtime/stops.py): the micro-batch is not committed, and
nothing of it was written to a target table (a followed target's schema evolution excepted:
pipelines/apply/batch_ddl.py). Each says in one line what stopped it and where. A target table
whose schema does not match its declaration: pipelines/apply/tables.py TargetSchemaMismatch."""
from __future__ import annotations

from libs.replay import ReplayError
from libs.runtime.stops import JobStopped
from libs.targets import TargetConfigError


class ApplyStopped(JobStopped):
    """The batch cannot be applied (strict mode); nothing of it was written. Carries the
    ReplayError (table, key, lineage with GTID/file/position), as text when an executor met it."""

    def __init__(self, batch_id: int, delta_table: str, error: ReplayError | str):
        self.batch_id, self.delta_table, self.error = batch_id, delta_table, error
        super().__init__(f"apply stopped in batch {batch_id}, Delta table {delta_table}: {error}")


class SourceTargetStopped(JobStopped):
    """A target derived from a source schema cannot be built: the YAML override does not fit the
    source's SHOW CREATE TABLE (a `defaults` column it lacks, ...) or that DDL cannot be parsed.
    Raised before anything of the batch is written; every restart stops here until it is fixed."""

    def __init__(self, batch_id: int, error: TargetConfigError):
        super().__init__(f"batch {batch_id}: a target from the source schema: {error}")


class TargetNameStopped(JobStopped):
    """A target's Delta table name cannot name a table where the job keeps them (a catalog
    table name is letters, digits and '_': libs/tables/table_location.py)."""


class SchemaChangeStopped(JobStopped):
    """A DDL the job does not follow: schema_changes 'fail', or a type change Delta cannot hold
    value for value. Names the DDL and its position."""
