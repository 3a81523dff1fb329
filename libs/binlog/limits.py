"""Decode limits: how much work and memory one frame may cost, checked before the work is done.

Every limit is a bound a real server's binlog stays within; a frame beyond one raises LimitError
(a MalformedError) naming the limit, so the frame is quarantined with its position instead of
exhausting the worker. Raise a limit (job configuration `decode_limits:`) only for a source that
really writes beyond it; the defaults hold every file of the corpus.

    ctx = DecodeContext(limits=DecodeLimits(max_decompressed_bytes=512 << 20))
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from libs.settings.errors import quoted

# MAX_FIELDS (sql/unireg.h, MySQL and MariaDB): no table has more columns.
SERVER_MAX_COLUMNS = 4096
# JSON_DOCUMENT_MAX_DEPTH (sql-common/json_binary.h): the server refuses deeper documents.
SERVER_JSON_MAX_DEPTH = 100
# change_seq = event index << 20 | row index (schemas/change_record.avsc): a row index must fit.
ROW_INDEX_LIMIT = 1 << 20
MAX_PAYLOAD_DEPTH = 8  # decoding recurses ~5 Python frames per level


def _limit(default: int, doc: str):
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    max_payload_depth: int = _limit(
        1, "Transaction_payload events one inside another; control_events.h: a payload holds the "
           "events of one transaction, never another payload, so MySQL never nests (1)")
    max_decompressed_bytes: int = _limit(
        128 << 20, "Largest declared uncompressed size of a zstd Transaction_payload, MariaDB "
                   "compressed rows event or Query_compressed; refused above it before inflating, "
                   "and inflation is bounded by the declared size")
    max_rows_per_event: int = _limit(
        100_000, "Most row changes in one rows event (binlog_row_event_max_size is 8 KiB by "
                 "default, so real events hold far fewer); at most 2^20, the change_seq row index")
    max_columns: int = _limit(
        SERVER_MAX_COLUMNS, "Most columns of a Table_map / rows event: the server's MAX_FIELDS, 4096")
    max_json_depth: int = _limit(
        SERVER_JSON_MAX_DEPTH, "Deepest array/object nesting of one binary JSON value: the "
                               "server's JSON_DOCUMENT_MAX_DEPTH, 100")
    max_json_fields: int = _limit(
        1_000_000, "Most values (array elements and object members, all levels) of one binary "
                   "JSON value")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{f.name} must be a positive integer, got {quoted(value)}")
        # Above the server's own maxima nothing real is gained, and decoding recurses per level.
        for name, most in (("max_json_depth", SERVER_JSON_MAX_DEPTH),
                           ("max_payload_depth", MAX_PAYLOAD_DEPTH)):
            if getattr(self, name) > most:
                raise ValueError(f"{name} must be at most {most}, got {getattr(self, name)}")
        if self.max_rows_per_event > ROW_INDEX_LIMIT:
            raise ValueError(f"max_rows_per_event must be at most {ROW_INDEX_LIMIT} (the change_seq "
                             f"row index), got {self.max_rows_per_event}")


DEFAULT_LIMITS = DecodeLimits()


def limit_docs() -> dict[str, str]:
    """Field name -> its doc line."""
    return {f.name: f.metadata["doc"] for f in fields(DecodeLimits)}
