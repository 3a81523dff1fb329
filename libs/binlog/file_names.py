"""Binlog file names as servers write them: base.NNNNNN, numbered in the order they are
written (the number grows past six digits: .999999 is followed by .1000000)."""
from __future__ import annotations

import re
from functools import lru_cache

_NUMBERED = re.compile(r"^(.*)\.(\d+)$")


def is_numbered(name: str) -> bool:
    return _NUMBERED.match(name) is not None


@lru_cache(maxsize=1024)  # asked per event where positions are compared (a source has few files)
def binlog_sort_key(name: str) -> tuple[str, int, str]:
    """mdb-bin.000010 after mdb-bin.000009; a name without a number sorts as number -1."""
    m = _NUMBERED.match(name)
    return (m[1], int(m[2]), name) if m else (name, -1, name)
