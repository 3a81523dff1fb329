"""Quick version of bench/fuzz_codec.py for CI: ~20k mutated/truncated corpus frames through
decode_event; only BinlogError subclasses may escape, and no frame may hang: each frame runs under
a 2 s timer whose expiry is a failure. The run's total time is bench/fuzz_codec.py's figure, not an
assertion here: this tier runs at idle priority beside the others, so its clock measures the load."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FUZZ = REPO / "bench" / "fuzz_codec.py"


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("bench_fuzz_codec", FUZZ)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_quick_fuzz_raises_only_binlog_errors():
    fuzz = _fuzz_module()
    r = fuzz.run(20_000, seed=20240601, quick=True, per_frame_limit=2.0, rss_limit_mb=1024)
    assert r["frames"] == 20_000
    assert not r["failures"], [(f["kind"], f["file"], f["pos"], f["mutation"], f["message"],
                                f["traceback"][-800:]) for f in r["failures"][:5]]
    # the mutations reach the body decoders, not only the framing/CRC checks
    assert r["outcomes"].get("ok", 0) > 1000
    assert r["outcomes"].get("malformed", 0) > 1000
