"""XA transaction ids: the same key from an XA_prepare event body and from the text of the
XA COMMIT / XA ROLLBACK Query that resolves it (servers log X'hex',X'hex',format_id)."""
from __future__ import annotations

import re

_VERB = re.compile(r"\s*XA\s+(COMMIT|ROLLBACK|PREPARE|END|START)\s+(.*?)(\s+ONE\s+PHASE)?\s*;?\s*$",
                   re.IGNORECASE | re.DOTALL)
_PART = re.compile(r"\s*(?:[xX]'(?P<hex>[0-9A-Fa-f]*)'|0x(?P<hex0>[0-9A-Fa-f]+)|'(?P<str>(?:[^'\\]|\\.|'')*)'"
                   r"|(?P<num>\d+)|(?P<word>[A-Za-z_$][\w$]*))\s*(,|$)")


def xid_key(format_id: int, gtrid: bytes, bqual: bytes) -> str:
    return f"{int(format_id)}:{bytes(gtrid).hex()}:{bytes(bqual).hex()}"


def xid_key_from_query(sql: str) -> str | None:
    """Key of the xid named by an XA statement, or None if the text cannot be read."""
    match = _VERB.match(sql)
    if match is None:
        return None
    parts, rest = [], match.group(2)
    while rest:
        part = _PART.match(rest)
        if part is None:
            return None
        parts.append(part)
        rest = rest[part.end():]
    if not 1 <= len(parts) <= 3:
        return None
    gtrid = _bytes(parts[0])
    bqual = _bytes(parts[1]) if len(parts) > 1 else b""
    format_id = int(parts[2].group("num")) if len(parts) > 2 and parts[2].group("num") else 1
    if gtrid is None or bqual is None:
        return None
    return xid_key(format_id, gtrid, bqual)


def _bytes(part: re.Match) -> bytes | None:
    if part.group("hex") is not None:
        return bytes.fromhex(part.group("hex"))
    if part.group("hex0") is not None:
        text = part.group("hex0")
        return bytes.fromhex(text if len(text) % 2 == 0 else "0" + text)
    if part.group("str") is not None:
        return part.group("str").replace("''", "'").encode("utf-8")
    if part.group("word") is not None:
        return part.group("word").encode("utf-8")
    return None
