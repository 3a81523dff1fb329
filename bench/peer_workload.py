"""The workload of bench/peer_debezium.py: one deterministic stream of real MariaDB transactions
over four tables with primary keys, run once and read by both pipelines.

Tables (declared once in TABLES: the MariaDB DDL, the peer's Delta schema and how the peer reads
Debezium's JSON value of each column are all derived from it):

    accounts     (id INT PK, owner VARCHAR(64), balance DECIMAL(12,2), updated_at DATETIME)
    orders       (id BIGINT PK, account_id INT, status VARCHAR(16), qty INT, note VARCHAR(200))
    order_lines  (order_id BIGINT, line_no INT, sku VARCHAR(32), price DECIMAL(10,2), PK both)
    clock        (id INT PK, trx_seq BIGINT): ONE row, which every transaction sets to its own
                 sequence number as its last statement. A Delta version of `clock` holding
                 trx_seq = k holds every transaction up to k (both pipelines apply transactions
                 in commit order, whole micro-batches at a time): bench/delta_visibility.py.

Transactions (random.Random(seed); the choice never depends on timing, so a seed gives the same
statements, rows and binlog every run):

    load         accounts 1..A, 100 rows per INSERT statement and transaction
    new order    INSERT orders, INSERT 1-3 order_lines, UPDATE accounts (balance, updated_at)   35 %
    progress     UPDATE orders (status, qty), UPDATE its line 1 (price)                         30 %
    cancel       DELETE its order_lines, DELETE orders                                         15 %
    account      UPDATE accounts (owner, balance, updated_at)                                  20 %

Every UPDATE changes a value (MariaDB logs no row for an unchanged one), so each statement's
affected row count is the number of row changes it logs; the runner checks it.
"""
from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass, field
from decimal import Decimal

DB = "peer_bench"
BASE_TIME = dt.datetime(2024, 1, 1)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, MariaDB type)
    key: tuple[str, ...]
    nullable: tuple[str, ...] = ()

    def ddl(self) -> str:
        cols = ", ".join(f"`{c}` {t}" + ("" if c in self.nullable else " NOT NULL") for c, t in self.columns)
        return (f"CREATE TABLE `{DB}`.`{self.name}` ({cols}, "
                f"PRIMARY KEY ({', '.join(f'`{k}`' for k in self.key)}))")


TABLES = (
    Table("accounts", (("id", "INT"), ("owner", "VARCHAR(64)"), ("balance", "DECIMAL(12,2)"),
                       ("updated_at", "DATETIME")), ("id",)),
    Table("orders", (("id", "BIGINT"), ("account_id", "INT"), ("status", "VARCHAR(16)"), ("qty", "INT"),
                     ("note", "VARCHAR(200)")), ("id",), nullable=("note",)),
    Table("order_lines", (("order_id", "BIGINT"), ("line_no", "INT"), ("sku", "VARCHAR(32)"),
                          ("price", "DECIMAL(10,2)")), ("order_id", "line_no")),
    Table("clock", (("id", "INT"), ("trx_seq", "BIGINT")), ("id",)),
)
CLOCK_TABLE, CLOCK_COLUMN = "clock", "trx_seq"
STATUSES = ("new", "paid", "packed", "shipped", "delivered")


def schema_script() -> str:
    return f"CREATE DATABASE `{DB}`;\n" + "".join(t.ddl() + ";\n" for t in TABLES)


@dataclass(frozen=True)
class Transaction:
    seq: int  # 1, 2, ...: the value it gives clock.trx_seq
    statements: tuple[tuple[str, tuple, int], ...]  # (SQL, args, rows it changes)

    @property
    def changes(self) -> int:
        return sum(n for _, _, n in self.statements)


