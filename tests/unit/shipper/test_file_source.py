"""Reading binlog files: directory + index, resume point, partially written last event."""
import pytest

from libs.source.errors import ShipError
from libs.shipper.file_source import Inputs, binlog_sort_key, iter_file_events

from .frames import MISC, ROW_FULL, frames_of


def make_dir(tmp_path, *sources):
    names = []
    for src in sources:
        (tmp_path / src.name).write_bytes(src.read_bytes())
        names.append(src.name)
    (tmp_path / "mdb-bin.index").write_text("".join(f"./{n}\n" for n in names))
    return tmp_path


def events(inputs, **kw):
    return list(iter_file_events(inputs, "s", **kw))


def test_directory_with_index_ships_files_in_index_order(tmp_path):
    inputs = Inputs.from_paths([make_dir(tmp_path, ROW_FULL, MISC)])
    got = events(inputs)
    want = [(ROW_FULL.name, p, f) for p, f in frames_of(ROW_FULL)]
    want += [(MISC.name, p, f) for p, f in frames_of(MISC)]
    assert got == want


def test_resume_skips_shipped_files_and_continues_after_last_event(tmp_path):
    inputs = Inputs.from_paths([make_dir(tmp_path, ROW_FULL, MISC)])
    misc = frames_of(MISC)
    resume = (MISC.name, misc[3][0] + len(misc[3][1]))
    assert events(inputs, resume=resume) == [(MISC.name, p, f) for p, f in misc[4:]]
    # a last record in a file older than every input: all inputs are shipped
    assert len(events(inputs, resume=("mdb-bin.000000", 99))) == len(frames_of(ROW_FULL)) + len(misc)


def test_truncated_file_before_the_last_is_an_error(tmp_path):
    cut = tmp_path / "mdb-bin.000001"
    cut.write_bytes(ROW_FULL.read_bytes()[:1000])
    with pytest.raises(ShipError, match="file ends inside an event.*file mdb-bin.000001"):
        events(Inputs([cut, MISC]))


def test_not_a_binlog_is_named(tmp_path):
    bad = tmp_path / "x.000001"
    bad.write_bytes(b"hello world, not a binlog")
    with pytest.raises(ShipError, match="not a binlog file"):
        events(Inputs([bad]))


def test_binlog_names_sort_numerically():
    assert sorted(["b.1000000", "b.999999"], key=binlog_sort_key) == ["b.999999", "b.1000000"]
