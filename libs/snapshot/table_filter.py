"""Which tables by 'db.table' regexes (pure, no I/O): --include / --exclude of cdc-ship --snapshot
(which tables a run reads) and the job's tables.include / tables.exclude (libs/config/job.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from libs.settings.errors import quoted


@dataclass(frozen=True)
class TableFilter:
    """--include / --exclude: regexes matched with re.fullmatch against 'db.table'. No include
    means every table; an exclude wins over an include."""

    include: tuple[re.Pattern, ...] = ()
    exclude: tuple[re.Pattern, ...] = ()

    @classmethod
    def compile(cls, include: Iterable[str] = (), exclude: Iterable[str] = (), *,
                names: tuple[str, str] = ("--include", "--exclude")) -> "TableFilter":
        """Raises ValueError naming the setting (`names`: the flags, or the job's
        tables.include / tables.exclude) and the pattern when a regex is bad."""
        def one(flag: str, text: str) -> re.Pattern:
            try:
                return re.compile(text)
            except re.error as exc:
                raise ValueError(f"{flag} {quoted(text)} is not a regular expression: {exc}") from None
        return cls(tuple(one(names[0], p) for p in include),
                   tuple(one(names[1], p) for p in exclude))

    def __call__(self, qualified: str) -> bool:
        if self.include and not any(p.fullmatch(qualified) for p in self.include):
            return False
        return not any(p.fullmatch(qualified) for p in self.exclude)

    def excludes(self, qualified: str) -> bool:
        """An exclude matches: what leaves a table out of an interrupted run's remaining tables
        (libs/snapshot/oversized.py resume_tables), where an include does not narrow."""
        return any(p.fullmatch(qualified) for p in self.exclude)
