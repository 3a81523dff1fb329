"""Lay test events out like a binlog file: consecutive positions, real 19-byte headers in `raw`."""
from __future__ import annotations

import struct
from dataclasses import replace

from libs.stream.assembler import AssembledInput
from libs.binlog.errors import BinlogError


def place(events, file: str = "bin.000001", start: int = 4, offset: int = 0) -> list[AssembledInput]:
    """Give each event its position in `file` and wrap it as a Kafka input; a BinlogError in the
    list becomes a decode-error row of 30 bytes."""
    out, pos = [], start
    for i, item in enumerate(events):
        if isinstance(item, BinlogError):
            raw = struct.pack("<IBIIIH", 0, 2, 1, 30, pos + 30, 0) + b"\x00" * 11
            out.append(AssembledInput(raw, file, pos, error=item, kafka_partition=0, kafka_offset=offset + i))
            pos += 30
            continue
        h = item.header
        artificial = h.log_pos == 0  # fake Rotate / heartbeat: not bytes of the file
        header = replace(h, log_pos=0 if artificial else pos + h.event_size)
        event = replace(item, header=header, pos=0 if artificial else pos, file=file)
        raw = struct.pack("<IBIIIH", h.timestamp, h.type_code, h.server_id, h.event_size, header.log_pos,
                          h.flags)
        raw += bytes(h.event_size - len(raw))
        out.append(AssembledInput(raw, file, event.pos, event=event,
                                  kafka_partition=0, kafka_offset=offset + i))
        pos += 0 if artificial else h.event_size
    return out


def summary(trx) -> dict:
    """The comparable identity of a Transaction (its frames compared through their positions)."""
    return {"trx_id": trx.trx_id, "gtid": trx.gtid, "xid": trx.xid, "commit_ts": trx.commit_ts_micros,
            "server_id": trx.server_id, "file": trx.file, "end_pos": trx.end_pos,
            "payload": [(f.file, f.pos, f.event.header.type_code) for f in trx.payload]}