@dataclass
class Workload:
    """The generator: deterministic given the seed and the calls made on it."""

    seed: int = 21
    accounts: int = 1000
    seq: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _orders: list[int] = field(default_factory=list, repr=False)  # live order ids
    _order_lines: dict[int, int] = field(default_factory=dict, repr=False)  # order id -> lines
    _order_status: dict[int, int] = field(default_factory=dict, repr=False)
    _next_order: int = 1

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _next(self, statements: list) -> Transaction:
        self.seq += 1
        clock = (f"INSERT INTO `{DB}`.`clock` (id, trx_seq) VALUES (1, %s)" if self.seq == 1 else
                 f"UPDATE `{DB}`.`clock` SET trx_seq = %s WHERE id = 1")
        return Transaction(self.seq, tuple(statements) + ((clock, (self.seq,), 1),))

    def _when(self) -> dt.datetime:
        return BASE_TIME + dt.timedelta(seconds=self.seq)

    def load(self, per_trx: int = 100) -> list[Transaction]:
        out = []
        for first in range(1, self.accounts + 1, per_trx):
            ids = range(first, min(first + per_trx, self.accounts + 1))
            rows = [(i, f"owner-{i}", Decimal(1000 + i % 97) + Decimal("0.50"), self._when()) for i in ids]
            values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
            out.append(self._next([(f"INSERT INTO `{DB}`.`accounts` VALUES {values}",
                                    tuple(v for r in rows for v in r), len(rows))]))
        return out

    def transaction(self) -> Transaction:
        rng, r = self._rng, self._rng.random()
        if r < 0.35 or not self._orders:
            return self._new_order()
        if r < 0.65:
            return self._progress(self._pick_order())
        if r < 0.80:
            return self._cancel(self._pick_order())
        account = rng.randint(1, self.accounts)
        return self._next([(f"UPDATE `{DB}`.`accounts` SET owner = %s, balance = balance + 1.25, "
                            f"updated_at = %s WHERE id = %s", (f"owner-{account}-{self.seq + 1}",
                                                               self._when(), account), 1)])

    def _pick_order(self) -> int:
        return self._orders[self._rng.randrange(len(self._orders))]

    def _new_order(self) -> Transaction:
        rng = self._rng
        oid, account, lines = self._next_order, rng.randint(1, self.accounts), rng.randint(1, 3)
        self._next_order += 1
        self._orders.append(oid)
        self._order_lines[oid] = lines
        self._order_status[oid] = 0
        line_rows = [(oid, n, f"sku-{rng.randint(1, 5000)}", Decimal(rng.randint(100, 99999)) / 100)
                     for n in range(1, lines + 1)]
        values = ", ".join(["(%s, %s, %s, %s)"] * lines)
        return self._next([
            (f"INSERT INTO `{DB}`.`orders` VALUES (%s, %s, %s, %s, %s)",
             (oid, account, STATUSES[0], rng.randint(1, 9), "x" * rng.randint(0, 120) or None), 1),
            (f"INSERT INTO `{DB}`.`order_lines` VALUES {values}",
             tuple(v for r in line_rows for v in r), lines),
            (f"UPDATE `{DB}`.`accounts` SET balance = balance - 2.00, updated_at = %s WHERE id = %s",
             (self._when(), account), 1)])

    def _progress(self, oid: int) -> Transaction:
        self._order_status[oid] = (self._order_status[oid] + 1) % len(STATUSES)
        return self._next([
            (f"UPDATE `{DB}`.`orders` SET status = %s, qty = qty + 1 WHERE id = %s",
             (STATUSES[self._order_status[oid]], oid), 1),
            (f"UPDATE `{DB}`.`order_lines` SET price = price + 0.01 WHERE order_id = %s AND line_no = 1",
             (oid,), 1)])

    def _cancel(self, oid: int) -> Transaction:
        i = self._orders.index(oid)
        self._orders[i] = self._orders[-1]
        self._orders.pop()
        lines = self._order_lines.pop(oid)
        del self._order_status[oid]
        return self._next([(f"DELETE FROM `{DB}`.`order_lines` WHERE order_id = %s", (oid,), lines),
                           (f"DELETE FROM `{DB}`.`orders` WHERE id = %s", (oid,), 1)])


@dataclass(frozen=True)
class Committed:
    seq: int
    phase: str
    committed_at: float  # time.time() right after the server answered COMMIT
    changes: int


def run(conn, transactions, phase: str, *, rate: float | None = None) -> list[Committed]:
    """Each transaction in its own BEGIN .. COMMIT on one connection; at `rate` transactions a
    second (each started at its slot, or at once when behind), or as fast as possible."""
    out = []
    start = time.monotonic()
    with conn.cursor() as cur:
        for i, trx in enumerate(transactions):
            if rate is not None:
                wait = start + i / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            cur.execute("BEGIN")
            for sql, args, rows in trx.statements:
                got = cur.execute(sql, args)
                if got != rows:
                    raise SystemExit(f"workload: transaction {trx.seq} changed {got} rows, "
                                     f"expected {rows}: {sql}")
            cur.execute("COMMIT")
            out.append(Committed(trx.seq, phase, time.time(), trx.changes))
    return out
