"""CPU of apply_bench's paced producer (produce_groups) at --rate groups/s for 20,000 groups
against a private broker: this process's CPU seconds next to the wall seconds (bench/README.md
"Session 7": the old poll-based wait spun a whole core).

    .venv/bin/python bench/producer_cpu.py
"""
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.apply_workloads import simulated_binlog, frames_of, transaction_groups, produce_groups
from bench.bench_support import private_broker
from libs.shipper.kafka_sink import ensure_topic
binlog, _ = simulated_binlog(120000, 11)
groups = transaction_groups(frames_of(binlog))[:20000]
with private_broker(Path(tempfile.mkdtemp()) / "k") as bootstrap:
    ensure_topic(bootstrap, "t")
    c0, t0 = time.process_time(), time.time()
    produce_groups(bootstrap, "t", groups, "f", 1000.0, {})
    print(f"{len(groups)} groups, wall {time.time()-t0:.1f} s, "
          f"this process CPU {time.process_time()-c0:.1f} s")
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("children (broker) CPU", r.ru_utime + r.ru_stime)
