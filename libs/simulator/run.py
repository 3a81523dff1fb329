"""Run a simulation: options declared once, a fixed number of transactions or a paced run.

    opts = SimulationOptions(flavour="mariadb", row_image="minimal", transactions=200, seed=7)
    sink = FileSink()
    result = simulate(opts, sink)          # sink.bytes() is the binlog file
    write_expected("expected/", result.master.model, opts.as_dict(), result.master.statements)
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from libs.simulator.images import ROW_IMAGES
from libs.simulator.master import Master, Session
from libs.simulator.schema import standard_tables
from libs.simulator.workload import Workload

BINLOG_FORMATS = ("ROW", "MIXED", "STATEMENT")


@dataclass(frozen=True)
class SimulationOptions:
    flavour: str = "mariadb"  # mariadb | mysql: what the FDE, GTIDs and rows events look like
    row_image: str = "full"  # binlog_row_image: full | noblob | minimal (WL#5092)
    binlog_format: str = "ROW"  # session binlog_format: ROW | MIXED | STATEMENT (WL#3303)
    rows_query: bool = True  # Rows_query / Annotate_rows per row-logged statement (WL#4033)
    markers: bool = False  # WL#4162 boundary markers in the header flags
    checksum: bool = True  # CRC32 trailer on every event
    ignorable_rate: float = 0.0  # probability of an ignorable unknown event per slot (WL#4033)
    capability: int | None = None  # MariaDB @mariadb_slave_capability of the consumer (dummies)
    transactions: int = 100  # units of work (DDL, autocommit statement, BEGIN..COMMIT/ROLLBACK)
    ddl_rate: float = 0.03  # share of units that are DDL (0: the schema stays as created)
    seed: int = 1
    server_id: int = 1
    file_name: str = "sim-bin.000001"
    engines: dict = field(default_factory=dict)  # table -> engine (WL#3303 capability table)

    def validate(self) -> "SimulationOptions":
        if self.flavour not in ("mariadb", "mysql"):
            raise ValueError(f"--flavour must be mariadb or mysql, got {self.flavour!r}")
        if self.row_image not in ROW_IMAGES:
            raise ValueError(f"--row-image must be one of {', '.join(ROW_IMAGES)}")
        if self.binlog_format.upper() not in BINLOG_FORMATS:
            raise ValueError(f"--binlog-format must be one of {', '.join(BINLOG_FORMATS)}")
        if not 0.0 <= self.ignorable_rate <= 1.0:
            raise ValueError("--ignorable-rate must be between 0 and 1")
        if self.capability is not None and self.flavour != "mariadb":
            raise ValueError("--capability is a MariaDB replica setting (@mariadb_slave_capability)")
        if self.capability is not None and not 0 <= self.capability <= 4:
            raise ValueError("--capability must be 0..4 (MARIA_SLAVE_CAPABILITY_*)")
        if not 0.0 <= self.ddl_rate <= 1.0:
            raise ValueError("--ddl-rate must be between 0 and 1")
        if self.transactions < 0:
            raise ValueError("--transactions must be >= 0")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SimulationResult:
    master: Master
    workload: Workload


def make_master(opts: SimulationOptions, sink: Callable) -> Master:
    opts.validate()
    session = Session(opts.binlog_format.upper(), opts.row_image, opts.rows_query)
    return Master(standard_tables(opts.flavour, opts.engines), sink, flavour=opts.flavour,
                  server_id=opts.server_id, checksum=opts.checksum, markers=opts.markers,
                  file_name=opts.file_name, ignorable_rate=opts.ignorable_rate, seed=opts.seed,
                  session=session)


def simulate(opts: SimulationOptions, sink: Callable, *, rate: float | None = None,
             duration: float | None = None, should_stop: Callable[[], bool] = lambda: False,
             clock=time.monotonic, sleep=time.sleep) -> SimulationResult:
    """Write the file start, then units of work: `opts.transactions` of them when `rate` is
    None; else `rate` units per second until `duration` seconds passed or `should_stop()`
    (duration None: until stopped). Ends the file with a Rotate, as FLUSH BINARY LOGS does."""
    master = make_master(opts, sink)
    workload = Workload(opts.seed, master, ddl_rate=opts.ddl_rate)
    if rate is None:
        for _ in range(opts.transactions):
            workload.run_transaction()
    else:
        if rate <= 0:
            raise ValueError("--rate must be > 0")
        start = clock()
        done = 0
        while not should_stop():
            now = clock()
            if duration is not None and now - start >= duration:
                break
            due = start + done / rate
            if now < due:
                sleep(min(due - now, 0.2))
                continue
            workload.run_transaction()
            done += 1
    master.close()
    return SimulationResult(master, workload)
