"""The topic's authenticity tag (issue #56 item 3; README "Who may write the topic"), declared once.

Anyone the broker lets produce to the topic can write a record that looks like the shipper's. With
a secret shared by the shipper and the job (the topic secret, at least MIN_SECRET_BYTES bytes),
cdc-ship appends one header to EVERY record it writes, binlog events and side records alike:

    cdc_tag: v1:<key id>:<HMAC-SHA256 of the record, 64 hex digits>

    key id   the first 8 hex digits of SHA-256(secret): which secret tagged it, so the secret can
             be rotated (a reader holds the new one and the previous one for a while)
    message  tag_message(key, value, headers before the tag), byte for byte:
               b"cdc_tag v1\\0"
               field(key)
               u32(number of headers before the tag)
               field(header name, UTF-8) field(header value)   for each of them, in the record's order
               field(value)
             field(b) = u32(len(b)) + b, or b"\\xff\\xff\\xff\\xff" for a null (no key, a tombstone, a
             header without value); u32 = 4 bytes big-endian. Every part is length-prefixed and the
             headers are taken in their order, so no two records encode alike: a changed, added,
             removed or reordered header, a changed key or value, all change the message.

The tag is the record's LAST header; everything before it is what it covers. A record whose last
header is not a cdc_tag, whose tag names a key id the reader has no secret for, or whose HMAC
differs does not verify. The shipper's resume read skips it (libs/shipper/resume_reader.py), the
job quarantines it (libs/stages/kafka_input.py). The tag says who wrote the bytes, not where in
the topic: a genuine record copied to the topic's end again still verifies (README: "replay").

The job computes tag_head (all but the value's field) with Spark expressions over the Kafka
`headers` column and hands it with the value to head_problem (pipelines/stages/decode.py): the two
encodings are pinned equal by tests/spark/stream/test_topic_tag_head.py.
"""
from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from functools import lru_cache

from libs.contracts.topic import HEADER_TAG
from libs.settings.topic_secret import MIN_SECRET_BYTES

TAG_VERSION = "v1"
DOMAIN = b"cdc_tag v1\x00"       # the message's first bytes: a v1 tag's message and nothing else's
NULL_FIELD = b"\xff\xff\xff\xff"  # field(None): no key, a tombstone, a header without value
KEY_ID_CHARS = 8
_MAC_CHARS = 64

Headers = list[tuple[str, bytes | None]]


def key_id(secret: bytes) -> str:
    """The secret's key id: the first 8 hex digits of its SHA-256 (names it, does not reveal it)."""
    return hashlib.sha256(secret).hexdigest()[:KEY_ID_CHARS]


def _u32(n: int) -> bytes:
    return n.to_bytes(4, "big")


def field_of(data: bytes | None) -> bytes:
    """One length-prefixed part of the message."""
    return NULL_FIELD if data is None else _u32(len(data)) + data


def tag_head(key: bytes | None, headers: Headers) -> bytes:
    """The message up to the value: domain, key, the headers before the tag."""
    parts = [DOMAIN, field_of(key), _u32(len(headers))]
    for name, value in headers:  # field_of inlined: this runs for every header the shipper sends
        text = name.encode("utf-8")
        parts += (len(text).to_bytes(4, "big"), text, NULL_FIELD) if value is None else (
            len(text).to_bytes(4, "big"), text, len(value).to_bytes(4, "big"), value)
    return b"".join(parts)


def tag_message(key: bytes | None, value: bytes | None, headers: Headers) -> bytes:
    """What the tag of a record with `key`, `value` and `headers` (the tag left out) covers."""
    return tag_head(key, headers) + field_of(value)


_BLOCK = 64  # SHA-256's block size (RFC 2104's B)
_IPAD, _OPAD = bytes(x ^ 0x36 for x in range(256)), bytes(x ^ 0x5C for x in range(256))


@lru_cache(maxsize=8)
def _pads(secret: bytes):
    """HMAC-SHA256's inner and outer hashes with the key's block absorbed (RFC 2104), copied per
    record: 1.2 us a record instead of hmac.digest's 2.0 (its key schedule runs on every call)."""
    block = (hashlib.sha256(secret).digest() if len(secret) > _BLOCK else secret).ljust(_BLOCK, b"\0")
    return hashlib.sha256(block.translate(_IPAD)), hashlib.sha256(block.translate(_OPAD))


