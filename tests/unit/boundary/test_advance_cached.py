"""advance_cached() gives advance()'s result for every event of every corpus file and of simulated
streams (both flavours, markers, ignorable events, dummies, statement format), in every parser
context and under either flavour: its memo key holds everything advance() reads of an event."""
from __future__ import annotations

import itertools

import pytest

from libs.binlog import BinlogError, iter_events
from libs.stream.boundary import PARSER_STATES, Opening, ParserContext, _MEMO, advance, advance_cached
from tests.unit.codec.corpus import MARIADB, MYSQL, binlog_files
from tests.unit.simulated_streams import STREAM_SHAPES, simulated_sink

CONTEXTS = [ParserContext(s, o) for s, o in itertools.product(PARSER_STATES, Opening)]
FLAVOURS = ("mysql", "mariadb")
# The largest corpus file is mostly rows events of a few types: the others cover those types.
SKIP = {"mdb-bin.000010"}


def _events(data: bytes) -> list:
    """The file's events up to its first error (the broken corpus files)."""
    out = []
    try:
        for event in iter_events(data):
            out.append(event)
    except BinlogError:
        pass
    return out


def _assert_same(events, label: str) -> int:
    _MEMO.clear()  # each stream starts from an empty memo, then fills it as it goes
    checked = 0
    for event, context, flavour in itertools.product(events, CONTEXTS, FLAVOURS):
        expected = advance(context, event, flavour)
        got = advance_cached(context, event, flavour)
        assert got == expected, (label, event.header, context, flavour)
        checked += 1
    return checked


# Files whose first event already fails to decode (the broken corpus files) have nothing to check.
CORPUS = [(p, events) for p in binlog_files(MARIADB) + binlog_files(MYSQL) if p.name not in SKIP
          for events in [_events(p.read_bytes())] if events]


@pytest.mark.parametrize("path,events", CORPUS,
                         ids=[p.relative_to(p.parents[2]).as_posix() for p, _ in CORPUS])
def test_corpus_file(path, events):
    assert _assert_same(events, path.name) == len(events) * len(CONTEXTS) * len(FLAVOURS)




def test_simulated_streams():
    """One memo for all the streams, so that an event meets entries filled by events of another
    stream: the same types marked and unmarked, with and without Rows_query, in either flavour."""
    events = []
    for options in STREAM_SHAPES:
        streamed = _events(simulated_sink(**{"transactions": 150, "seed": 5, **options}).bytes())
        assert len(streamed) > 150, options
        events += streamed
    _assert_same(events, "simulated")
