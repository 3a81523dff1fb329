"""Binlog file names as servers write them: base.NNNNNN, numbered in the order they are
written (the number grows past six digits: .999999 is followed by .1000000).

A source whose shipper moved to another server (cdc-ship --follow-gtid: a promoted replica)
continues in that server's files, whose names and numbers have nothing to do with the first
server's. The topic says how many moves came before a record (its binlog_epoch header); a
consumer names the file `EPOCH/NAME` when the epoch is not 0 (a `/` is never part of a binlog
file name), and every position comparison then orders by epoch first.
"""
from __future__ import annotations

import re
from functools import lru_cache

_NUMBERED = re.compile(r"^(.*)\.(\d+)$")
_EPOCH = re.compile(r"^(\d+)/(.+)$")


def is_numbered(name: str) -> bool:
    return _NUMBERED.match(name) is not None


def epoch_file(name: str, epoch: int) -> str:
    """The name a consumer gives file `name` of epoch `epoch` (unchanged for epoch 0)."""
    return name if not epoch else f"{epoch}/{name}"


def split_epoch(name: str) -> tuple[int, str]:
    """'2/mdb-bin.000004' -> (2, 'mdb-bin.000004'); a plain name is epoch 0."""
    m = _EPOCH.match(name)
    return (int(m[1]), m[2]) if m else (0, name)


@lru_cache(maxsize=1024)  # asked per event where positions are compared (a source has few files)
def binlog_sort_key(name: str) -> tuple[int, str, int, str]:
    """(epoch, base, number, name): mdb-bin.000010 after mdb-bin.000009, every file of epoch 1
    after those of epoch 0; a name without a number sorts as number -1."""
    epoch, plain = split_epoch(name)
    m = _NUMBERED.match(plain)
    return (epoch, m[1], int(m[2]), name) if m else (epoch, plain, -1, name)
