"""Partial JSON updates: a JSON diff carried in ColumnValue.text, applied to the current value.

MySQL 8 logs `UPDATE t SET j = JSON_SET(j, '$.a', 1)` with binlog_row_value_options=PARTIAL_JSON
as a diff (Partial_update_rows_log_event: operations REPLACE / INSERT / REMOVE on a path) instead
of the whole document. The codec hands such a column to the replay as

    text = JSON_DIFF_MARKER + <JSON array of operations>
    e.g. '@json-diff:[{"op":"replace","path":"$.a[1].b","value":7},{"op":"remove","path":"$.c"}]'

No JSON document text can start with '@', so a marked value is never mistaken for a document.
Operations, applied in order on the current value of the row (SQL NULL stays NULL, as JSON_SET(NULL, ...)):
    set      JSON_SET:     replace the value at path, or add it when absent
    replace  JSON_REPLACE: only when the path exists (the binlog's REPLACE)
    insert   JSON_INSERT:  only when the path is absent (the binlog's INSERT)
    remove   JSON_REMOVE:  delete the member / array element when present (the binlog's REMOVE)
    insert_at the binlog's INSERT (json_diff.h): add an object member, or insert into an array
             at the index shifting later elements (JSON_ARRAY_INSERT; past the end appends)
The codec's decoded diffs (libs/binlog/rows_partial.py JsonDiff: operation replace|insert|remove,
path, value as JSON text) become this text with `text_of_binlog_diffs`.
Paths: `$`, `.key`, `."quoted key"`, `[n]`. Adding at an array index past the end appends;
a parent that does not exist makes the operation a no-op (MySQL semantics).
"""

from __future__ import annotations

import json
import re
from typing import Any

JSON_DIFF_MARKER = "@json-diff:"
_LEG = re.compile(r'\.(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_$][\w$]*))|\[(\d+)\]')
_OPS = {"set", "replace", "insert", "remove", "insert_at"}
_BINLOG_OPS = {"replace": "replace", "insert": "insert_at", "remove": "remove"}


class JsonDiffError(ValueError):
    """A malformed diff or path."""


def is_json_diff(text: str | None) -> bool:
    return text is not None and text.startswith(JSON_DIFF_MARKER)


def encode_json_diff(operations: list[dict[str, Any]]) -> str:
    """The ColumnValue.text of a diff (for the codec and for tests)."""
    return JSON_DIFF_MARKER + json.dumps(operations, separators=(",", ":"))


def text_of_binlog_diffs(diffs) -> str:
    """ColumnValue.text for decoded Partial_update_rows diffs (objects with .operation, .path and
    .value = JSON text or None)."""
    operations = []
    for diff in diffs:
        operation = {"op": _BINLOG_OPS[diff.operation], "path": diff.path}
        if diff.operation != "remove":
            operation["value"] = json.loads(diff.value)
        operations.append(operation)
    return encode_json_diff(operations)


def parse_path(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise JsonDiffError(f"JSON path must start with '$': {path!r}")
    legs, pos = [], 1
    while pos < len(path):
        match = _LEG.match(path, pos)
        if not match:
            raise JsonDiffError(f"bad JSON path {path!r} at {pos}")
        quoted, plain, index = match.groups()
        legs.append(int(index) if index is not None
                    else json.loads(f'"{quoted}"') if quoted is not None else plain)
        pos = match.end()
    return legs


def _apply_one(doc: Any, op: str, legs: list[str | int], value: Any) -> Any:
    if not legs:  # the whole document
        return doc if op in ("insert", "remove") else value
    parent = doc
    for leg in legs[:-1]:
        if isinstance(leg, int):
            if not isinstance(parent, list):  # MySQL auto-wraps: $[0] of a scalar is the scalar
                if leg != 0:
                    return doc
                continue
            if leg >= len(parent):
                return doc
            parent = parent[leg]
        else:
            if not isinstance(parent, dict) or leg not in parent:
                return doc
            parent = parent[leg]
    last = legs[-1]
    if isinstance(last, int):
        if not isinstance(parent, list):
            return doc  # (auto-wrapping a scalar on insert is not produced by a binlog diff)
        exists = last < len(parent)
        if op == "remove" and exists:
            del parent[last]
        elif op in ("set", "replace") and exists:
            parent[last] = value
        elif op in ("set", "insert") and not exists:
            parent.append(value)
        elif op == "insert_at":
            parent.insert(min(last, len(parent)), value)
        return doc
    if not isinstance(parent, dict):
        return doc
    exists = last in parent
    if op == "remove" and exists:
        del parent[last]
    elif (op in ("set", "replace") and exists) or (op in ("set", "insert", "insert_at") and not exists):
        parent[last] = value
    return doc


def apply_json_diff(current_text: str | None, diff_text: str) -> str | None:
    """Apply a marked diff to the current JSON text; returns the new JSON text (None stays None)."""
    try:
        operations = json.loads(diff_text[len(JSON_DIFF_MARKER):])
    except json.JSONDecodeError as exc:
        raise JsonDiffError(f"malformed JSON diff: {exc}") from None
    if current_text is None:
        return None
    doc = json.loads(current_text)
    for operation in operations:
        op = operation.get("op") if isinstance(operation, dict) else None
        if op not in _OPS or "path" not in operation or (op != "remove" and "value" not in operation):
            raise JsonDiffError(f"bad JSON diff operation {operation!r}")
        doc = _apply_one(doc, op, parse_path(operation["path"]), operation.get("value"))
    return json.dumps(doc, separators=(", ", ": "), ensure_ascii=False)