def _mac(secret: bytes, head: bytes, value: bytes | None) -> str:
    """HMAC-SHA256(secret, head + field_of(value)) in hex, the value not copied."""
    pads = _pads(secret)
    inner, outer = pads[0].copy(), pads[1].copy()
    inner.update(head)
    if value is None:
        inner.update(NULL_FIELD)
    else:
        inner.update(_u32(len(value)))
        inner.update(value)
    outer.update(inner.digest())
    return outer.hexdigest()


# What a record that does not verify is told (the shipper's line and the job's quarantine reason
# start from these; `tag` quoted, never a secret).
NO_TAG = f"no {HEADER_TAG} header as its last header"
FORGED = "does not verify (written by someone without the topic secret?)"
OTHER_KEY = "names key id"  # a tag of a secret the reader does not hold (a rotation half done?)


def _clip(text: str) -> str:
    return repr(text if len(text) <= 90 else text[:90] + "...")


@dataclass(frozen=True)
class TopicKeys:
    """The topic secrets a program holds: the first tags what it writes, every one verifies
    (the previous secret during a rotation). Never printed: repr shows the key ids only."""

    secrets: tuple[bytes, ...] = field(repr=False)
    _by_id: dict = field(init=False, repr=False, compare=False)
    _signer: str = field(init=False, repr=False, compare=False)  # the tag's prefix: v1:<key id>:

    def __post_init__(self) -> None:
        if not self.secrets:
            raise ValueError("no topic secret")
        short = [len(s) for s in self.secrets if len(s) < MIN_SECRET_BYTES]
        if short:
            raise ValueError(f"a topic secret of {short[0]} bytes: at least {MIN_SECRET_BYTES} are needed")
        object.__setattr__(self, "_by_id", {key_id(s): s for s in reversed(self.secrets)})
        object.__setattr__(self, "_signer", f"{TAG_VERSION}:{key_id(self.secrets[0])}:")

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(key_id(s) for s in self.secrets)

    def __repr__(self) -> str:
        return f"TopicKeys(key_ids={self.key_ids})"

    def tag(self, key: bytes | None, value: bytes | None, headers: Headers) -> str:
        """The cdc_tag header's value for a record (tagged with the first secret)."""
        return self._signer + _mac(self.secrets[0], tag_head(key, headers), value)

    def tagged(self, key: bytes | None, value: bytes | None, headers: Headers) -> Headers:
        """`headers` with the tag appended: what the shipper sends."""
        return [*headers, (HEADER_TAG, self.tag(key, value, headers).encode("ascii"))]

    def problem(self, key: bytes | None, value: bytes | None, headers: Headers | None) -> str | None:
        """Why a consumed record does not verify; None when it does."""
        headers = list(headers or [])
        if not headers or headers[-1][0] != HEADER_TAG:
            return NO_TAG
        raw = headers[-1][1]
        tag = None if raw is None else raw.decode("utf-8", errors="replace")
        return self.head_problem(tag_head(key, headers[:-1]), value, tag)

    def head_problem(self, head: bytes | None, value: bytes | None, tag: str | None) -> str | None:
        """problem() from the record's tag_head and last header's text (None: the last header is no
        cdc_tag): the job's per-record check, tag_head computed by Spark."""
        if tag is None or head is None:
            return NO_TAG
        version, _, rest = tag.partition(":")
        kid, _, mac = rest.partition(":")
        if version != TAG_VERSION or len(kid) != KEY_ID_CHARS or len(mac) != _MAC_CHARS:
            return f"{HEADER_TAG} {_clip(tag)} is no {TAG_VERSION}:KEYID:HMAC tag: it {FORGED}"
        secret = self._by_id.get(kid)
        if secret is None:
            return (f"{HEADER_TAG} {_clip(tag)} {OTHER_KEY} {kid}, none of the topic secrets here "
                    f"({', '.join(self.key_ids)}): tagged with another secret (the previous one of a "
                    f"rotation?), or by someone without the topic secret")
        if not hmac.compare_digest(_mac(secret, head, value).encode(), mac.encode("utf-8", "replace")):
            return f"{HEADER_TAG} {_clip(tag)} {FORGED}"
        return None


def tag_problems(keys: TopicKeys, tags: list, heads: list, values: list) -> list[str | None]:
    """head_problem of each record of a batch (the job's assemble stage: its Python lists)."""
    check = keys.head_problem
    return [check(head, value, tag) for tag, head, value in zip(tags, heads, values)]
