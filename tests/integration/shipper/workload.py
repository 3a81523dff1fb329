"""SQL workloads for the server tests: FULL and MINIMAL row images, annotate on, a table with a
primary key, one with only a unique key, one without any key, multi-statement transactions."""
from __future__ import annotations


def schema(db: str) -> str:
    return f"""
DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; USE {db};
CREATE TABLE t_pk (id INT PRIMARY KEY, name VARCHAR(40), qty INT DEFAULT 7, note TEXT);
CREATE TABLE t_uk (code VARCHAR(10) NOT NULL, val DOUBLE, UNIQUE KEY (code));
CREATE TABLE t_nokey (a INT, b VARCHAR(20), c BLOB);
"""


def row_image_round(db: str, image: str, base: int) -> str:
    """One round of DML under binlog_row_image = `image` (FULL / MINIMAL)."""
    return f"""
USE {db};
SET SESSION binlog_row_image = {image};
INSERT INTO t_pk (id, name) VALUES ({base}, 'a{base}'), ({base + 1}, 'b{base}');
BEGIN;
INSERT INTO t_pk VALUES ({base + 2}, 'c', 3, REPEAT('x', 300));
INSERT INTO t_uk VALUES ('k{base}', 1.5), ('j{base}', NULL);
INSERT INTO t_nokey (a, b, c) VALUES ({base}, 'n', 0x00ff), ({base}, 'n', 0x00ff);
UPDATE t_pk SET qty = qty + 1 WHERE id >= {base};
COMMIT;
BEGIN;
UPDATE t_nokey SET b = 'm' WHERE a = {base} LIMIT 1;
UPDATE t_uk SET val = 2.5 WHERE code = 'k{base}';
DELETE FROM t_pk WHERE id = {base + 1};
UPDATE t_pk SET id = id + 100000 WHERE id = {base + 2};
COMMIT;
DELETE FROM t_nokey WHERE a = {base} LIMIT 1;
ALTER TABLE t_nokey ADD COLUMN d{base} INT DEFAULT 1;
"""
