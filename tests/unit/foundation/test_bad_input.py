"""libs/config/bad_input.py: which quarantined input stops the job, cell by cell (DESIGN.md "Bad input",
"Ignorable events (WL#4033)")."""
import dataclasses

import pytest

from libs.config.bad_input import (
    BadInputPolicy, Incident, accepted_positions, stop_message,
)
from libs.contracts.position import BinlogPosition, KafkaPosition
from libs.config.job import ConfigError, JobConfig

P = BinlogPosition


def incident(kind: str, file="mdb-bin.000002", first=100, last=100, source="m1") -> Incident:
    return Incident(source, kind, f"{kind} reason", P(file, first), P(file, last))


@pytest.mark.parametrize("kind, unknown_policy, other_policy, stops", [
    # an unknown non-ignorable event follows unknown_event_policy (WL#4033: fail by default)
    ("unknown_event", "fail", "quarantine", True),
    ("unknown_event", "quarantine", "fail", False),
    # every other root cause follows bad_input_policy
    ("checksum", "fail", "quarantine", False),
    ("checksum", "quarantine", "fail", True),
    ("truncated", "quarantine", "fail", True),
    ("limit", "quarantine", "fail", True),
    ("boundary", "quarantine", "fail", True),
    ("malformed", "fail", "fail", True),
    # the rest of a poisoned transaction never stops by itself: its bad frame has its own row
    ("bad_transaction", "fail", "fail", False),
])
def test_policy_table(kind, unknown_policy, other_policy, stops):
    assert BadInputPolicy(unknown_policy, other_policy).stops_on(incident(kind)) is stops


@pytest.mark.parametrize("accepted, stops", [
    (None, True),
    ("mdb-bin.000002:99", True),     # before the incident's end
    ("mdb-bin.000002:100", False),   # exactly its end
    ("mdb-bin.000002:150", False),
    ("mdb-bin.000001:999999", True),  # an earlier file, however large the offset
    ("mdb-bin.000010:4", False),      # a later file: numbered, not compared as text
])
def test_an_accepted_position_lets_the_job_go_past_incidents_up_to_it(accepted, stops):
    accepted_through = accepted_positions({"m1": accepted}) if accepted else ()
    policy = BadInputPolicy("fail", "fail", accepted_through)
    assert policy.stops_on(incident("checksum", first=40, last=100)) is stops
    assert policy.stops_on(incident("checksum", source="other")) is True  # per source


def test_an_incident_accepted_only_partly_still_stops():
    policy = BadInputPolicy("fail", "fail", accepted_positions({"m1": "mdb-bin.000002:60"}))
    assert policy.stops_on(incident("boundary", first=40, last=100))


def test_the_first_stop_is_the_earliest_and_counts_the_others():
    late, early = incident("checksum", first=500, last=500), incident("truncated", first=90, last=120)
    ignored = incident("bad_transaction", first=1, last=1)
    stop, more = BadInputPolicy("quarantine", "fail").first_stop([late, ignored, early])
    assert (stop, more) == (early, 1)
    assert BadInputPolicy("quarantine", "quarantine").first_stop([late, early]) is None
    assert not BadInputPolicy("quarantine", "quarantine").can_stop


def test_positions_order_by_file_sequence_then_offset():
    assert P("mdb-bin.000009", 999) < P("mdb-bin.000010", 4) < P("mdb-bin.000010", 5)
    assert P("mdb-bin.999999", 4) < P("mdb-bin.1000000", 4)  # the suffix outgrows six digits
    assert str(BinlogPosition.parse("mdb-bin.000003:1234")) == "mdb-bin.000003:1234"


@pytest.mark.parametrize("text", ["mdb-bin.000003", ":12", "mdb-bin.000003:", "mdb-bin.000003:-4", "f:1e3"])
def test_a_malformed_position_is_refused_naming_its_source(text):
    with pytest.raises(ValueError, match=r"^m1: must be FILE:POS"):
        accepted_positions({"m1": text})


def test_the_stop_message_is_one_line_naming_source_position_and_the_way_on():
    text = stop_message(incident("unknown_event", first=100, last=100), 2, "_cdc_quarantine")
    assert "\n" not in text
    assert text.startswith("stopped on bad input (unknown_event_policy: fail): source m1, "
                           "mdb-bin.000002:100, unknown_event: unknown_event reason (2 more in this batch).")
    assert ("accept_bad_input_through: {m1: 'mdb-bin.000002:100'} "
            "(or unknown_event_policy: quarantine)") in text
    spanned = stop_message(incident("boundary", first=40, last=100), 0, "_cdc_quarantine")
    assert ("(bad_input_policy: fail): source m1, mdb-bin.000002:40 to mdb-bin.000002:100, "
            "boundary:") in spanned


def test_job_config_checks_the_settings():
    cfg = JobConfig(bad_input_policy="fail", accept_bad_input_through={"m1": "mdb-bin.000002:7"})
    assert cfg.bad_input == BadInputPolicy("fail", "fail", (("m1", P("mdb-bin.000002", 7)),))
    assert JobConfig().bad_input == BadInputPolicy("fail", "quarantine", ())  # the defaults
    with pytest.raises(ConfigError, match="bad_input_policy: must be one of"):
        JobConfig(bad_input_policy="skip")
    with pytest.raises(ConfigError, match="accept_bad_input_through: m1: must be FILE:POS"):
        JobConfig(accept_bad_input_through={"m1": 7})
    with pytest.raises(ConfigError, match="accept_bad_input_through: must be a mapping"):
        JobConfig(accept_bad_input_through=["m1"])


# -- Kafka positions: records that are not the pipeline's (libs/stages/kafka_input.py, issue #38) ----------
K = KafkaPosition


