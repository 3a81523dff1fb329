"""WL#4162 transition table, every cell (STYLE practice 6). The expected table is transcribed by
hand from the seed (001_*, "Transaction Boundary Parser Transition Table"), not computed."""
import pytest

from libs.binlog.constants import BoundaryType as B
from libs.stream.boundary import step, transition_warning

FROM = (B.NOT_DEFINED, B.SELF_CONTAINED, B.START, B.INSIDE, B.END)
# rows: "To boundary type"; columns follow FROM. "keep" = IGNORE keeps the current state (*2).
SEED_TABLE = {
    B.NOT_DEFINED:    ("Err", "Err", "Err", "Err", "Err"),  # only reset() sets it (*1); decision
    B.IGNORE:         ("keep", "keep", "keep", "keep", "keep"),
    B.SELF_CONTAINED: ("Ok", "Ok", "Err", "Err", "Ok"),
    B.START:          ("Ok", "Ok", "Err", "Err", "Ok"),
    B.INSIDE:         ("Err", "Err", "Ok", "Ok", "Err"),
    B.END:            ("Err", "Err", "Ok", "Ok", "Err"),
}
CELLS = [(frm, to, SEED_TABLE[to][i]) for to in SEED_TABLE for i, frm in enumerate(FROM)]


@pytest.mark.parametrize("frm,to,cell", CELLS, ids=[f"{f.name}->{t.name}:{c}" for f, t, c in CELLS])
def test_transition_table_cell(frm, to, cell):
    new_state, ok = step(frm, to)
    if cell == "Ok":
        assert (new_state, ok) == (to, True)
    elif cell == "keep":
        assert (new_state, ok) == (frm, True)
    else:  # Err: not ok, and the parser resets to Not Defined (rpl_slave.cc M3)
        assert (new_state, ok) == (B.NOT_DEFINED, False)


def test_table_has_thirty_cells():
    assert len(CELLS) == 30 and len({(f, t) for f, t, _ in CELLS}) == 30


def test_parser_is_never_in_ignore_state():
    with pytest.raises(ValueError):
        step(B.IGNORE, B.START)


@pytest.mark.parametrize("frm,to,text", [
    (B.NOT_DEFINED, B.INSIDE, "Unable to change boundary parser from Not Defined to Inside Transaction."),
    (B.SELF_CONTAINED, B.END, "Unable to change boundary parser from Self Contained to End Transaction."),
    (B.END, B.INSIDE, "Unable to change boundary parser from End Transaction to Inside Transaction."),
    (B.INSIDE, B.START, "Unable to change boundary parser from Inside Transaction to Start Transaction."),
    (B.START, B.SELF_CONTAINED, "Unable to change boundary parser from Start Transaction to Self Contained."),
])
def test_warning_text_is_the_seeds(frm, to, text):
    assert step(frm, to)[1] is False
    assert transition_warning(frm, to) == text
