"""--bootstrap mode against the real broker: N transactions go to the topic, one record per
event; reading them back rebuilds the binlog file byte for byte."""
import pytest
from confluent_kafka import Consumer

from libs.binlog import iter_events
from libs.binlog.constants import BINLOG_MAGIC
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.sinks import FileSink
from pipelines.simulate import main

pytestmark = pytest.mark.integration


def _read_all(bootstrap, topic, expected=None, idle=5.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-read",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    while expected is None or len(out) < expected:
        msg = c.poll(idle)
        if msg is None:
            break
        assert msg.error() is None, msg.error()
        out.append((msg.key(), msg.value(), dict(msg.headers() or [])))
    c.close()
    return out


def _rebuild(records) -> bytes:
    data = bytearray(BINLOG_MAGIC)
    for _, value, headers in records:
        assert int(headers["binlog_pos"]) == len(data)  # start offset of the event, contiguous
        data += value
    return bytes(data)


def test_fixed_count_to_topic_rebuilds_the_file(kafka_broker, topic, tmp_path):
    argv = ["--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", "sim-a",
            "--transactions", "60", "--seed", "13", "--row-image", "noblob", "--markers",
            "--ignorable-rate", "0.05", "--expected", str(tmp_path / "exp")]
    assert main(argv) == 0
    file_sink = FileSink()  # the same run written to a file
    simulate(SimulationOptions(transactions=60, seed=13, row_image="noblob", markers=True,
                               ignorable_rate=0.05), file_sink)
    records = _read_all(kafka_broker.bootstrap, topic, expected=len(file_sink.frames))
    assert len(records) == len(file_sink.frames)
    assert _rebuild(records) == file_sink.bytes()
    for key, value, headers in records:
        assert key == b"sim-a" and headers["source"] == b"sim-a"
        assert headers["binlog_file"] == b"sim-bin.000001" and headers["server_id"] == b"1"
        assert headers["event_type"] == str(value[4]).encode()
    assert (tmp_path / "exp" / "sim.t_pk.jsonl").exists()


def test_rate_mode_runs_for_the_duration_and_stays_decodable(kafka_broker, topic):
    argv = ["--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", "sim-r",
            "--rate", "40", "--duration", "1.5", "--flavour", "mysql", "--seed", "2"]
    assert main(argv) == 0
    records = _read_all(kafka_broker.bootstrap, topic, idle=3.0)
    data = _rebuild(records)
    evs = list(iter_events(data))
    gtids = [e for e in evs if e.type_name == "GTID"]
    # 1.5 s at 40 units/s: about 60 units (+6 CREATE groups), never more than the rate allows
    assert 30 <= len(gtids) <= 6 + 61 + 1
    assert evs[-1].type_name == "ROTATE"


def test_unreachable_broker_is_a_message(capsys):
    rc = main(["--bootstrap", "127.0.0.1:1", "--topic", "t", "--source", "s", "--transactions", "1",
               "--broker-timeout", "2"])
    assert rc == 1
    assert "cdc-simulate:" in capsys.readouterr().err
