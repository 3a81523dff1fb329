"""Hostile frames built with the codec's own encoders (records -> encode_event), for the
regression tests of decode limits and of the decode chain's consumers."""
from __future__ import annotations

import zlib

from libs.binlog import (DecodeContext, Event, Header, Query, TableMap, TransactionPayload, Xid,
                         decode_event, encode_event, iter_frames)
from libs.binlog.constants import EventType
from libs.binlog.events_mysql_group import COMPRESSION_NONE, COMPRESSION_ZSTD
from libs.runtime.paths import CORPUS_DIR

MYSQL8_FILE = CORPUS_DIR / "mysql/mysql-8.0.43/std_data/replicated-bin.000001"
PRE_GA_FILE = CORPUS_DIR / "mysql/mysql-8.0.43/suite/binlog/std_data/ver_5_1-wl2325_r.001"


def corpus_frames(path) -> list[tuple[int, bytes]]:
    return list(iter_frames(path.read_bytes(), file=path.name))


def context_after_fde(path) -> tuple[DecodeContext, bytes]:
    """(context after the file's Format_description, that FDE frame)."""
    ctx = DecodeContext(file=path.name)
    pos, fde = corpus_frames(path)[0]
    decode_event(fde, pos, ctx)
    return ctx, fde


def frame(ctx: DecodeContext, type_code: int, body, *, checksum: bool | None = None,
          timestamp: int = 1_700_000_000, flags: int = 0) -> bytes:
    return encode_event(Event(Header(timestamp, type_code, 1, 0, 0, flags), 0, body), ctx,
                        checksum=checksum)


def query(ctx: DecodeContext, sql: str, db: str = "test", **kw) -> bytes:
    return frame(ctx, EventType.QUERY, Query(1, 0, 0, db, sql.encode(), b""), **kw)


def xid(ctx: DecodeContext, value: int = 7, **kw) -> bytes:
    return frame(ctx, EventType.XID, Xid(value), **kw)


def table_map(ctx: DecodeContext, tm: TableMap, **kw) -> bytes:
    return frame(ctx, EventType.TABLE_MAP, tm, **kw)


def payload(ctx: DecodeContext, inner: bytes, *, ctype: int = COMPRESSION_NONE,
            usize: int | None = None, data: bytes | None = None, **kw) -> bytes:
    """A Transaction_payload frame over `inner` (frames without checksums)."""
    data = inner if data is None else data
    body = TransactionPayload(ctype, len(inner) if usize is None else usize, len(data), (), data)
    return frame(ctx, EventType.TRANSACTION_PAYLOAD, body, **kw)


def nested_payload(ctx: DecodeContext, depth: int) -> bytes:
    """`depth` Transaction_payload events one inside the other around one Xid: ~25 bytes a level."""
    inner = xid(ctx, checksum=False)
    for _ in range(depth - 1):
        inner = payload(ctx, inner, checksum=False)
    return payload(ctx, inner)


def zstd_bomb(content_size: int) -> bytes:
    """A zstd frame whose header declares (and which inflates to) content_size zero bytes,
    built in 1 MiB steps so the test itself never holds the inflated bytes."""
    import zstandard

    cobj = zstandard.ZstdCompressor().compressobj(size=content_size)
    chunk = bytes(1 << 20)
    out = [cobj.compress(chunk[:min(len(chunk), content_size - done)])
           for done in range(0, content_size, len(chunk))]
    return b"".join(out) + cobj.flush()


def zlib_bomb(content_size: int) -> bytes:
    comp = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    out = [comp.compress(chunk[:min(len(chunk), content_size - done)])
           for done in range(0, content_size, len(chunk))]
    return b"".join(out) + comp.flush()


def binlog_file(fde: bytes, frames: list[bytes]) -> tuple[bytes, list[int]]:
    """Magic + FDE + frames (header log_pos left as encoded); (bytes, each frame's position)."""
    positions, pos = [], 4 + len(fde)
    for f in frames:
        positions.append(pos)
        pos += len(f)
    return b"\xfebin" + fde + b"".join(frames), positions


__all__ = ["COMPRESSION_ZSTD", "MYSQL8_FILE", "PRE_GA_FILE", "binlog_file", "context_after_fde",
           "corpus_frames", "frame", "nested_payload", "payload", "query", "table_map", "xid",
           "zlib_bomb", "zstd_bomb"]
