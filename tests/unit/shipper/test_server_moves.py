"""Pure rules of following another server and of purged binlogs: GTID state per domain, server
identity, where a dump resumes (libs/shipper/gtid_state.py, server_identity.py, resume.py,
purge.py), and the epoch's place in position order (libs/binlog/file_names.py)."""
import io

import pytest

from libs.binlog.file_names import binlog_sort_key, epoch_file, split_epoch
from libs.source.errors import ServerChangedError, ShipError
from libs.shipper.gtid_state import GroupTracker, GtidState
from libs.shipper.purge import PurgeWatch, is_purged, purge_risk
from libs.contracts.topic import KafkaRecord, Origin, TopicKind
from libs.shipper.resume import epoch_for, resume_point
from libs.source.server_identity import ServerIdentity

from .frames import ROW_FULL, frames_of

M1 = ServerIdentity("mariadb", 1, gtid_domain_id=0)
M2 = ServerIdentity("mariadb", 2, gtid_domain_id=0)


@pytest.mark.parametrize("state, gtid, after", [
    ("", "0-1-1", "0-1-1"),
    ("0-1-7", "0-1-8", "0-1-8"),
    ("0-1-7", "0-2-8", "0-2-8"),             # a domain's seq goes on whichever server wrote it
    ("0-1-7,3-2-40", "3-2-41", "0-1-7,3-2-41"),
    ("3-2-40", "0-1-1", "0-1-1,3-2-40"),     # printed by domain
])
def test_gtid_state_advances_per_domain(state, gtid, after):
    assert str(GtidState.parse(state).advanced(gtid)) == after


@pytest.mark.parametrize("state, gtid, covered", [
    ("0-1-7", "0-1-7", True), ("0-1-7", "0-2-6", True), ("0-1-7", "0-1-8", False),
    ("0-1-7", "1-1-1", False), ("", "0-1-1", False),
])
def test_gtid_state_covers_what_its_domain_passed(state, gtid, covered):
    assert GtidState.parse(state).covers(gtid) is covered


@pytest.mark.parametrize("text", ["0-1", "0-1-x", "0-1-2,0-3-4"])
def test_a_bad_gtid_state_is_refused(text):
    with pytest.raises(ValueError):
        GtidState.parse(text)


def test_group_tracker_counts_a_transaction_only_when_it_ended():
    frames = frames_of(ROW_FULL)
    tracker = GroupTracker()
    seen = []
    for pos, frame in frames:
        before = str(tracker.state)
        gtid = tracker.feed(frame, pos)
        if frame[4] == 162:  # a MariaDB GTID opens its group: not in the state yet
            assert gtid is not None and not tracker.state.covers(gtid) and str(tracker.state) == before
            seen.append(gtid)
    assert seen and tracker.open_gtid is None
    assert str(tracker.state) == seen[-1]  # one domain: the last whole transaction


def test_group_tracker_resumed_inside_a_group_counts_it_at_its_end():
    frames = frames_of(ROW_FULL)
    fde = frames[0][1]
    gtid_at = next(i for i, (_, f) in enumerate(frames) if f[4] == 162 and not f[19 + 12] & 1)
    whole = GroupTracker()
    for pos, frame in frames[:gtid_at + 2]:
        whole.feed(frame, pos)
    cut = whole.open_gtid
    assert cut is not None
    resumed = GroupTracker.resuming(whole.state, cut, frames[gtid_at + 1][1])
    resumed.format_description(fde)
    for pos, frame in frames[gtid_at + 2:]:
        resumed.feed(frame, pos)
        whole.feed(frame, pos)
    assert resumed.state.covers(cut) and str(resumed.state) == str(whole.state)


@pytest.mark.parametrize("a, b, same", [
    (M1, ServerIdentity("mariadb", 1, gtid_domain_id=5), True),  # domain changed: same files
    (M1, M2, False),
    (ServerIdentity("mysql", 1, server_uuid="u1"), ServerIdentity("mysql", 1, server_uuid="u2"), False),
    (ServerIdentity("mysql", 1, server_uuid="u1"), ServerIdentity("mysql", 9, server_uuid="u1"), True),
    (ServerIdentity("mysql", 1, server_uuid="u1"), ServerIdentity("mariadb", 1), False),
])
def test_server_identity_tells_servers_apart(a, b, same):
    assert a.same_server(b) is same
    assert ServerIdentity.parse(a.text()) == a


def record(identity=M1, state="0-1-7", gtid="0-1-7", epoch=0, kind="binlog"):
    pos, frame = frames_of(ROW_FULL)[3]
    origin = Origin(identity.text() if identity else None, state, gtid, epoch)
    return KafkaRecord("s", "mdb-bin.000004", pos, frame, kind, origin)


