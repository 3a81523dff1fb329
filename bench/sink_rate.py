"""cdc-ship's Kafka sink alone: KafkaSink.send + flush of N 100-byte records into a private broker,
records/s per round (a fresh topic each round; round 0 includes the producer's warm-up).

    .venv/bin/python bench/sink_rate.py [--records 200000] [--rounds 3]

Session 9 (bench/README.md): the cost of binding each record to its delivery callback, so that a
failed delivery names the record's position.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import private_broker  # noqa: E402
from libs.shipper.kafka_sink import KafkaSink  # noqa: E402
from libs.contracts.topic import KafkaRecord  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    records = [KafkaRecord("bench", "mdb-bin.000001", 4 + 100 * i, bytes(19) + b"v" * 81)
               for i in range(args.records)]
    with private_broker(Path(tempfile.mkdtemp(prefix="sink-rate-")) / "kafka") as bootstrap:
        for n in range(args.rounds):
            sink = KafkaSink(bootstrap, f"sink-rate-{n}", "bench")
            started = time.perf_counter()
            for record in records:
                sink.send(record)
            sink.flush()
            seconds = time.perf_counter() - started
            assert sink.delivered == len(records), sink.delivered
            print(f"round {n}: {len(records) / seconds:,.0f} records/s ({len(records):,} delivered "
                  f"in {seconds:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
