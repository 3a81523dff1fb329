"""What the shipper checks on each frame of a binlog file before publishing it (the "nothing
lost, nothing made up" promise: DESIGN.md "Kafka record" and "Bad input").

Per file, the Format_description decides whether every later frame ends in a CRC32
(binlog_event.h: FDE checksum_alg, BINLOG_CHECKSUM_ALG_CRC32). The FDE itself, and anything
before it (a Rotate, a v3 Start), goes through the codec's decode_event, which knows the
FDE's own checksum rules (BINLOG_IN_USE cleared before the CRC) and which events may precede
an FDE; every later frame only has its CRC32 compared (zlib, ~1 GB/s: no body decoding on the
shipper's hot path). A relay log carries its master's FDEs mid-file: each resets the context.

A Rotate names the next file: it must decode (8-byte position, UTF-8 name) and the name must
be a plain file name (binlog_dir.plain_name_problem), or the frame is refused.
"""
from __future__ import annotations

import zlib

from libs.binlog import DecodeContext, decode_event
from libs.binlog.constants import COMMON_HEADER_LEN, EventType
from libs.binlog.errors import BinlogError
from libs.binlog.framing import crc_matches
from libs.binlog.header import event_type
from libs.binlog.wire import U32 as _U32, U64 as _U64

from libs.shipper.binlog_dir import plain_name_problem
from libs.source.errors import FrameError
from libs.shipper.kafka_sink import MAX_EVENT_BYTES

FDE = int(EventType.FORMAT_DESCRIPTION)
ROTATE = int(EventType.ROTATE)


def rotate_body(frame: bytes, checksum: bool) -> tuple[int, str]:
    """(position, next file name) of a Rotate frame (control_events.h Rotate_event: u64 pos +
    name up to the checksum). ValueError when it cannot be one."""
    end = len(frame) - (4 if checksum else 0)
    if end < COMMON_HEADER_LEN + 8:
        raise ValueError(f"Rotate event of {len(frame)} bytes is too short")
    position = _U64.unpack_from(frame, COMMON_HEADER_LEN)[0]
    raw = bytes(frame[COMMON_HEADER_LEN + 8:end])
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"next file name {raw[:64]!r} is not UTF-8") from None
    problem = plain_name_problem(name)
    if problem:
        raise ValueError(f"next file name: {problem}")
    return position, name



def check_event_size(size: int, *, source: str, file: str, pos: int) -> None:
    """From the header alone, before buffering the body: a size no frame can have."""
    if size < COMMON_HEADER_LEN:
        raise FrameError(f"event_size {size} < {COMMON_HEADER_LEN}: not a binlog event",
                         source=source, file=file, pos=pos)
    if size > MAX_EVENT_BYTES:
        raise FrameError(f"event_size {size} exceeds the largest event the topic takes "
                         f"({MAX_EVENT_BYTES})", source=source, file=file, pos=pos)


class FrameCheck:
    """Verifies the frames of one file in order; remembers the last Rotate's target."""

    def __init__(self, file: str, source: str):
        self.file, self.source = file, source
        self.ctx = DecodeContext(file=file, source=source)
        self.rotate_to: str | None = None

    def _refuse(self, message: str, pos: int) -> FrameError:
        return FrameError(message, source=self.source, file=self.file, pos=pos)

    def check(self, pos: int, frame: bytes) -> None:
        type_code = event_type(frame)
        if self.ctx.fde is None or type_code == FDE:
            try:
                decode_event(frame, pos, self.ctx, file=self.file, source=self.source)
            except BinlogError as exc:
                raise self._refuse(f"{exc.kind}: {exc.message} (event type {type_code})",
                                   pos) from None
        elif self.ctx.has_checksum:
            if len(frame) < COMMON_HEADER_LEN + 4:
                raise self._refuse(f"event of {len(frame)} bytes has no room for its CRC32", pos)
            stored = _U32.unpack_from(frame, len(frame) - 4)[0]
            computed = zlib.crc32(memoryview(frame)[:-4])
            if stored != computed:
                raise self._refuse(f"CRC32 mismatch: stored 0x{stored:08x}, computed "
                                   f"0x{computed:08x} (event type {type_code})", pos)
        if type_code == ROTATE:
            checksum = self.ctx.has_checksum if self.ctx.fde is not None else crc_matches(frame)
            try:
                self.rotate_to = rotate_body(frame, checksum)[1]
            except ValueError as exc:
                raise self._refuse(f"bad Rotate: {exc}", pos) from None

    def skip_to(self, fde_frame: bytes) -> None:
        """Resuming mid-file: read the file's FDE (at position 4) without shipping it, so the
        frames after the resume point are verified the same way."""
        self.check(4, fde_frame)
