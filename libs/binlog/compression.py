"""Every decompression the codec does, each bounded before it starts (limits.py): the declared
uncompressed size is checked against DecodeLimits.max_decompressed_bytes, and the inflater may
produce at most that many bytes (+1, to tell "more than declared"), so a small hostile frame
never costs more memory than the limit.

  MariaDB (log_event.cc binlog_buf_compress, Query_compressed and compressed rows events):
      byte 0 = 0x80 | algorithm << 4 | n (algorithm 0 = zlib, n = 1..4),
      n bytes big-endian uncompressed length, then the zlib stream.
  MySQL 8 Transaction_payload (control_events.h, compression type 0 = ZSTD): the payload's
      uncompressed size field, then a zstd frame.
"""
from __future__ import annotations

import zlib

from libs.binlog.errors import LimitError, MalformedError
from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits


def check_declared(size: int, limits: DecodeLimits, what: str) -> None:
    if size > limits.max_decompressed_bytes:
        raise LimitError(f"{what}: declared uncompressed size {size} exceeds max_decompressed_bytes "
                         f"{limits.max_decompressed_bytes}")


def binlog_buf_uncompress(data, what: str, limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    """The plain bytes of a MariaDB compressed buffer (layout above)."""
    if not data or not data[0] & 0x80:
        raise MalformedError(f"{what}: compressed flag missing")
    if (data[0] >> 4) & 0x07:
        raise MalformedError(f"{what}: unknown compression algorithm {(data[0] >> 4) & 0x07}")
    n = data[0] & 0x07
    if not 1 <= n <= 4 or len(data) < 1 + n:
        raise MalformedError(f"{what}: length-of-length {n} impossible")
    size = int.from_bytes(data[1:1 + n], "big")
    check_declared(size, limits, what)
    inflater = zlib.decompressobj()
    try:
        plain = inflater.decompress(bytes(data[1 + n:]), size + 1)
    except zlib.error as exc:
        raise MalformedError(f"{what}: zlib: {exc}") from None
    if len(plain) != size or not inflater.eof:
        raise MalformedError(f"{what}: inflates to {len(plain)}{'+' if not inflater.eof else ''} "
                             f"bytes, header says {size}")
    return plain


def binlog_buf_compress(plain: bytes) -> bytes:
    n = max(1, (len(plain).bit_length() + 7) // 8)
    return bytes((0x80 | n,)) + len(plain).to_bytes(n, "big") + zlib.compress(plain)


def zstd_uncompress(data: bytes, size: int, what: str,
                    limits: DecodeLimits = DEFAULT_LIMITS) -> bytes:
    """A zstd frame that must inflate to exactly `size` bytes (the declared size). Read through a
    bounded stream: ZstdDecompressor.decompress allocates whatever content size the frame header
    claims, whatever max_output_size says."""
    check_declared(size, limits, what)
    import zstandard  # only needed for MySQL 8 binlog_transaction_compression

    # The window is allocated before any output: at most 8 MiB (zstd levels <= 19) or the
    # declared size, and never above zstd's own default limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT 27).
    window = min(1 << 27, max(8 << 20, 1 << max(size - 1, 1).bit_length()))
    try:
        with zstandard.ZstdDecompressor(max_window_size=window).stream_reader(
                data, read_across_frames=False) as reader:
            plain = reader.read(size + 1)
    except zstandard.ZstdError as exc:
        raise MalformedError(f"{what}: zstd: {exc}") from None
    if len(plain) != size:
        raise MalformedError(f"{what}: inflates to {len(plain)}{'+' if len(plain) > size else ''} "
                             f"bytes, declared {size}")
    return plain
