"""Differential harness of the C row-image core (libs/binlog/rows_core.py) against the Python
decoders (rows_images: the reference), shared by tests/unit/codec_fuzz/test_row_core.py and
bench/fuzz_row_core.py.

A case is what rows.py hands to its change reader for one rows event (kind, the two image
decoders, the body, where the images start, the row limit); `mutate` changes its image bytes and
`outcomes` reads them both ways: ("ok", canonical rows) or ("error", exception class name).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import libs.binlog.rows as rows_mod
from libs.binlog import BinlogError, DecodeContext, iter_events
from libs.binlog.rows_core import KIND_CODES, read_changes
from libs.runtime.paths import CORPUS_DIR

# What rows.decode_rows turns into MalformedError (a decode failure, never a bug)
DECODE_ERRORS = (BinlogError, struct.error, IndexError, OverflowError, ValueError,
                 UnicodeDecodeError)


@dataclass(frozen=True)
class Case:
    kind: str
    first: object
    second: object
    body: bytes
    pos: int
    max_rows: int
    row_bytes: int


def canon_value(v):
    """Type and exact text of a value (floats by their bits: -0.0, NaN payloads)."""
    if type(v) is float:
        return "float", struct.pack("<d", v)
    return type(v).__name__, repr(v)


def canon_rows(rows) -> list:
    def image(d):
        return None if d is None else tuple((k, canon_value(v)) for k, v in d.items())
    return [(image(c.before), image(c.after)) for c in rows]


def core_outcome(case: Case, body: bytes):
    first_plan = case.first.core
    second_plan = case.second.core if case.kind == "update" else None
    end = len(body)
    unbounded = (end - case.pos) // max(case.row_bytes, 1) > case.max_rows
    try:
        rows = read_changes(KIND_CODES[case.kind], first_plan, second_plan, rows_mod._make_change,
                            body, case.pos, case.max_rows if unbounded else -1)
    except DECODE_ERRORS as exc:
        return "error", type(exc).__name__
    return "ok", canon_rows(rows)


def python_outcome(case: Case, body: bytes):
    try:
        rows = rows_mod._read_changes(case.kind, case.first, case.second, body, case.pos,
                                      len(body), case.max_rows, case.row_bytes)
    except DECODE_ERRORS as exc:
        return "error", type(exc).__name__
    return "ok", canon_rows(rows)


def same(core, python) -> bool:
    """Both read the same rows, or both failed (the core's error is always its own
    ValueError: rows.py then takes the Python decoders' error)."""
    return core == python if core[0] == "ok" or python[0] == "ok" else True


def corpus_binlogs() -> list:
    """Every binlog file of the corpus (by its magic)."""
    def is_binlog(path) -> bool:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\xfebin"
    return sorted(p for p in CORPUS_DIR.rglob("*") if p.is_file() and is_binlog(p))


def collect_cases(paths, per_file: int, rng: random.Random) -> list[Case]:
    """Up to `per_file` rows events with core plans per file (the first ones, then a sample)."""
    cases: list[Case] = []
    real = rows_mod._changes
    for path in paths:
        data = path.read_bytes()
        seen: list[Case] = []

        def record(kind, first, second, body, pos, end, max_rows, row_bytes):
            if getattr(first, "core", None) is not None and (
                    kind != "update" or getattr(second, "core", None) is not None):
                seen.append(Case(kind, first, second, bytes(body), pos, max_rows, row_bytes))
            return real(kind, first, second, body, pos, end, max_rows, row_bytes)

        rows_mod._changes = record
        try:
            for _ in iter_events(data, file=path.name, ctx=DecodeContext(file=path.name)):
                if len(seen) > 20 * per_file:
                    break
        except BinlogError:
            pass
        finally:
            rows_mod._changes = real
        keep = seen[:per_file // 2]
        rest = seen[per_file // 2:]
        keep += rng.sample(rest, min(len(rest), per_file - len(keep)))
        cases += keep
    return cases


BOUNDARY = (0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0xFFFFFF, 0x7FFFFFFF, 0xFFFFFFFF)


def mutate(case: Case, rng: random.Random) -> bytes:
    """The body with its row images changed: byte flips, boundary lengths, truncation,
    insertion or deletion (never the post-header before case.pos)."""
    head, images = case.body[:case.pos], bytearray(case.body[case.pos:])
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not images:
            break
        how = rng.randrange(6)
        i = rng.randrange(len(images))
        if how == 0:
            images[i] ^= 1 << rng.randrange(8)
        elif how == 1:
            images[i] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, rng.randrange(256)))
        elif how == 2:
            width = rng.choice((1, 2, 3, 4))
            raw = rng.choice(BOUNDARY + (len(images), len(images) - i)) & ((1 << 8 * width) - 1)
            images[i:i + width] = raw.to_bytes(width, "little")[:len(images) - i]
        elif how == 3:
            del images[rng.randrange(len(images) + 1):]
        elif how == 4:
            del images[i:i + rng.randint(1, 8)]
        else:
            images[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return head + bytes(images)
