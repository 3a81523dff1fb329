"""Mutated and truncated rows / Table_map bodies raise only BinlogError subclasses."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libs.binlog.errors import BinlogError
from libs.binlog.rows import decode_rows
from libs.binlog.tablemap import decode_table_map

from .corpus import MARIADB, MYSQL_RUST, context_for, decoded_events

SAMPLES = []
for path in (MARIADB / "all_types" / "mdb-bin.000004", MARIADB / "compressed" / "mdb-bin.000011",
             MYSQL_RUST / "json.binlog.000001"):
    ctx = context_for(path)
    for frame, rec in decoded_events(path, ctx, limit=40):
        if hasattr(rec, "rows"):
            SAMPLES.append((frame.type_code, frame.body, dict(ctx.table_maps), path))
        else:
            SAMPLES.append((19, frame.body, {}, path))


def _decode(type_code, body, maps, path):
    ctx = context_for(path)
    ctx.table_maps.update(maps)
    if type_code == 19:
        decode_table_map(body, ctx)
    else:
        decode_rows(type_code, body, ctx)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SAMPLES), st.data())
def test_mutations_raise_only_codec_errors(sample, data):
    type_code, body, maps, path = sample
    body = bytearray(body)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    try:
        _decode(type_code, bytes(body), maps, path)
    except BinlogError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SAMPLES), st.data())
def test_truncations_raise_only_codec_errors(sample, data):
    type_code, body, maps, path = sample
    cut = data.draw(st.integers(0, len(body) - 1))
    try:
        _decode(type_code, body[:cut], maps, path)
    except BinlogError:
        pass


def test_missing_table_map_names_the_table_id():
    type_code, body, maps, path = next(s for s in SAMPLES if s[0] != 19)
    try:
        _decode(type_code, body, {}, path)
    except BinlogError as exc:
        assert "table id" in exc.message and exc.type_code == type_code and exc.raw == body
    else:
        raise AssertionError("decoding without a Table_map must fail")
