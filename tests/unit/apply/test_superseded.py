"""libs/apply/superseded.py: asked once per commit, it marks the rows the per-row rules mark
(protocol.superseded, rule 2; before the batch's last truncate: source_order < start)."""
import random

import numpy as np
import pyarrow as pa
import pytest

from libs.apply.fold_values import commit_order_of
from libs.apply.superseded import COMMIT, superseded_rows
from libs.contracts.position import sort_key_of
from libs.snapshot.protocol import superseded
from libs.contracts.position import BinlogPosition

SCHEMA = pa.schema([("source", pa.string()), ("trx_file", pa.string()), ("trx_end_pos", pa.int64()),
                    ("commit_ts", pa.int64()), ("change_seq", pa.int64())])


def _per_row(rows, start, snapshots):
    """The rule as the replay asked it before, one row at a time."""
    def gone(r):
        if start is not None and sort_key_of(**r) < start:
            return True
        return superseded(snapshots.get(r["source"]), BinlogPosition(r["trx_file"], r["trx_end_pos"]))
    return [gone(r) for r in rows]


def _ordered(rows):
    table = pa.Table.from_pylist(rows, SCHEMA)
    return table.take(commit_order_of(table))


def row(source, file, pos, ts, seq):
    return dict(zip([*COMMIT, "change_seq"], (source, file, pos, ts, seq)))


CHUNK = [row("s1", "b.000002", 1250, 10, (1 << 20) + i) for i in range(4)]
START = sort_key_of(**row("s1", "b.000002", 1250, 10, (1 << 20) + 2))


@pytest.mark.parametrize("rows, start, snapshots, expected", [
    (CHUNK, None, {}, [False] * 4),
    (CHUNK, START, {}, [True, True, False, False]),  # a truncate inside the commit: by change_seq
    (CHUNK, sort_key_of(**row("s1", "b.000002", 1300, 10, 0)), {}, [True] * 4),  # a later commit's
    (CHUNK, sort_key_of(**row("s1", "b.000001", 9999, 10, 0)), {}, [False] * 4),  # an earlier file's
    # .1000000 after .999999: not text order
    ([row("s1", "b.1000000", 4, 1, 0), row("s1", "b.999999", 4, 1, 0)],
     sort_key_of(**row("s1", "b.999999", 5, 1, 0)), {}, [False, True]),
    # rule 2 per source: at or before its snapshot position
    ([row("s1", "b.000002", 1250, 1, 0), row("s1", "b.000002", 1251, 1, 0), row("s2", "b.000002", 1, 1, 0)],
     None, {"s1": BinlogPosition("b.000002", 1250)}, [True, False, False]),
])
def test_superseded_rows(rows, start, snapshots, expected):
    ordered = _ordered(rows)
    assert superseded_rows(ordered, start, snapshots).tolist() == _per_row(
        ordered.to_pylist(), start, snapshots)
    assert sorted(zip(map(repr, ordered.to_pylist()),
                      superseded_rows(ordered, start, snapshots).tolist())) == \
        sorted(zip(map(repr, rows), expected))


def test_random_batches_mark_what_the_per_row_rules_mark():
    rng = random.Random(5)
    for _ in range(300):
        rows = [row(rng.choice(["s1", "s2"]), rng.choice(["b.000009", "b.000010", "b.1000000"]),
                    rng.choice([4, 120, 1250]), rng.choice([1, 2]), rng.randrange(4))
                for _ in range(rng.randrange(0, 40))]
        start = sort_key_of(**rng.choice(rows)) if rows and rng.random() < 0.7 else None
        snapshots = ({"s1": BinlogPosition(rng.choice(["b.000009", "b.000010"]), rng.choice([4, 1250]))}
                     if rng.random() < 0.5 else {})
        ordered = _ordered(rows)
        got = superseded_rows(ordered, start, snapshots)
        assert isinstance(got, np.ndarray) and got.tolist() == _per_row(ordered.to_pylist(), start, snapshots)
