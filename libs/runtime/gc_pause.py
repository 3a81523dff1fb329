"""Python's cyclic garbage collector paused over one batch of pure-Python work.

Why: a batch builds hundreds of thousands of small objects (frames, change dicts, row images)
that stay alive until the batch ends. Each allocation burst triggers collections that walk
every live object again, and none of them finds garbage: reference counting already frees
what these stages drop, and they build no reference cycles. Measured: 25-30% of
assemble_group and of the apply stage's replay (bench/README.md, session 5).

The pause is bounded: the collector is re-enabled (if it was enabled) when the block ends, and
any cyclic garbage made inside is collected by the next automatic collection after that.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
