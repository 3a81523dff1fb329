import gc

import pytest

from libs.runtime.gc_pause import gc_paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_error():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_an_already_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
