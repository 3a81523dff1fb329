"""libs/bad_input.py: which quarantined input stops the job, cell by cell (DESIGN.md "Bad input",
"Ignorable events (WL#4033)")."""
import pytest

from libs.bad_input import BadInputPolicy, BinlogPosition, Incident, accepted_positions, stop_message
from libs.config import ConfigError, JobConfig

P = BinlogPosition.of


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
    assert text.startswith("stopped on bad input (unknown_event_policy: fail): source m1, mdb-bin.000002:100, "
                           "unknown_event: unknown_event reason (2 more in this batch).")
    assert "accept_bad_input_through: {m1: 'mdb-bin.000002:100'} (or unknown_event_policy: quarantine)" in text
    spanned = stop_message(incident("boundary", first=40, last=100), 0, "_cdc_quarantine")
    assert "(bad_input_policy: fail): source m1, mdb-bin.000002:40 to mdb-bin.000002:100, boundary:" in spanned


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
