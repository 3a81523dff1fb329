"""Seeded workload generator: the next statement or transaction for the current master state.

Deterministic for a seed (random.Random(seed), no clock, no hash ordering). Covers what the
corpus workload covers: inserts naming all or only some columns (DEFAULTs apply), multi-row
inserts, updates of one column, of only a blob, of only a non-blob column, key-changing updates
(PK and NOT NULL UK), updates/deletes on a keyless table with identical rows, deletes,
multi-statement transactions, rollbacks, unsafe statements (UUID()), DDL (ADD/DROP COLUMN,
TRUNCATE). Values are chosen so the SQL text is exact (binary-exact doubles, ASCII strings).
"""
from __future__ import annotations

import json
import random
import uuid
from decimal import Decimal

from libs.simulator.schema import int_col
from libs.simulator.statements import Ddl, Delete, Insert, Update

MAX_ROWS_PER_TABLE = 60
WORDS = ("alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa")
DOUBLES = (0.5, 1.25, 2.0, 3.75, -1.5, 100.125)


class Workload:
    def __init__(self, seed: int, master, *, ddl_rate: float = 0.03, rollback_rate: float = 0.08,
                 multi_rate: float = 0.25, unsafe_rate: float = 0.05):
        self.rng = random.Random(seed)
        self.master = master
        self.ddl_rate, self.rollback_rate = ddl_rate, rollback_rate
        self.multi_rate, self.unsafe_rate = multi_rate, unsafe_rate
        self._next_key = 1000
        self._added: dict[str, list[str]] = {}
        self._n_added = 0

    @property
    def model(self):
        return self.master.model

    # ---- driver ------------------------------------------------------------------------------

    def run_transaction(self) -> None:
        """One unit of work on the master: a DDL, an autocommit statement, or BEGIN .. COMMIT /
        ROLLBACK of 2-4 statements."""
        r = self.rng.random()
        if r < self.ddl_rate:
            self.master.execute(self.ddl())
        elif r < self.ddl_rate + self.multi_rate:
            rollback = self.rng.random() < self.rollback_rate / self.multi_rate
            tables = self._transactional_tables() if rollback else None
            if rollback and not tables:
                rollback = False
            self.master.begin()
            for _ in range(self.rng.randint(2, 4)):
                self.master.execute(self.dml(tables))
            self.master.rollback() if rollback else self.master.commit()
        else:
            self.master.execute(self.dml())

    def _transactional_tables(self):
        return [n for n, s in self.model.tables.items() if s.table.transactional]

    # ---- values ------------------------------------------------------------------------------

    def key(self) -> int:
        self._next_key += self.rng.randint(1, 3)
        return self._next_key

    def value(self, column):
        rng = self.rng
        if column.nullable and rng.random() < 0.1:
            return None
        name, t = column.name, column.sql_type
        if column.auto_increment:
            return None  # let the master assign it
        if t == "INT":
            return rng.randint(-1000, 100000)
        if t.startswith("DECIMAL"):
            return Decimal(rng.randint(-99999, 999999)).scaleb(-column.scale)
        if t == "DOUBLE":
            return rng.choice(DOUBLES)
        if t.startswith("DATETIME"):
            return (f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                    f"12:{rng.randint(0, 59):02d}:00.{rng.randint(0, 999):03d}")
        if t == "JSON":
            doc = json.dumps({"k": rng.randint(0, 99), "s": rng.choice(WORDS)}, sort_keys=True)
            return doc if isinstance(column.type_code, int) and column.type_code == 245 else doc.encode()
        if t.startswith("CHAR("):
            n = int(t[5:-1])
            return "".join(rng.choice("ABCDEFGH0123456789") for _ in range(n)).encode()
        if t.startswith("VARCHAR("):
            n = int(t[8:-1])
            return (rng.choice(WORDS) + str(rng.randint(0, 999)))[:n].encode()
        if t.endswith("TEXT"):
            return (" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20)))).encode()
        if t.endswith("BLOB"):
            size = rng.choice((0, 4, 64, 300, 9000 if "MEDIUM" in t else 1000))
            return bytes(rng.getrandbits(8) for _ in range(size))
        raise ValueError(f"no value generator for {name} {t}")

    def _uuid(self) -> bytes:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).encode()

    # ---- statements --------------------------------------------------------------------------

    def dml(self, tables=None):
        names = tables or sorted(self.model.tables)
        name = self.rng.choice(names)
        rows = self.model.rows(name)
        r = self.rng.random()
        if not rows or (r < 0.45 and len(rows) < MAX_ROWS_PER_TABLE):
            return self.insert(name)
        if r < 0.8 or len(rows) < 3:
            return self.update(name, rows)
        return self.delete(name, rows)

    def _new_row(self, t, *, all_columns: bool) -> dict:
        cols = range(len(t.columns))
        if not all_columns:  # omit some columns: their DEFAULT applies (WL#5092 R1 minimal)
            cols = [i for i in cols if i in (t.pke() or ()) or self.rng.random() < 0.5]
        row = {}
        for i in cols:
            c = t.columns[i]
            if c.auto_increment and not all_columns:
                continue
            row[i] = self.value(c)
        for i in t.pke() or ():
            c = t.columns[i]
            if c.auto_increment:
                continue
            row[i] = self.key() if c.sql_type == "INT" else f"K{self.key():07d}".encode()
        return row

    def insert(self, name: str) -> Insert:
        t = self.model.table(name)
        all_columns = self.rng.random() < 0.5
        cols_template = self._new_row(t, all_columns=all_columns)
        rows = [cols_template]
        for _ in range(self.rng.choice((0, 0, 1, 2))):
            extra = self._new_row(t, all_columns=True)
            rows.append({i: extra[i] for i in cols_template})
        if name == "t_nokey" and self.rng.random() < 0.3:
            rows.append(dict(rows[0]))  # identical rows: only the keyless table allows them
        exprs = {}
        text_cols = [i for i in cols_template if t.columns[i].sql_type == "TEXT"]
        if text_cols and len(rows) == 1 and self.rng.random() < self.unsafe_rate:
            rows[0][text_cols[0]] = self._uuid()  # the value UUID() returned on the master
            exprs[text_cols[0]] = "UUID()"
        return Insert(name, tuple(rows), exprs)

    def _where(self, t, row) -> dict:
        pke = t.pke()
        if pke is not None:
            return {i: row[i] for i in pke}
        # keyless: identify by every non-DOUBLE column (all identical rows match, as in SQL)
        return {i: row[i] for i, c in enumerate(t.columns) if c.sql_type != "DOUBLE"}

    def update(self, name: str, rows) -> Update:
        t = self.model.table(name)
        _, row = self.rng.choice(rows)
        pke = set(t.pke() or ())
        r = self.rng.random()
        if pke and r < 0.15 and not any(t.columns[i].auto_increment for i in pke):
            # key-changing update: a fresh PK / unique-key value
            k = next(iter(pke))
            new = self.key() if t.columns[k].sql_type == "INT" else f"K{self.key():07d}".encode()
            return Update(name, self._where(t, row), {k: new})
        candidates = [i for i in range(len(t.columns)) if i not in pke
                      and not t.columns[i].auto_increment]
        n = 1 if self.rng.random() < 0.7 else min(2, len(candidates))
        cols = self.rng.sample(candidates, n)
        assignments = {i: self.value(t.columns[i]) for i in cols}
        exprs = {}
        for i in cols:
            if t.columns[i].sql_type == "TEXT" and self.rng.random() < self.unsafe_rate * 4:
                assignments[i] = self._uuid()
                exprs[i] = "UUID()"
        return Update(name, self._where(t, row), assignments, exprs)

    def delete(self, name: str, rows) -> Delete:
        t = self.model.table(name)
        _, row = self.rng.choice(rows)
        return Delete(name, self._where(t, row))

    def ddl(self) -> Ddl:
        r = self.rng.random()
        added = self._added.setdefault("t_pk", [])
        if added and r < 0.4:
            return Ddl("drop_column", "t_pk", added.pop(0))
        if r < 0.85:
            self._n_added += 1
            col = int_col(f"x{self._n_added}", default=self.rng.randint(0, 9))
            added.append(col.name)
            return Ddl("add_column", "t_pk", col)
        return Ddl("truncate", self.rng.choice(["t_uk", "t_nokey"]))
