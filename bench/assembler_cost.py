"""Pure-Python cost per frame of the stream stages' two Python cores, no Spark (bench/README.md
"Session 4"): libs.stages.assembly.assemble_group (boundary parser + assembler, one source, in
20,000-frame batches as the job reads them) and decode_segment (the rows stage); then the Spark
stages' adapters around them, still without a session: the assemble stage's pandas in
(_input_frames) and out (chunked), and the rows stage's whole mapInArrow function
(DecodeSegments: Arrow segments in, decode_segment, Arrow change records out).

    .venv/bin/python bench/assembler_cost.py [--transactions 15000] [--seed 11]

The apply_bench workload (cached under .cache/bench/), with an in-memory spill store.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_bench import simulated_binlog  # noqa: E402
from bench.bench_support import load_average  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=15000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--batch", type=int, default=20000, help="frames per assemble_group call")
    ap.add_argument("--gc-paused", action="store_true",
                    help="run assemble_group with the garbage collector paused, as the assemble stage does")
    args = ap.parse_args(argv)

    from libs.stream.assembler import InMemorySpillStore
    from libs.runtime.gc_pause import gc_paused
    from libs.binlog import iter_frames
    from libs.stages.assembly import InputFrame, assemble_group, decode_segment

    binlog, _ = simulated_binlog(args.transactions, args.seed)
    data = Path(binlog).read_bytes()
    frames = [InputFrame(bytes(f), binlog.name, pos, 0, i)
              for i, (pos, f) in enumerate(iter_frames(data, file=binlog.name))]
    store, row, records = InMemorySpillStore(), None, []
    t0 = time.perf_counter()
    for i in range(0, len(frames), args.batch):
        with gc_paused() if args.gc_paused else contextlib.nullcontext():
            out, row = assemble_group("sim", row, frames[i:i + args.batch], store, now=0)
        records += out
    assemble_s = time.perf_counter() - t0
    segments = [r for r in records if r["kind"] == "segment"]
    t0 = time.perf_counter()
    changes = sum(1 for s in segments for _ in decode_segment(s))
    decode_s = time.perf_counter() - t0
    n = len(frames)
    print(f"load {load_average()}; {n} frames, {len(segments)} segments, {changes} row changes")
    print(f"assemble_group{' (gc paused)' if args.gc_paused else ''}: {assemble_s:.2f} s = "
          f"{assemble_s / n * 1e6:.0f} us/frame")
    print(f"decode_segment: {decode_s:.2f} s = {decode_s / n * 1e6:.0f} us/frame")
    adapters(frames, records, segments, args.batch)
    return 0


def adapters(frames, records, segments, batch: int) -> None:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from pipelines.job.schemas import ASSEMBLED_RECORD, spark_schema
    from pipelines.stages.assemble import _input_frames
    from pipelines.stages.pandas_records import chunked
    from pipelines.stages.rows import DecodeSegments

    n = len(frames)
    pdfs = [pd.DataFrame({"source": "sim", "binlog_file": [f.file for f in frames[i:i + batch]],
                          "binlog_pos": [f.pos for f in frames[i:i + batch]],
                          "kafka_partition": [f.kafka_partition for f in frames[i:i + batch]],
                          "kafka_offset": [f.kafka_offset for f in frames[i:i + batch]],
                          "raw": [f.raw for f in frames[i:i + batch]],
                          "record_kind": [f.kind for f in frames[i:i + batch]]}) for i in range(0, n, batch)]
    t0 = time.perf_counter()
    for pdf in pdfs:
        _input_frames(pdf)
    in_s = time.perf_counter() - t0
    schema = spark_schema(ASSEMBLED_RECORD)
    t0 = time.perf_counter()
    for _ in chunked(records, schema):
        pass
    out_s = time.perf_counter() - t0
    arrow = to_arrow_schema(schema)
    seg_batches = [pa.RecordBatch.from_pylist(segments[i:i + 1000], schema=arrow)
                   for i in range(0, len(segments), 1000)]
    t0 = time.perf_counter()
    for _ in DecodeSegments()(iter(seg_batches)):
        pass
    rows_s = time.perf_counter() - t0
    print(f"assemble stage in  (_input_frames): {in_s:.2f} s = {in_s / n * 1e6:.0f} us/frame")
    print(f"assemble stage out (chunked):       {out_s:.2f} s = {out_s / n * 1e6:.0f} us/frame")
    print(f"rows stage (DecodeSegments):        {rows_s:.2f} s = {rows_s / n * 1e6:.0f} us/frame")


if __name__ == "__main__":
    sys.exit(main())
