"""Quick version of bench/fuzz_chain.py: mutated corpus frames through the whole decode chain
(decode -> boundary parser -> change records -> dump renderers -> encode), in this process; each
input returns or raises a BinlogError, never an untyped exception, and none hangs."""
from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench.{name}", REPO / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_quick_chain_fuzz_raises_only_binlog_errors():
    fuzz = _bench("fuzz_codec")
    chain = _bench("fuzz_chain")
    rng = random.Random(20261124)
    seeds = fuzz.load_seeds(fuzz.CORPUS, rng, per_file=20, max_events=2000, max_bytes=1_000_000)
    r = chain.run_inputs(4000, rng, seeds, limit_s=2.0, memory_limit_mb=64.0, trace=False)
    assert not r["failures"], [(f["kind"], f["file"], f["pos"], f["mutation"], f["message"],
                                f["traceback"][-800:]) for f in r["failures"][:5]]
    # the inputs reach the end of the chain, and the decoders' error paths
    assert r["outcomes"]["ok"] > 1000 and r["outcomes"]["malformed"] > 500
