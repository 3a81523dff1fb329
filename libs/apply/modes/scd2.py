"""history: scd2: one row per version of each source row, a version being the row as one committed
source transaction left it (libs/replay/versions.py makes them; README "History targets"). Its
open versions (`_is_current`) are its rows for the replay. Replayed on the driver only: the
executors' fold and replay, and a driver mirror, hold rows, not versions."""
from __future__ import annotations

from libs.replay.versions import IS_CURRENT, replay_versions


class Scd2:
    name = "scd2"
    columns = "history_columns"
    live = (IS_CURRENT, True)
    folds = False
    on_executors = False
    mirrors = False
    keyed_copies = False
    takes_job_delete = False  # a deleted row's version is closed, `_deleted`: it is its soft delete

    @staticmethod
    def replay(target, current_rows, changes, *, mode):
        return replay_versions(target, current_rows, changes, mode=mode)


SCD2 = Scd2()
