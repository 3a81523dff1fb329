"""MySQL's latin1 (strings/ctype-latin1.cc): cp1252, with the five bytes cp1252 leaves undefined
(0x81 0x8D 0x8F 0x90 0x9D) mapped to the same code points. decode_text / encode_text do it with
one codec call and an error handler; checked here byte by byte against that definition."""
from __future__ import annotations

import random

import pytest

from libs.binlog.charsets import decode_text, encode_text

HOLES = {0x81, 0x8D, 0x8F, 0x90, 0x9D}


def by_definition(raw: bytes) -> str:
    return "".join(chr(b) if b in HOLES else bytes((b,)).decode("cp1252") for b in raw)


def test_every_byte_decodes_as_defined_and_round_trips():
    every = bytes(range(256))
    assert decode_text(every, "latin1") == by_definition(every)
    assert encode_text(decode_text(every, "latin1"), "latin1") == every


def test_random_values_decode_as_defined():
    rnd = random.Random(5)
    for _ in range(5000):
        raw = bytes(rnd.choice([rnd.randrange(256), *HOLES]) for _ in range(rnd.randrange(10)))
        assert decode_text(raw, "latin1") == by_definition(raw)


@pytest.mark.parametrize("text", ["\x80", "\x9f", "a\x85b", "\u3000"])
def test_text_latin1_cannot_hold_is_an_error(text):
    """A C1 control that is not a hole (cp1252 puts another character at its byte) and any
    character outside cp1252 have no latin1 byte."""
    with pytest.raises(UnicodeEncodeError):
        encode_text(text, "latin1")
