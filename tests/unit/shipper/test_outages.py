"""Issue #56 item 5: each outage of the server is timed on its own (libs/shipper/shipper.py Outage).

No server: ship_server runs with a fake stream_once (a scripted follower: it streams a while, then
loses its connection; a reconnect fails while the server is down) on a fake clock. Two outages
each shorter than the limit, together longer, are ridden through; one outage longer than the limit
still ends the shipper with one line. Before the fix the clock ran from the process's first loss
until stream_once returned, which a follower's never does: the second outage ended it.
"""
from __future__ import annotations

import io
import types

import pytest
from pymysql.err import OperationalError

from libs.shipper import shipper
from libs.shipper.progress import Progress
from libs.shipper.resume import StartPoint
from libs.shipper.server_dump import _pump
from libs.shipper.shipper import Outage, ShipConfig, ShipStats, ship_server
from libs.source.errors import ShipError
from libs.source.replica_source import ServerOptions
from libs.source.server_identity import ServerIdentity

from .frames import ROW_FULL, artificial_fde, fake_rotate, frames_of, heartbeat

LIMIT_S = 60.0
CONNECT_S = 3.0  # what a refused connection costs on the fake clock (the pause comes on top)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeSink:
    def __init__(self, *args, **kwargs) -> None:
        pass

    def flush(self, *args) -> None:
        pass


class ScriptedServer:
    """stream_once of a follower against a server up and down at scripted times: `down` is a list
    of (from, to) on the fake clock. Up, a connection streams (reads a frame every second) until
    the next outage begins, then is lost; down, it is refused. Ends (returns True) at `end`."""

    def __init__(self, clock: Clock, down: list[tuple[float, float]], end: float):
        self.clock, self.down, self.end = clock, down, end
        self.connections = 0

    def _down_at(self, t: float) -> tuple[float, float] | None:
        return next(((a, b) for a, b in self.down if a <= t < b), None)

    def __call__(self, cfg, opts, sink, progress, stats, state, requested, follow_gtid, watch,
                 should_stop) -> bool:
        if self._down_at(self.clock.now) is not None:
            self.clock.now += CONNECT_S
            raise OperationalError(2003, "Can't connect to MySQL server on '127.0.0.1' (111)")
        self.connections += 1
        while self.clock.now < self.end:
            if self._down_at(self.clock.now) is not None:
                raise OperationalError(2013, "Lost connection to server during query")
            self.clock.now += 1.0
            stats.received += 1  # an event or a heartbeat read
        return True


def _ship(monkeypatch, down: list[tuple[float, float]], end: float) -> tuple[ScriptedServer, object]:
    clock = Clock()
    monkeypatch.setattr(shipper, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    monkeypatch.setattr(shipper, "KafkaSink", FakeSink)
    server = ScriptedServer(clock, [(clock.now + a, clock.now + b) for a, b in down], clock.now + end)
    monkeypatch.setattr(shipper, "stream_once", server)
    cfg = ShipConfig(bootstrap="127.0.0.1:1", topic="t", source="src", progress_s=3600.0)
    opts = ServerOptions(host="127.0.0.1", port=3306, user="u", password="p")
    return server, lambda: ship_server(cfg, opts, give_up_after_s=LIMIT_S)


def test_two_outages_each_under_the_limit_together_over_it_are_ridden_through(monkeypatch, capsys):
    # 45 s and 40 s down, minutes apart: 85 s of outage in all, each under 60 s
    server, run = _ship(monkeypatch, down=[(100, 145), (400, 440)], end=600)
    stats = run()
    assert server.connections == 3  # before, between and after the two outages
    assert stats.received >= 500
    lost = [line for line in capsys.readouterr().err.splitlines() if "connection lost" in line]
    assert len(lost) == stats.reconnects and stats.reconnects >= 2 * 10


def test_one_outage_over_the_limit_still_ends_the_shipper_with_one_line(monkeypatch):
    server, run = _ship(monkeypatch, down=[(100, 100 + LIMIT_S + 30)], end=600)
    with pytest.raises(ShipError) as stopped:
        run()
    message = str(stopped.value)
    assert "\n" not in message
    assert message.startswith("server 127.0.0.1:3306 unreachable for 60s: (2003, ")
    assert message.endswith("(source src)")
    assert server.connections == 1
    assert shipper.time.monotonic() - 1000.0 - 100 == pytest.approx(LIMIT_S, abs=CONNECT_S + 2.0)


def test_an_outage_is_timed_from_its_first_failure_and_ends_at_the_next_read(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(shipper, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    outage = Outage()
    assert outage.lost(received=5) == 0.0
    clock.now += 50
    assert outage.lost(received=5) == 50.0  # nothing read since: the same outage
    assert outage.pause_s() == pytest.approx(0.4)
    clock.now += 300
    assert outage.lost(received=6) == 0.0  # a read in between: a new outage, its pauses anew
    assert outage.pause_s() == pytest.approx(0.2)
    clock.now += 61
    assert outage.lost(received=6) == 61.0


class RecordingSink(FakeSink):
    def send(self, record) -> None:
        pass

    def poll(self) -> None:
        pass


def test_a_dump_moves_on_its_events_and_heartbeats_not_on_the_frames_every_connection_opens_with():
    """What ends an outage (ShipStats.received, server_dump._pump): a connection the server
    accepts and then drops before sending anything of its binlog does not count."""
    (_, fde), _, _, (pos, frame) = frames_of(ROW_FULL)[:4]
    name = ROW_FULL.name
    opening = [fake_rotate(name, pos), artificial_fde(fde)]  # a dump that starts mid-file

    def pump(frames: list[bytes]) -> int:
        stats = ShipStats()
        cfg = ShipConfig(bootstrap="127.0.0.1:1", topic="t", source="src")
        _pump(cfg, RecordingSink(), Progress("src", out=io.StringIO()), stats, {"tracker": None},
              iter(frames), StartPoint(name, pos, None, 0, None), ServerIdentity("mariadb", 1), lambda: False)
        return stats.received

    assert pump(opening) == 0
    assert pump(opening + [heartbeat(name, pos)]) == 1  # idle at our position: the server is there
    assert pump(opening + [frame, heartbeat(name, pos + len(frame))]) == 2
