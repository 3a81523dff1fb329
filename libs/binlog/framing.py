"""Framing: file magic, the 19-byte common header, slicing frames by event_size, CRC32
verification, body slicing, and the decode/encode entry points built on the registry.

binlog_event.h Log_event_header: timestamp u32, type u8, server_id u32, event_size u32,
log_pos u32, flags u16 (little endian). A frame is header + body + (4-byte CRC32 when the
stream's Format_description says CRC32). Errors:
  * fewer bytes than a header or than event_size promises -> TruncatedError (stream ended early)
  * event_size < 19, a body its decoder does not consume exactly, impossible values -> MalformedError
  * CRC mismatch -> ChecksumError; unknown type without LOG_EVENT_IGNORABLE_F -> UnknownEventError
  * an event other than Rotate/Start_v3 before any Format_description -> NoFormatDescriptionError
Every error carries file, position, type code and the raw frame.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator

from libs.binlog import _frames
from libs.binlog.constants import (BINLOG_MAGIC, CHECKSUM_CRC32, CHECKSUM_LEN, COMMON_HEADER,
                        COMMON_HEADER_LEN, EVENT_LEN_OFFSET, EVENT_TYPE_OFFSET, FLAGS_OFFSET,
                        LOG_EVENT_ARTIFICIAL_F, LOG_EVENT_BINLOG_IN_USE_F, EventType)
from libs.binlog.context import DecodeContext
from libs.binlog.errors import (BinlogError, ChecksumError, MalformedError, NoFormatDescriptionError,
                     TruncatedError, UnsupportedError)
from libs.binlog.events_control import (FormatDescription, fde_for_v3, fde_has_checksum_alg, real_type,
                             wire_type)
from libs.binlog.fastrec import fast_constructor
from libs.binlog.envelope import Event, Header
from libs.binlog.events_mysql_group import use_inner_frame_decoder
from libs.binlog.registry import CODECS, decoder_for, encoder_for
from libs.binlog.wire import U32 as _U32

_CODECS_GET = CODECS.get
_make_header = fast_constructor(Header)
_make_event = fast_constructor(Event)
_frames.configure(_make_header, _make_event, DecodeContext, FormatDescription, CODECS,
                  CHECKSUM_CRC32)
# decode_event's common case in C (_frames.c): the same Event, or None for any frame it does not
# take or would reject; python_decode_event is then the reference whose result or error counts.
_fast_event = _frames.event

_unpack_header = COMMON_HEADER.unpack_from
_unpack_u32 = _U32.unpack_from
_crc32 = zlib.crc32
ENCRYPTED_MAGIC = b"\xfdbin"  # MySQL 8 encrypted binlog file header
FDE = int(EventType.FORMAT_DESCRIPTION)
ROTATE = int(EventType.ROTATE)
START_V3 = int(EventType.START_V3)
TABLE_MAP = int(EventType.TABLE_MAP)
ALLOWED_BEFORE_FDE = frozenset({FDE, ROTATE, START_V3})
# Exceptions a decoder may hit on hostile bytes; turned into MalformedError (never escape).
_BAD_INPUT = (struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError,
              zlib.error, KeyError)


def check_magic(data, *, file: str | None = None, source: str | None = None) -> None:
    head = bytes(data[:4])
    if head == BINLOG_MAGIC:
        return
    if len(head) < 4 and BINLOG_MAGIC.startswith(head):
        raise TruncatedError("file shorter than the 4-byte binlog magic", file=file, pos=0,
                             raw=head, source=source)
    if head == ENCRYPTED_MAGIC:
        raise UnsupportedError("encrypted binlog not supported", file=file, pos=0, raw=head,
                               source=source)
    raise MalformedError(f"not a binlog file (magic {head.hex()})", file=file, pos=0, raw=head,
                         source=source)


def iter_frames(data, start: int = 4, *, file: str | None = None,
                source: str | None = None) -> Iterator[tuple[int, bytes]]:
    """Raw (pos, frame bytes) by event_size, no body decoding (the shipper's loop)."""
    n = len(data)
    pos = start
    unpack = _U32.unpack_from
    while pos < n:
        left = n - pos
        if left < COMMON_HEADER_LEN:
            raise TruncatedError(f"{left} bytes left, a header needs {COMMON_HEADER_LEN}",
                                 file=file, pos=pos, raw=bytes(data[pos:]), source=source,
                                 type_code=data[pos + EVENT_TYPE_OFFSET] if left > 4 else None)
        size = unpack(data, pos + EVENT_LEN_OFFSET)[0]
        if size < COMMON_HEADER_LEN:
            raise MalformedError(f"event_size {size} < {COMMON_HEADER_LEN}", file=file, pos=pos,
                                 type_code=data[pos + EVENT_TYPE_OFFSET], raw=bytes(data[pos:pos + 19]),
                                 source=source)
        end = pos + size
        if end > n:
            raise TruncatedError(f"event_size {size} but only {left} bytes left", file=file,
                                 pos=pos, type_code=data[pos + EVENT_TYPE_OFFSET], raw=bytes(data[pos:]),
                                 source=source)
        yield pos, data[pos:end]
        pos = end


def _crc_of(frame, type_code: int, flags: int) -> int:
    if type_code == FDE and flags & LOG_EVENT_BINLOG_IN_USE_F:
        # The server clears BINLOG_IN_USE in place when it closes the file without
        # re-checksumming: the FDE CRC is computed with the flag cleared (binlog_event.h).
        tmp = bytearray(frame[:-CHECKSUM_LEN])
        tmp[FLAGS_OFFSET] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
        return zlib.crc32(tmp)
    return zlib.crc32(memoryview(frame)[:-CHECKSUM_LEN])


def _has_checksum(frame, type_code: int, flags: int, ctx: DecodeContext) -> bool:
    if type_code == FDE:
        # An FDE written by a server that logs the checksum-alg byte is always checksummed
        # (even with binlog_checksum=NONE, as the corpus' nochecksum file shows).
        return len(frame) >= COMMON_HEADER_LEN + 57 and fde_has_checksum_alg(
            bytes(frame[COMMON_HEADER_LEN + 2:COMMON_HEADER_LEN + 52]))
    if ctx.fde is None or (type_code == ROTATE and flags & LOG_EVENT_ARTIFICIAL_F):
        # Before the FDE (artificial Rotate of a dump stream) the checksum setting is unknown:
        # MariaDB sends it with a CRC only when the replica asked for CRC32. A matching CRC
        # over the frame decides (false positive chance 2^-32).
        return (len(frame) >= COMMON_HEADER_LEN + 8 + CHECKSUM_LEN
                and _U32.unpack_from(frame, len(frame) - 4)[0] == _crc_of(frame, type_code, 0))
    return ctx.has_checksum


def decode_event(frame, pos: int, ctx: DecodeContext, *, verify_checksum: bool = True,
                 checksum: bool | None = None, file: str | None = None,
                 source: str | None = None) -> Event:
    """Decode one frame (header + body [+ CRC]) starting at file offset `pos`; updates ctx
    (Format_description, Start_v3, Table_map). `checksum` forces the trailer decision
    (None: from the context)."""
    event = _fast_event(frame, pos, ctx, verify_checksum, checksum, file)
    if event is not None:
        return event
    return python_decode_event(frame, pos, ctx, verify_checksum, checksum, file, source)


def python_decode_event(frame, pos: int, ctx: DecodeContext, verify_checksum: bool = True,
                        checksum: bool | None = None, file: str | None = None,
                        source: str | None = None) -> Event:
    """decode_event in Python: the reference of the C shell, and every frame it leaves."""
    # Hot path (one call per event): locals only, the common case inline, helpers for the rare.
    type_code = None
    try:
        n = len(frame)
        if n < COMMON_HEADER_LEN:
            raise TruncatedError(f"frame of {n} bytes, header needs {COMMON_HEADER_LEN}")
        ts, type_code, server_id, size, log_pos, flags = _unpack_header(frame, 0)
        if size != n:
            cls = TruncatedError if size > n else MalformedError
            raise cls(f"event_size {size} but frame has {n} bytes")
        fde = ctx.fde
        if fde is None:
            if type_code not in ALLOWED_BEFORE_FDE:
                raise NoFormatDescriptionError(
                    f"event type {type_code} before any Format_description event")
        elif type_code < 23 and getattr(fde, "type_permutation", None):
            type_code = real_type(fde, type_code)  # pre-GA 5.1 numbering (identity else)
        header = _make_header(ts, type_code, server_id, size, log_pos, flags)
        if checksum is not None:
            has_crc = checksum
        elif fde is not None and type_code != FDE and not (
                type_code == ROTATE and flags & LOG_EVENT_ARTIFICIAL_F):
            has_crc = ctx.has_checksum
        else:
            has_crc = _has_checksum(frame, type_code, flags, ctx)
        checksum_ok = None
        end = size
        if has_crc:
            end = size - CHECKSUM_LEN
            if end < COMMON_HEADER_LEN:
                raise MalformedError(f"event_size {size} too small for header and checksum")
            if verify_checksum:
                stored = _unpack_u32(frame, end)[0]
                checksum_ok = stored == (_crc_of(frame, type_code, flags) if type_code == FDE
                                         else _crc32(memoryview(frame)[:end]))
                if not checksum_ok:
                    raise ChecksumError(f"CRC32 mismatch (stored 0x{stored:08x})")
        body = frame[COMMON_HEADER_LEN:end]
        if type(body) is not bytes:
            body = bytes(body)
        entry = _CODECS_GET(type_code)
        record = (entry[0] if entry is not None else decoder_for(header))(header, body, ctx)
    except BinlogError as err:
        raise _located(err, frame, pos, type_code, ctx, file, source)
    except _BAD_INPUT as exc:
        raise _located(MalformedError(f"{type(exc).__name__}: {exc}"), frame, pos, type_code, ctx,
                       file, source) from exc
    if type_code == TABLE_MAP:
        table_id = getattr(record, "table_id", None)
        if table_id is not None:
            ctx.table_maps[table_id] = record
    elif type_code == FDE or type_code == START_V3:
        _update_context(type_code, record, ctx)
    return _make_event(header, pos, record, checksum_ok, file if file is not None else ctx.file)


def _located(err: BinlogError, frame, pos: int, type_code, ctx: DecodeContext, file, source):
    """`err` with what decode_event knows filled in: type code, raw frame, file, position."""
    if err.type_code is None:
        err.type_code = type_code
    if not err.raw:
        err.raw = bytes(frame)
    return err.located(file=file if file is not None else ctx.file, pos=pos,
                       source=source if source is not None else ctx.source)


def _update_context(type_code: int, record, ctx: DecodeContext) -> None:
    """A new Format_description (or v3 Start) restarts the decoding context. Table_maps are
    remembered inline by the only caller, decode_event, so they are not handled here."""
    if type_code == FDE:
        ctx.fde = record
        ctx.table_maps.clear()
    elif type_code == START_V3:
        ctx.fde = fde_for_v3(record)
        ctx.table_maps.clear()


def iter_events(data, *, file: str | None = None, source: str | None = None,
                ctx: DecodeContext | None = None, verify_checksum: bool = True,
                start: int = 4) -> Iterator[Event]:
    """Every event of a whole binlog file's bytes (with magic), decoded, in order. Raises the
    typed BinlogError of the first bad frame after yielding everything before it."""
    if ctx is None:
        ctx = DecodeContext(file=file, source=source)
    if start == 4:
        check_magic(data, file=file, source=source)
    # iter_frames inlined (one generator per event less); same checks and errors.
    n = len(data)
    pos = start
    unpack = _unpack_u32
    fast = _fast_event
    while pos < n:
        if n - pos < COMMON_HEADER_LEN:
            break  # iter_frames raises the TruncatedError
        size = unpack(data, pos + EVENT_LEN_OFFSET)[0]
        end = pos + size
        if size < COMMON_HEADER_LEN or end > n:
            break
        frame = data[pos:end]
        event = fast(frame, pos, ctx, verify_checksum, None, file)
        yield event if event is not None else python_decode_event(frame, pos, ctx, verify_checksum,
                                                                  None, file, source)
        pos = end
    for pos, frame in iter_frames(data, pos, file=file, source=source):
        yield decode_event(frame, pos, ctx, verify_checksum=verify_checksum, file=file,
                           source=source)


def decode_frames_no_checksum(plain: bytes, ctx: DecodeContext) -> Iterator[Event]:
    """Inner events of a Transaction_payload: no magic, no checksums, pos relative to payload."""
    for pos, frame in iter_frames(plain, 0):
        yield decode_event(frame, pos, ctx, checksum=False)


use_inner_frame_decoder(decode_frames_no_checksum)


def encode_event(event: Event, ctx: DecodeContext, *, checksum: bool | None = None) -> bytes:
    """Header + body (+ CRC32) for `event`; the inverse of decode_event. event_size is
    recomputed from the body; the other header fields are taken from event.header."""
    h = event.header
    body = encoder_for(h, event.body)(event.body, h, ctx)
    if checksum is None:
        if h.type_code == FDE:
            sv = getattr(event.body, "server_version", "")
            checksum = fde_has_checksum_alg(sv.encode("latin-1"))
        elif ctx.fde is None or (h.type_code == ROTATE and h.flags & LOG_EVENT_ARTIFICIAL_F):
            checksum = event.checksum_ok is not None
        else:
            checksum = ctx.has_checksum
    size = COMMON_HEADER_LEN + len(body) + (CHECKSUM_LEN if checksum else 0)
    code = wire_type(ctx.fde, h.type_code) if ctx.fde is not None and h.type_code != FDE \
        else h.type_code
    frame = COMMON_HEADER.pack(h.timestamp, code, h.server_id, size, h.log_pos, h.flags) + body
    if checksum:
        frame += _U32.pack(_crc_of(frame + b"\0\0\0\0", h.type_code, h.flags))
    return frame


def crc_matches(frame: bytes) -> bool:
    """Does the frame end in the CRC32 of the rest? Decides the trailer where no FDE says it
    (a Rotate before the FDE; the master's fake Rotate); a false match has chance 2^-32."""
    return len(frame) >= COMMON_HEADER_LEN + 4 and \
        _U32.unpack_from(frame, len(frame) - 4)[0] == zlib.crc32(memoryview(frame)[:-4])
