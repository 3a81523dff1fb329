"""Replica command payloads (pure): what follows the command byte in the client packet.

COM_REGISTER_SLAVE (0x15), MySQL/MariaDB sql/sql_repl.cc register_slave():
    u32 server_id | u8 len + report_host | u8 len + report_user | u8 len + report_password |
    u16 report_port | u32 replication_rank (ignored) | u32 master_id (0)
COM_BINLOG_DUMP (0x12), mysql_binlog_send() / com_binlog_dump():
    u32 binlog_pos | u16 flags | u32 server_id | binlog file name (rest of packet, no NUL)
    flags: 1 BINLOG_DUMP_NON_BLOCK (EOF instead of waiting), 2 BINLOG_SEND_ANNOTATE_ROWS_EVENT
    (MariaDB: without it a capability >= 2 replica gets no Annotate_rows at all -- a hole).
    MariaDB GTID start: the same command after SET @slave_connect_state='d-s-n,...'; the master
    then ignores name/pos and starts at the file holding that GTID state.
COM_BINLOG_DUMP_GTID (0x1e), MySQL com_binlog_dump_gtid():
    u16 flags | u32 server_id | u32 name_len | name | u64 pos |
    (flags & BINLOG_THROUGH_GTID 0x04) u32 data_len | encoded GTID set
    encoded set (Gtid_set::encode): u64 n_sids, per sid: 16-byte uuid, u64 n_intervals,
    per interval u64 start, u64 end (exclusive).
"""
from __future__ import annotations

import re
import struct
import uuid

from libs.binlog.constants import BINLOG_SEND_ANNOTATE_ROWS_EVENT  # noqa: F401 (a dump flag)

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_THROUGH_GTID = 0x04


def _short_str(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"{value!r} longer than 255 bytes")
    return bytes([len(raw)]) + raw


def register_slave(server_id: int, *, host: str = "", user: str = "", password: str = "",
                   port: int = 0) -> bytes:
    return (struct.pack("<I", server_id) + _short_str(host) + _short_str(user)
            + _short_str(password) + struct.pack("<HII", port, 0, 0))


def binlog_dump(file: str, pos: int, server_id: int, flags: int = BINLOG_SEND_ANNOTATE_ROWS_EVENT
                ) -> bytes:
    if not 4 <= pos < 2 ** 32:
        raise ValueError(f"COM_BINLOG_DUMP position {pos} outside 4..2^32-1")
    return struct.pack("<IHI", pos, flags, server_id) + file.encode("utf-8")


_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")


def encode_mysql_gtid_set(text: str) -> bytes:
    """MySQL GTID set text ("uuid:1-5:7,uuid2:1-3") -> Gtid_set::encode bytes."""
    sids: dict[bytes, list[tuple[int, int]]] = {}
    for part in filter(None, (p.strip() for p in text.replace("\n", "").split(","))):
        fields = part.split(":")
        sid = uuid.UUID(fields[0]).bytes
        for iv in fields[1:]:
            m = _INTERVAL.match(iv)
            if not m:
                raise ValueError(f"bad GTID interval {iv!r} in {part!r}")
            start = int(m[1])
            end = int(m[2]) if m[2] else start
            if start < 1 or end < start:
                raise ValueError(f"bad GTID interval {iv!r} in {part!r}")
            sids.setdefault(sid, []).append((start, end + 1))
    out = [struct.pack("<Q", len(sids))]
    for sid in sorted(sids):
        ivs = sorted(sids[sid])
        out.append(sid + struct.pack("<Q", len(ivs)))
        out.extend(struct.pack("<QQ", a, b) for a, b in ivs)
    return b"".join(out)


def binlog_dump_gtid(gtid_set: str, server_id: int, *, file: str = "", pos: int = 4,
                     flags: int = 0) -> bytes:
    data = encode_mysql_gtid_set(gtid_set)
    name = file.encode("utf-8")
    return (struct.pack("<HII", flags | BINLOG_THROUGH_GTID, server_id, len(name)) + name
            + struct.pack("<QI", pos, len(data)) + data)


MARIADB_GTID = re.compile(r"^\s*(\d+-\d+-\d+)(\s*,\s*\d+-\d+-\d+)*\s*$")


def is_mariadb_gtid_state(text: str) -> bool:
    """'0-1-5' or '0-1-5,7-99-1000' (domain-server-seq, one per domain)."""
    return bool(MARIADB_GTID.match(text))