def record_incident(kind="kafka_record", offset=17, last=None, source="kafka:binlog:0") -> Incident:
    return Incident(source, kind, f"topic binlog partition 0 offset {offset}: no key", last, last,
                    K("binlog", 0, offset))


@pytest.mark.parametrize("accepted, stops", [
    ({}, True),
    ({"kafka:binlog:0": 16}, True),    # before the record
    ({"kafka:binlog:0": 17}, False),   # the record itself
    ({"kafka:binlog:0": "900"}, False),  # YAML may give the offset as text
    ({"kafka:binlog:1": 900}, True),   # another partition
    ({"kafka:other:0": 900}, True),    # another topic
])
def test_an_accepted_kafka_offset_lets_the_job_go_past_records_up_to_it(accepted, stops):
    policy = BadInputPolicy("fail", "fail", accepted_positions(accepted, kafka=True))
    assert policy.stops_on(record_incident()) is stops


def test_a_binlog_incident_is_accepted_by_its_position_or_by_its_records_offset():
    frame = Incident("m1", "checksum", "r", P("mdb-bin.000002", 100), P("mdb-bin.000002", 100),
                     K("binlog", 0, 5))
    assert not BadInputPolicy("fail", "fail",
                              accepted_positions({"kafka:binlog:0": 5}, kafka=True)).stops_on(frame)
    assert not BadInputPolicy("fail", "fail",
                              accepted_positions({"m1": "mdb-bin.000002:100"})).stops_on(frame)
    # a source named like a Kafka key never compares a binlog position with an offset
    pseudo = record_incident(source="kafka:binlog:0")
    assert BadInputPolicy("fail", "fail",
                          accepted_positions({"kafka:binlog:0": 3}, kafka=True)).stops_on(pseudo)


@pytest.mark.parametrize("key, offset, message", [
    ("kafka:binlog", 4, "must be kafka:TOPIC:PARTITION"),
    ("kafka::0", 4, "must be kafka:TOPIC:PARTITION"),
    ("kafka:binlog:x", 4, "must be kafka:TOPIC:PARTITION"),
    ("kafka:binlog:0", -1, "must be a Kafka offset"),
    ("kafka:binlog:0", "mdb-bin.000001:4", "must be a Kafka offset"),
    ("kafka:binlog:0", True, "must be a Kafka offset"),
    ("kafka:binlog:0", None, "must be a Kafka offset"),
])
def test_a_malformed_kafka_position_is_refused_naming_its_key(key, offset, message):
    with pytest.raises(ValueError, match=f"^{key}: {message}"):
        accepted_positions({key: offset}, kafka=True)


def test_the_setting_key_is_normalised_and_sorted_with_the_sources():
    pairs = accepted_positions({"m1": "mdb-bin.000001:4", "kafka:binlog:007": 12}, kafka=True)
    assert pairs == (("kafka:binlog:7", K("binlog", 7, 12)), ("m1", P("mdb-bin.000001", 4)))


def test_a_record_incident_is_named_by_its_offset_and_sorted_after_positioned_ones():
    stop = stop_message(record_incident(), 0, "_cdc_quarantine")
    assert "\n" not in stop
    assert stop.startswith("stopped on bad input (bad_input_policy: fail): source kafka:binlog:0, "
                           "topic binlog partition 0 offset 17, "
                           "kafka_record: topic binlog partition 0 offset 17: no key. ")
    assert "accept_bad_input_through: {'kafka:binlog:0': 17} (or bad_input_policy: quarantine)" in stop
    # a forged snapshot's claimed position is shown, but the way past it is its offset
    forged = record_incident("bad_snapshot_record", source="m1", last=P("mdb-bin.999999", 4))
    text = stop_message(forged, 0, "_cdc_quarantine")
    assert "source m1, mdb-bin.999999:4, topic binlog partition 0 offset 17, bad_snapshot_record:" in text
    assert "{'kafka:binlog:0': 17}" in text and "mdb-bin.999999:4'" not in text
    # a frame's incident keeps its binlog position as the way past it
    frame = Incident("m1", "checksum", "r", P("mdb-bin.000002", 9), P("mdb-bin.000002", 9), K("binlog", 0, 5))
    assert "{m1: 'mdb-bin.000002:9'}" in stop_message(frame, 0, "_cdc_quarantine")
    positioned = incident("checksum", source="m1")
    unpositioned = record_incident(source="m1", offset=3)
    assert BadInputPolicy("fail", "fail").first_stop([unpositioned, positioned]) == (positioned, 1)


def test_only_the_bad_input_setting_names_kafka_offsets():
    cfg = JobConfig(accept_bad_input_through={"kafka:binlog:0": 17, "m1": "mdb-bin.000002:7"})
    assert cfg.bad_input.accepted_through == (("kafka:binlog:0", K("binlog", 0, 17)),
                                              ("m1", P("mdb-bin.000002", 7)))
    assert dataclasses.replace(cfg).accept_bad_input_through == cfg.accept_bad_input_through  # already parsed
    with pytest.raises(ConfigError, match="accept_schema_changes_through: kafka:binlog:0: must be FILE:POS"):
        JobConfig(accept_schema_changes_through={"kafka:binlog:0": 17})
    with pytest.raises(ConfigError,
                       match="accept_bad_input_through: kafka:binlog: must be kafka:TOPIC:PARTITION"):
        JobConfig(accept_bad_input_through={"kafka:binlog": 17})


def test_a_frames_stop_line_is_unchanged_by_its_kafka_position():
    frame = Incident("m1", "checksum", "r", P("mdb-bin.000002", 9), P("mdb-bin.000002", 9), K("binlog", 0, 5))
    assert stop_message(frame, 0, "q") == stop_message(dataclasses.replace(frame, kafka=None), 0, "q")
