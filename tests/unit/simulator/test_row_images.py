"""WL#5092 R1 / BLOBS R1-R4: the columns (and values) of every row image, per binlog_row_image.

Expectations are derived by hand from the seed's tables and checked against the corpus
observations (corpus/README.md, row_minimal/row_noblob vv oracles):
  t_blob (id PK, counter NOT NULL DEFAULT 0, label DEFAULT 'lbl', b BLOB, t TEXT, mb MEDIUMBLOB)
  INSERT (id, b, t) VALUES (2, x'DEADBEEF', 'some text')
      full: all six; noblob: id counter label b t (the corpus row_noblob oracle: @1..@5);
      minimal: id b t
  UPDATE SET b = x'0102' WHERE id = 2
      full: all / all; noblob: BI id counter label, AI id counter label b (corpus row_noblob);
      minimal: BI id, AI b
  DELETE WHERE id = 2:  full all; noblob id counter label; minimal id
"""
import pytest

from libs.simulator.schema import Table, blob, char, int_col, varchar
from libs.simulator.statements import Delete, Insert, Update
from libs.binlog.constants import ColumnType as T

from .helpers import new_master, rows_events

T_BLOB = Table("t_blob", (int_col("id", nullable=False), int_col("counter", nullable=False, default=0),
                          varchar("label", 20, default="lbl"), blob("b"), blob("t", text=True),
                          blob("mb", T.MEDIUM_BLOB)), primary_key=("id",))
T_DEFAULTS = Table("t_defaults", (int_col("id", nullable=False, auto_increment=True),
                                  varchar("status", 10, nullable=False, default="new"),
                                  int_col("cnt", nullable=False, default=0), blob("payload"),
                                  char("tag", 4, default="abcd")), primary_key=("id",))
T_UK = Table("t_uk", (char("code", 8, nullable=False), int_col("val"), varchar("descr", 100)),
             unique_keys=(("code",),))
T_NULLABLE_UK = Table("t_nuk", (int_col("k"), int_col("v"), blob("p")), unique_keys=(("k",),))
T_KEYLESS = Table("t_nokey", (int_col("a"), varchar("b", 20), blob("p")))

ALL6 = {0, 1, 2, 3, 4, 5}


def _run(mode, table, setup, stmt):
    master, sink = new_master([table], row_image=mode)
    for s in setup:
        master.execute(s)
    before = len(rows_events(sink))
    master.execute(stmt)
    new = rows_events(sink)[before:]
    assert len(new) == 1
    return new[0].body


def _cols(bits):
    return None if bits is None else {i for i, b in enumerate(bits) if b}


INSERT_2 = Insert("t_blob", ({0: 2, 3: b"\xde\xad\xbe\xef", 4: b"some text"},))


@pytest.mark.parametrize("mode,after", [
    ("full", ALL6), ("noblob", {0, 1, 2, 3, 4}), ("minimal", {0, 3, 4})])
def test_insert_after_image(mode, after):
    rows = _run(mode, T_BLOB, [], INSERT_2)
    assert _cols(rows.columns_present_after) == after
    full_row = {0: 2, 1: 0, 2: b"lbl", 3: b"\xde\xad\xbe\xef", 4: b"some text", 5: None}
    assert rows.rows[0].after == {i: full_row[i] for i in after}
    assert rows.rows[0].before is None


@pytest.mark.parametrize("mode,before,after", [
    ("full", ALL6, ALL6), ("noblob", {0, 1, 2}, {0, 1, 2, 3}), ("minimal", {0}, {3})])
def test_update_of_only_a_blob(mode, before, after):
    rows = _run(mode, T_BLOB, [INSERT_2], Update("t_blob", {0: 2}, {3: b"\x01\x02"}))
    assert _cols(rows.columns_present_before) == before
    assert _cols(rows.columns_present_after) == after
    old = {0: 2, 1: 0, 2: b"lbl", 3: b"\xde\xad\xbe\xef", 4: b"some text", 5: None}
    new = {**old, 3: b"\x01\x02"}
    assert rows.rows[0].before == {i: old[i] for i in before}
    assert rows.rows[0].after == {i: new[i] for i in after}


@pytest.mark.parametrize("mode,before,after", [
    ("full", ALL6, ALL6), ("noblob", {0, 1, 2}, {0, 1, 2}), ("minimal", {0}, {1})])
def test_update_of_a_non_blob_leaves_unchanged_blobs_out(mode, before, after):
    rows = _run(mode, T_BLOB, [INSERT_2], Update("t_blob", {0: 2}, {1: 5}))
    assert _cols(rows.columns_present_before) == before
    assert _cols(rows.columns_present_after) == after
    assert rows.rows[0].after[1] == 5


@pytest.mark.parametrize("mode,before", [("full", ALL6), ("noblob", {0, 1, 2}), ("minimal", {0})])
def test_delete_before_image(mode, before):
    rows = _run(mode, T_BLOB, [INSERT_2], Delete("t_blob", {0: 2}))
    assert _cols(rows.columns_present_before) == before
    assert rows.columns_present_after is None
    assert rows.rows[0].before[0] == 2


