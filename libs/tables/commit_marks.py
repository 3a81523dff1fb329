"""Batch marks on Delta commits: how the append-only tables stay exactly once (DESIGN.md
"Exactly once": Delta writes are idempotent per batch).

An append of micro-batch N by job `app_id` carries the mark {"cdc_app_id": app_id,
"cdc_batch_id": N} as its commit's userMetadata. Before appending, the writer asks for the newest
commit marked by its app_id; the batch is committed already when that mark's batch id is N or
later (batch ids only grow within a query, as Delta's txnVersion must). This is the pattern of
Iceberg's Flink sink (the max committed checkpoint id in the snapshot summary).

Why not Delta's txnAppId/txnVersion for these appends: Delta answers its txn check from the
snapshot's computed state, a state reconstruction (3 Spark jobs) on every commit to a table that
changed since (delta-io/delta#4708; fixed on master only, #6929). An append of 100 rows took
1.16 s with txnAppId, 0.29 s with a mark, 0.33 s with neither (bench/append_marks.py, third
round). The target MERGEs keep Delta's txn identifiers: a MERGE computes that state anyway.

Like Delta's txnAppId, one app_id has one writer at a time: Spark's checkpoint lets one run of
the query be active; two jobs sharing an app_id would defeat either mechanism.
"""
from __future__ import annotations

import json
from typing import Iterable

_APP, _BATCH = "cdc_app_id", "cdc_batch_id"


def mark(app_id: str, batch_id: int) -> str:
    """The userMetadata of an append of `batch_id` by `app_id`."""
    return json.dumps({_APP: app_id, _BATCH: int(batch_id)}, sort_keys=True)


def parse_mark(user_metadata: str | None) -> tuple[str, int] | None:
    """(app_id, batch_id) of a commit's userMetadata when it is a mark; None for any other text
    (another writer's metadata, none)."""
    if not user_metadata:
        return None
    try:
        fields = json.loads(user_metadata)
    except ValueError:
        return None
    if (not isinstance(fields, dict) or not isinstance(fields.get(_APP), str)
            or type(fields.get(_BATCH)) is not int):
        return None
    return fields[_APP], fields[_BATCH]


def marked_batch(user_metadata: str | None, app_id: str) -> int | None:
    """The batch id a commit's userMetadata marks for `app_id` (None: not a mark of app_id)."""
    parsed = parse_mark(user_metadata)
    return parsed[1] if parsed is not None and parsed[0] == app_id else None


def last_marked_batch(user_metadata_newest_first: Iterable[str | None], app_id: str) -> int | None:
    """The batch id of the newest commit marked by `app_id` (None: it never appended)."""
    for text in user_metadata_newest_first:
        batch = marked_batch(text, app_id)
        if batch is not None:
            return batch
    return None
