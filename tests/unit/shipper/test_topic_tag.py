"""The topic's authenticity tag (libs/contracts/topic_tag.py; issue #56 items 3-4): the genuine
record verifies, every tampered variant does not, the encoding is unambiguous, and the tag is plain
HMAC-SHA256 (any consumer can check it with its language's HMAC)."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from libs.contracts.topic import KafkaRecord, Origin
from libs.contracts.topic_tag import (NO_TAG, OTHER_KEY, TopicKeys, field_of, key_id, tag_head, tag_message,
                                      tag_problems)

SECRET = b"s" * 16 + b"-topic-secret-for-the-unit-tests"
OTHER = b"o" * 16 + b"-not-the-topic-secret-of-the-tests"
KEYS = TopicKeys((SECRET,))
KEY = b"shop"
VALUE = bytes(range(60))
RECORD = KafkaRecord("shop", "mdb-bin.000001", 4, VALUE,
                     origin=Origin("mariadb server_id=1 gtid_domain_id=0", "0-1-7", "0-1-8"))
GENUINE = KEYS.tagged(KEY, VALUE, RECORD.headers())  # what the shipper sends


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


def _with_tag(headers, secret=SECRET):
    """`headers` tagged afresh (a forger who rewrites the record and tags it with `secret`)."""
    return TopicKeys((secret,)).tagged(KEY, VALUE, headers)


H, TAG = GENUINE[:-1], GENUINE[-1]
TAMPERED = {  # name -> (key, value, headers) of a record that must not verify
    "value byte flipped": (KEY, _flip(VALUE, 30), GENUINE),
    "value cut": (KEY, VALUE[:-1], GENUINE),
    "no value (tombstone)": (KEY, None, GENUINE),
    "key changed": (b"shoq", VALUE, GENUINE),
    "key removed": (None, VALUE, GENUINE),
    "header value changed": (KEY, VALUE, [(n, b"999" if n == "binlog_pos" else v) for n, v in H] + [TAG]),
    "header renamed": (KEY, VALUE, [("binlog_pos2" if n == "binlog_pos" else n, v) for n, v in H] + [TAG]),
    "header added before the tag": (KEY, VALUE, H + [("extra", b"x"), TAG]),
    "header added after the tag": (KEY, VALUE, GENUINE + [("extra", b"x")]),
    "header removed": (KEY, VALUE, H[1:] + [TAG]),
    "header value made null": (KEY, VALUE, [(H[0][0], None)] + H[1:] + [TAG]),
    "headers reordered": (KEY, VALUE, [H[1], H[0]] + H[2:] + [TAG]),
    "no tag": (KEY, VALUE, H),
    "no headers": (KEY, VALUE, None),
    "tag of another secret": (KEY, VALUE, _with_tag(H, OTHER)),
    "tag's key id kept, HMAC of another secret": (
        KEY, VALUE, H + [(TAG[0], TAG[1][:12] + _with_tag(H, OTHER)[-1][1][12:])]),
    "tag's HMAC one digit changed": (KEY, VALUE, H + [(TAG[0], TAG[1][:-1] + (b"0" if TAG[1][-1:] != b"0"
                                                                               else b"1"))]),
    "tag not hex, not ASCII": (KEY, VALUE, H + [(TAG[0], TAG[1][:12] + "é".encode() * 32)]),
    "tag of another version": (KEY, VALUE, H + [(TAG[0], b"v2" + TAG[1][2:])]),
    "tag without value": (KEY, VALUE, H + [(TAG[0], None)]),
    "two tags": (KEY, VALUE, GENUINE + [TAG]),
    "a forged position, tagged without the secret": (
        KEY, VALUE, [(n, b"99999" if n == "binlog_pos" else v) for n, v in H] + [TAG]),
}


def test_the_genuine_record_verifies():
    assert KEYS.problem(KEY, VALUE, GENUINE) is None
    assert GENUINE[-1][0] == "cdc_tag" and GENUINE[:-1] == RECORD.headers()


@pytest.mark.parametrize("name", TAMPERED)
def test_every_tampered_variant_fails(name):
    key, value, headers = TAMPERED[name]
    assert KEYS.problem(key, value, headers) is not None, name


def test_what_a_failure_says():
    assert KEYS.problem(KEY, VALUE, H) == NO_TAG
    assert OTHER_KEY in KEYS.problem(*TAMPERED["tag of another secret"])
    assert "does not verify" in KEYS.problem(*TAMPERED["value byte flipped"])
    assert SECRET.decode() not in " ".join(KEYS.problem(*v) for v in TAMPERED.values())


def test_the_tag_is_hmac_sha256_of_the_documented_message():
    version, kid, mac = GENUINE[-1][1].decode().split(":")
    assert (version, kid) == ("v1", hashlib.sha256(SECRET).hexdigest()[:8]) and kid == key_id(SECRET)
    assert mac == hmac.new(SECRET, tag_message(KEY, VALUE, H), "sha256").hexdigest()
    message = tag_message(b"k", b"vv", [("n", b"x"), ("m", None)])
    assert message == (b"cdc_tag v1\x00" + b"\0\0\0\x01k" + b"\0\0\0\x02" + b"\0\0\0\x01n" + b"\0\0\0\x01x"
                       + b"\0\0\0\x01m" + b"\xff\xff\xff\xff" + b"\0\0\0\x02vv")


def test_no_two_records_encode_alike():
    variants = [(b"ab", b"", [("c", b"")]), (b"a", b"", [("bc", b"")]), (b"a", b"b", [("c", b"")]),
                (b"", b"", []), (None, b"", []), (b"", None, []), (b"", b"", [("", b"")]),
                (b"", b"", [("", None)]), (b"", b"", [("a", b"b"), ("c", b"d")]),
                (b"", b"", [("c", b"d"), ("a", b"b")]), (b"", b"", [("ab", b"cd")])]
    messages = [tag_message(*v) for v in variants]
    assert len(set(messages)) == len(messages)


def test_a_second_secret_verifies_during_a_rotation_and_the_first_one_tags():
    rotating = TopicKeys((OTHER, SECRET))
    assert rotating.problem(KEY, VALUE, GENUINE) is None  # tagged with the previous secret
    new = rotating.tagged(KEY, VALUE, H)
    assert new[-1][1].decode().split(":")[1] == key_id(OTHER)
    assert KEYS.problem(KEY, VALUE, new) is not None  # a reader holding the old secret only


def test_the_jobs_head_path_gives_the_same_answers():
    """The job hands Spark's tag_head and the last header's text to head_problem (tag_problems)."""
    cases = [(KEY, VALUE, GENUINE)] + list(TAMPERED.values())
    tags, heads, values, expected = [], [], [], []
    for key, value, headers in cases:
        last = (headers or [None])[-1]
        tagged = last is not None and last[0] == "cdc_tag"
        tags.append(last[1].decode("utf-8", "replace") if tagged and last[1] is not None else None)
        heads.append(tag_head(key, headers[:-1]) if headers else None)
        values.append(value)
        expected.append(KEYS.problem(key, value, headers) is None)
    assert [p is None for p in tag_problems(KEYS, tags, heads, values)] == expected


def test_a_short_secret_is_refused_and_none_is_ever_shown():
    with pytest.raises(ValueError, match="31 bytes: at least 32"):
        TopicKeys((b"x" * 31,))
    assert SECRET.decode() not in repr(KEYS) and key_id(SECRET) in repr(KEYS)
    assert field_of(None) != field_of(b"")
