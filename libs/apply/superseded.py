"""Which of a table's changes in a batch are superseded, as whole columns (issue #37 goal c):
the rules are libs/snapshot/protocol.superseded (rule 2: a binlog change at or before a table's
snapshot position is already in its rows) and the driver's since_last_truncate (a change before
the batch's last truncate of the table went with it, libs/snapshot/tables.py), asked here once
per commit instead of once per row. A commit is a run of rows in commit order sharing source,
trx_file, trx_end_pos and commit_ts: one per snapshot chunk, one per binlog transaction; only
change_seq orders the rows inside it.
"""
from __future__ import annotations

from functools import reduce
from typing import Mapping

import numpy as np
import pyarrow as pa

from libs.contracts.position import commit_key
from libs.snapshot.protocol import superseded
from libs.contracts.position import BinlogPosition

COMMIT = ("source", "trx_file", "trx_end_pos", "commit_ts")  # Change.source_order's fields but change_seq


def superseded_rows(ordered: pa.Table, start: tuple | None,
                    snapshots: Mapping[str, BinlogPosition]) -> np.ndarray:
    """Per row of `ordered` (COMMIT + change_seq columns, rows in Change.source_order): is it
    superseded? `start`: the source_order of the batch's last truncate of the table (None: none);
    `snapshots`: source -> the table's latest snapshot position."""
    n = ordered.num_rows
    columns = [ordered.column(c).combine_chunks() for c in COMMIT]
    values = [(c.dictionary_encode().indices if pa.types.is_string(c.type) else c)
              .to_numpy(zero_copy_only=False)
              for c in columns]
    first = np.ones(n, bool)
    first[1:] = reduce(np.logical_or, (v[1:] != v[:-1] for v in values))
    starts = np.flatnonzero(first)
    seqs = ordered.column("change_seq").to_numpy()
    gone = np.zeros(n, bool)
    for begin, end in zip(starts, [*starts[1:], n]):
        head = {name: column[int(begin)].as_py() for name, column in zip(COMMIT, columns)}
        at = snapshots.get(head["source"])
        if superseded(at, BinlogPosition(head["trx_file"], int(head["trx_end_pos"]))):
            gone[begin:end] = True
        elif start is not None:
            commit = (head["source"],
                      *commit_key(head["trx_file"], head["trx_end_pos"], head["commit_ts"], 0)[:-1])
            if commit < start[:-1]:
                gone[begin:end] = True
            elif commit == start[:-1]:
                gone[begin:end] = seqs[begin:end] < start[-1]
    return gone
