"""The apply benchmarks' workloads (bench/apply_bench.py, bench/producer_cpu.py,
bench/plain_batches.py, bench/worker_profile.py): the simulator's minimal-image binlog, its
frames and transaction groups, the paced producer, and a decoded update-heavy change batch."""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from libs.runtime.paths import REPO_ROOT  # noqa: E402

CACHE = REPO_ROOT / ".cache" / "bench"
SOURCE = "sim"

def simulated_binlog(transactions: int, seed: int) -> tuple[Path, Path]:
    """(binlog file, expected-tables dir) of the minimal-image, no-DDL simulator workload."""
    from libs.simulator import FileSink, SimulationOptions, simulate, write_expected

    path = CACHE / f"sim_minimal_{transactions}_{seed}.bin"
    expected = CACHE / f"sim_minimal_{transactions}_{seed}.expected"
    if path.exists() and (expected / "manifest.json").exists():
        return path, expected
    opts = SimulationOptions(row_image="minimal", ddl_rate=0.0, transactions=transactions, seed=seed)
    sink = FileSink()
    result = simulate(opts, sink)
    sink.write(path)
    write_expected(expected, result.master.model, opts.as_dict(), result.master.statements)
    return path, expected


def frames_of(path: Path) -> list[tuple[int, bytes]]:
    data, pos, out = path.read_bytes(), 4, []
    while pos < len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        out.append((pos, data[pos:pos + size]))
        pos += size
    return out


def update_heavy_changes(n: int):
    """Arrow table of n decoded change records: n/10 inserts into sim.t_pk, then minimal-image
    UPDATEs of `qty` over those rows, 1000 row changes per transaction; plus the final rows
    {id: qty} (the oracle). Built with the simulator's framing and decoded by libs/."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from libs.stream.assembler import InMemorySpillStore
    from libs.simulator.master import Master, Session
    from libs.simulator.schema import standard_tables
    from libs.simulator.sinks import FileSink
    from libs.stages.assembly import InputFrame, StageConfig, assemble_group, decode_segment
    from pipelines.job.schemas import CHANGE_RECORD, spark_schema

    cached = CACHE / f"update_heavy_{n}.arrow"
    keys = max(1, n // 10)
    sink = FileSink()
    master = Master([t for t in standard_tables("mariadb") if t.name == "t_pk"], sink,
                    session=Session("ROW", "minimal", False))
    table = master.model.table("t_pk")
    rows = {k: {0: k, 1: b"n%d" % k, 2: 0, 3: None, 4: None} for k in range(keys)}
    changes = [("insert", "t_pk", None, dict(rows[k]), frozenset(range(5))) for k in range(keys)]
    for i in range(n - keys):
        k = i % keys
        before = dict(rows[k])
        rows[k][2] = i + 1
        changes.append(("update", "t_pk", before, dict(rows[k]), frozenset({2})))
    final = {k: r[2] for k, r in rows.items()}
    if cached.exists():
        with pa.memory_map(str(cached)) as src:
            return pa.ipc.open_file(src).read_all(), final
    for start in range(0, len(changes), 1000):
        master.begin()
        master._group.transactional = True
        chunk = changes[start:start + 1000]
        for kind in ("insert", "update"):
            run = [c for c in chunk if c[0] == kind]
            if run:
                master.log_rows_statement(table, run)
        master.commit()
    master.close()
    frames = [InputFrame(data, "sim-bin.000001", pos, 0, i)
              for i, (pos, data) in enumerate((f.pos, f.data) for f in sink.frames)]
    records, _ = assemble_group(SOURCE, None, frames, InMemorySpillStore(), StageConfig(), now=0)
    decoded = [c for r in records if r["kind"] == "segment" for c in decode_segment(r)]
    arrow = pa.Table.from_pylist(decoded, schema=to_arrow_schema(spark_schema(CHANGE_RECORD)))
    with pa.OSFile(str(cached), "wb") as out, pa.ipc.new_file(out, arrow.schema) as writer:
        writer.write_table(arrow)
    return arrow, final


def transaction_groups(frames) -> list[list[tuple[int, bytes]]]:
    """The binlog cut into groups: a MariaDB GTID event .. the event before the next GTID."""
    from libs.binlog.constants import EventType

    groups, current = [], []
    for pos, data in frames:
        if data[4] == EventType.MARIA_GTID and current:
            groups.append(current)
            current = []
        current.append((pos, data))
    groups.append(current)
    return groups


def produce_groups(bootstrap: str, topic: str, groups, file_name: str, rate: float | None,
                   commits: dict) -> None:
    """Produces `groups` in order, `rate` groups per second (None: as fast as possible);
    commits[start pos of a group] = wall time its frames were handed to the producer.

    Paced by sleeping until the next group is due. It used to wait in `producer.poll(due -
    now)`, which librdkafka rounds down to 0 ms below 1 ms: at 1,000 groups/s that loop spun,
    one whole core of this 2-core machine taken from the job it measures (20.2 s of CPU in 20 s
    of producing, session 7); now 4.0 s, the records themselves (bench/README.md "Session 7")."""
    from confluent_kafka import Producer

    from libs.contracts.topic import KafkaRecord

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 1})
    start = time.time()
    for i, group in enumerate(groups):
        if rate:
            due = start + i / rate
            if (wait := due - time.time()) > 0:
                producer.poll(0)  # delivery callbacks, without blocking
                time.sleep(wait)
        for pos, data in group:
            record = KafkaRecord(SOURCE, file_name, pos, data)
            producer.produce(topic, key=record.key(), value=record.value, partition=0,
                             headers=record.headers())
        commits[group[0][0]] = time.time()
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("producer could not flush")