@pytest.mark.parametrize("mode,after,values", [
    # corpus row_minimal: `INSERT INTO t_defaults (status) VALUES ('open')` logs @1 and @2 only
    ("minimal", {0, 1}, {0: 1, 1: b"open"}),
    ("noblob", {0, 1, 2, 4}, {0: 1, 1: b"open", 2: 0, 4: b"abcd"}),
    ("full", {0, 1, 2, 3, 4}, {0: 1, 1: b"open", 2: 0, 3: None, 4: b"abcd"})])
def test_insert_omitting_columns_logs_autoinc_and_named_columns(mode, after, values):
    rows = _run(mode, T_DEFAULTS, [], Insert("t_defaults", ({1: b"open"},)))
    assert _cols(rows.columns_present_after) == after
    assert rows.rows[0].after == values


def test_insert_naming_a_blob_logs_it_under_noblob():
    rows = _run("noblob", T_DEFAULTS, [], Insert("t_defaults", ({2: 5, 3: b"\x00\x01"},)))
    assert _cols(rows.columns_present_after) == {0, 1, 2, 3, 4}  # R3: written blob logged


@pytest.mark.parametrize("mode,before", [("minimal", {0}), ("noblob", {0, 1, 2}),
                                         ("full", {0, 1, 2})])
def test_not_null_unique_key_is_the_pke(mode, before):
    setup = [Insert("t_uk", ({0: b"A0000001", 1: 1, 2: b"one"},))]
    rows = _run(mode, T_UK, setup, Update("t_uk", {0: b"A0000001"}, {0: b"A0000009"}))
    assert _cols(rows.columns_present_before) == before
    assert rows.rows[0].before[0] == b"A0000001"
    assert rows.rows[0].after[0] == b"A0000009"  # a key-changing update logs the new key


@pytest.mark.parametrize("mode", ["minimal", "noblob", "full"])
def test_nullable_unique_key_is_no_pke_so_the_before_image_is_the_whole_row(mode):
    setup = [Insert("t_nuk", ({0: 1, 1: 2, 2: b"blob"},))]
    rows = _run(mode, T_NULLABLE_UK, setup, Delete("t_nuk", {0: 1}))
    assert _cols(rows.columns_present_before) == {0, 1, 2}  # blob included (PKE = all columns)
    assert rows.rows[0].before == {0: 1, 1: 2, 2: b"blob"}


@pytest.mark.parametrize("mode", ["minimal", "noblob", "full"])
def test_keyless_update_identical_rows_full_images(mode):
    """No PKE: the server logs every column in both images under every mode (libs/simulator/
    images.py; the corpus check is test_keyless_table_images_are_full_in_the_corpus)."""
    after = {0, 1, 2}
    setup = [Insert("t_nokey", ({0: 1, 1: b"x", 2: b"p"}, {0: 1, 1: b"x", 2: b"p"}))]
    rows = _run(mode, T_KEYLESS, setup, Update("t_nokey", {0: 1, 1: b"x"}, {2: b"q"}))
    assert _cols(rows.columns_present_before) == {0, 1, 2}
    assert _cols(rows.columns_present_after) == after
    assert len(rows.rows) == 2  # both identical rows match the WHERE and change
    assert [r.after[2] for r in rows.rows] == [b"q", b"q"]


def test_update_that_changes_nothing_logs_nothing():
    master, sink = new_master([T_BLOB], row_image="minimal")
    master.execute(INSERT_2)
    n = len(rows_events(sink))
    out = master.execute(Update("t_blob", {0: 2}, {1: 0}))  # counter already 0
    assert out.rows == 0 and len(rows_events(sink)) == n


def test_statement_of_many_rows_is_split_with_stmt_end_on_the_last():
    rows = tuple({0: k, 3: bytes(3000)} for k in range(10))
    master, sink = new_master([T_BLOB], row_image="minimal")
    master.execute(Insert("t_blob", rows))
    evs = rows_events(sink)
    # a row image = NULL byte + id (4) + blob (2-byte length + 3000) = 3007 bytes: two fit in
    # binlog_row_event_max_size (8192), three do not -> 10 rows make 5 events of 2
    assert [len(e.body.rows) for e in evs] == [2, 2, 2, 2, 2]
    assert [e.body.flags for e in evs] == [0, 0, 0, 0, 1]  # STMT_END_F on the last only


def test_keyless_table_images_are_full_in_the_corpus():
    """The oracle behind images.py's "no PKE" row: MariaDB 10.11 under binlog_row_image=MINIMAL
    (corpus row_minimal) logs all three columns of t_nokey in every INSERT/UPDATE SET part."""
    import gzip

    from libs.runtime.paths import CORPUS_DIR

    oracle = gzip.open(CORPUS_DIR / "mariadb" / "row_minimal" / "mdb-bin.000002.vv.txt.gz", "rt",
                       encoding="latin-1").read()
    set_sizes, table = [], None
    for line in oracle.splitlines():
        if line.startswith(("### INSERT INTO", "### UPDATE", "### DELETE FROM")):
            table = line.split()[-1]
            set_sizes.append([table, 0, False])
        elif line == "### SET":
            set_sizes[-1][2] = True
        elif line.startswith("###   @") and set_sizes and set_sizes[-1][2]:
            set_sizes[-1][1] += 1
    keyless = [n for t, n, has_set in set_sizes if t == "`row_minimal`.`t_nokey`" and has_set]
    assert len(keyless) >= 5
    assert set(keyless) == {3}