def test_the_same_server_resumes_by_file_and_position_in_its_epoch():
    last = record(epoch=2)
    start = resume_point(last, M1, follow_gtid=True, server="h:1")
    assert (start.file, start.pos, start.gtid, start.epoch) == ("mdb-bin.000004", last.end_pos, None, 2)
    assert str(start.state) == "0-1-7" and start.open_gtid == "0-1-7"


def test_a_record_that_does_not_name_its_server_resumes_by_file_and_position():
    last = KafkaRecord("s", "mdb-bin.000004", 4, record().value)
    start = resume_point(last, M2, follow_gtid=False, server="h:1")
    assert (start.file, start.gtid, start.state, start.epoch) == ("mdb-bin.000004", None, None, 0)


def test_another_server_without_follow_gtid_is_refused_naming_both():
    last = record()
    with pytest.raises(ServerChangedError) as refused:
        resume_point(last, M2, follow_gtid=False, server="h:2")
    assert str(refused.value) == (
        f"the topic's last record came from mariadb server_id=1 gtid_domain_id=0 "
        f"(mdb-bin.000004:{last.end_pos}) but h:2 is mariadb server_id=2 gtid_domain_id=0: a "
        f"file:pos resume would read another server's binlog; if h:2 is a promoted replica of "
        f"it, run cdc-ship with --follow-gtid to continue after GTID state 0-1-7 (source s, "
        f"file mdb-bin.000004, pos {last.end_pos})")


def test_another_server_with_follow_gtid_starts_after_the_topic_state_one_epoch_later():
    start = resume_point(record(state="0-1-7", gtid="0-1-8", epoch=1), M2, follow_gtid=True,
                         server="h:2")
    assert (start.file, start.gtid, start.epoch, start.open_gtid) == (None, "0-1-7", 2, None)


@pytest.mark.parametrize("last, now, message", [
    (record(state=None), M2, "carries no GTID state"),
    (record(state=""), M2, "carries no GTID state"),
    (record(), ServerIdentity("mysql", 2, server_uuid="u"), "follows MariaDB servers only"),
])
def test_following_by_gtid_needs_a_mariadb_state(last, now, message):
    with pytest.raises(ShipError, match=message):
        resume_point(last, now, follow_gtid=True, server="h:2")


@pytest.mark.parametrize("last, now, epoch", [
    (None, M2, 0), (record(epoch=3), M1, 3), (record(epoch=3), M2, 4), (record(identity=None), M2, 0),
])
def test_epoch_grows_when_the_server_changes(last, now, epoch):
    assert epoch_for(last, now) == epoch


def test_a_format_record_resumes_at_its_own_position():
    pos, fde = frames_of(ROW_FULL)[0]
    last = KafkaRecord("s", "mdb-bin.000002", 900, fde, TopicKind.FORMAT, Origin(M2.text(), "0-1-7", None, 1))
    start = resume_point(last, M2, follow_gtid=False, server="h:2")
    assert (start.file, start.pos, start.last_frame) == ("mdb-bin.000002", 900, None)


LOGS = [("b.000003", 10), ("b.000004", 10), ("b.000005", 10)]


@pytest.mark.parametrize("file, warn_files, warned", [
    ("b.000003", 1, True), ("b.000004", 1, False), ("b.000004", 2, True),
    ("b.000005", 3, False),  # the file being written is never purged
    ("b.000001", 1, False),  # not there: is_purged's business
])
def test_purge_risk_names_the_oldest_file_still_needed(file, warn_files, warned):
    risk = purge_risk(LOGS, file, warn_files)
    assert (risk is not None) is warned
    if warned:
        assert risk.startswith(f"the server's oldest binlog is b.000003 and the shipper still reads {file}")


@pytest.mark.parametrize("file, purged", [
    ("b.000002", True), ("b.000003", False), ("b.000005", False), ("b.000009", False),
])
def test_is_purged_means_before_the_oldest_binlog(file, purged):
    assert is_purged(LOGS, file) is purged


def test_purge_watch_warns_at_most_once_per_interval():
    now = [0.0]
    out = io.StringIO()
    watch = PurgeWatch("s", 1, 60.0, out=out, clock=lambda: now[0])
    for t in (0.0, 30.0, 61.0):
        now[0] = t
        watch.check(LOGS, "b.000003")
    assert watch.warnings == 2 and len(out.getvalue().splitlines()) == 2
    assert watch.check(LOGS, "b.000005") is None and watch.risk is None


def test_a_later_epoch_sorts_after_every_file_of_an_earlier_one():
    assert epoch_file("mdb-bin.000002", 0) == "mdb-bin.000002"
    assert split_epoch(epoch_file("mdb-bin.000002", 3)) == (3, "mdb-bin.000002")
    names = ["1/mdb-bin.000001", "mdb-bin.000009", "mdb-bin.000010", "2/a.000001", "1/mdb-bin.000002"]
    assert sorted(names, key=binlog_sort_key) == [
        "mdb-bin.000009", "mdb-bin.000010", "1/mdb-bin.000001", "1/mdb-bin.000002", "2/a.000001"]
