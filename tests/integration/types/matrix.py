"""The type matrix: tables of every column type with extremes, NULLs, empty strings, NUL bytes,
emoji, denormal floats, zero and partial dates, fsp 0-6, a 300-label ENUM and a 64-member SET;
then UPDATEs of a few columns (a MINIMAL after image holds only those) and a DELETE.

`server_cells(server, db, table)` is the oracle: the server's own SELECT of each cell, as text
no client conversion can change (HEX() of characters and bytes, UNIX_TIMESTAMP of TIMESTAMP).
`delta_cell` renders a Delta value the same way, so the two compare as strings.
"""
from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

from libs.binlog.charsets import encode_text
from libs.targets.model import Column

_ENUM300 = ",".join(f"'v{i}'" for i in range(1, 301))
_SET64 = ",".join(f"'m{i}'" for i in range(1, 65))

TABLES = {
    "t_int": """(id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
        mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
        b BOOL, z INT(5) UNSIGNED ZEROFILL)""",
    "t_num": """(id INT PRIMARY KEY, d65 DECIMAL(65,30), d38 DECIMAL(38,19), du DECIMAL(10,2) UNSIGNED,
        d5 DECIMAL(5,0), f FLOAT, d DOUBLE, b1 BIT(1), b17 BIT(17), b64 BIT(64))""",
    "t_time": """(id INT PRIMARY KEY, dt DATE, y YEAR, t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3),
        dt6 DATETIME(6), ts0 TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, """
              """dtn DATETIME NOT NULL DEFAULT '2000-01-01')""",
    "t_str": """(id INT PRIMARY KEY, c CHAR(10), vc VARCHAR(100), l1 VARCHAR(20) CHARACTER SET latin1,
        cy VARCHAR(20) CHARACTER SET cp1251, u16 VARCHAR(20) CHARACTER SET utf16, """
             """a CHAR(5) CHARACTER SET ascii,
        tx TEXT, bn BINARY(8), vb VARBINARY(20), bl BLOB) DEFAULT CHARSET=utf8mb4""",
    "t_enum": f"""(id INT PRIMARY KEY, tier ENUM('bronze','silver','gold','platinum'), e300 ENUM({_ENUM300}),
        eu ENUM('é','€','😀'), s SET('x','y','z'), s64 SET({_SET64}))""",
    "t_misc": """(id INT PRIMARY KEY, j JSON, u UUID, ip6 INET6, ip4 INET4, g GEOMETRY, p POINT)""",
}

INSERTS = {
    "t_int": """(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, 0, 0),
        (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807,
         18446744073709551615, 1, 42),
        (3, -1, 128, -1, 32768, -1, 8388608, -1, 2147483648, -1, 9223372036854775808, 1, 99999),
        (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""",
    "t_num": """(1, '-99999999999999999999999999999999999.999999999999999999999999999999',
         '9999999999999999999.9999999999999999999', 99999999.99, -99999, 3.40282e38, 1.7976931348623157e308,
         b'1', b'10000000000000001', b'1111111111111111111111111111111111111111111111111111111111111111'),
        (2, '0.000000000000000000000000000001', '-0.0000000000000000001', 0, 0, 1.401298e-45, 4.9e-324,
         b'0', b'0', b'0'),
        (3, '12345678901234567890123456789012345.123456789012345678901234567890', 0, 1.5, 7, -0.0, -2.5e-308,
         NULL, b'101', b'1000000000000000000000000000000000000000000000000000000000000000'),
        (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""",
    "t_time": """(1, '1000-01-01', 1901, '-838:59:59', '838:59:59.999999', '1000-01-01 00:00:00',
         '2024-02-29 12:34:56.789', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01',
         '2038-01-19 03:14:07.999999', '2024-01-01'),
        (2, '0000-00-00', 0, '-00:00:00.5', '-00:00:00.000001', '0000-00-00 00:00:00',
         '2024-00-00 00:00:00.000', '2024-05-00 10:00:00.000001', '0000-00-00 00:00:00', """
              """'2001-09-09 01:46:40.5',
         '0000-00-00'),
        (3, '2024-00-00', 2155, '100:00:00', '-01:02:03.000005', '2001-02-03 04:05:06', """
              """'1969-12-31 23:59:59.999',
         '2000-01-01 00:00:00.000001', '2024-02-29 12:34:56', '1999-12-31 23:59:59.999999', """
              """'2024-06-30 23:59:59'),
        (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2024-07-01')""",
    "t_str": """(1, 'héllo', 'emoji 😀 and 中文', 'Grüße €‰', 'Привет', 'utf16 ✓ 😀', 'ascii', """
             """'text\\nwith\\ttabs',
         X'0001000200', X'00FF0000', X'000102030405'),
        (2, '', '', '', '', '', '', '', X'', X'', X''),
        (3, 'trail  ', 'trailing spaces   ', 'Ÿ', 'ЁЖ', 'a', 'x', REPEAT('long ', 3000), X'FFFFFFFFFFFFFFFF',
         X'20', X'00'),
        (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""",
    "t_enum": """(1, 'silver', 'v300', '😀', 'x,z', 'm1,m64'),
        (2, 'bronze', 'v1', 'é', '', 'm2,m3,m33'),
        (3, 'platinum', 'v256', '€', 'x,y,z', ''),
        (4, NULL, NULL, NULL, NULL, NULL)""",
    "t_misc": """(1, '{"a": 1, "b": [true, null, "é😀"], "c": {"d": 1.5e300}}',
         '123e4567-e89b-12d3-a456-426655440000', '::1', '127.0.0.1', ST_GeomFromText('LINESTRING(0 0,1 1)'),
         ST_GeomFromText('POINT(1.5 -2)', 4326)),
        (2, '[]', 'b5d1d3c2-9f4e-4e0a-8c1a-000000000000', '2001:db8::ff00:42:8329', '0.0.0.0',
         ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), ST_GeomFromText('POINT(0 0)')),
        (3, '"text"', '00000000-0000-0000-0000-000000000000', '::ffff:192.0.2.1', '255.255.255.255', NULL,
         NULL),
        (4, NULL, NULL, '::', NULL, NULL, NULL)""",
}

# A MINIMAL after image holds only the changed columns, a MINIMAL before image only the key.
CHANGES = {
    "t_int": "UPDATE t_int SET biu = 18446744073709551614, iu = 4000000000 WHERE id = 1; "
             "DELETE FROM t_int WHERE id = 3",
    "t_num": "UPDATE t_num SET b64 = b'1', d65 = '-0.5' WHERE id = 2",
    "t_time": "UPDATE t_time SET dt6 = '2025-01-01 00:00:00.5', ts0 = '2030-01-01 00:00:00' WHERE id = 1",
    "t_str": "UPDATE t_str SET l1 = 'ÀÉÎ', cy = 'Ж' WHERE id = 2",
    "t_enum": "UPDATE t_enum SET tier = 'gold', s64 = 'm64' WHERE id = 2",
    "t_misc": "UPDATE t_misc SET ip6 = '::1.2.3.4', u = 'ffffffff-ffff-ffff-ffff-ffffffffffff' WHERE id = 4",
}


def workload(database: str, row_image: str) -> str:
    """The SQL of one run: its tables, rows and changes under `binlog_row_image`."""
    parts = [f"SET SESSION binlog_row_image = {row_image}; SET SESSION time_zone = '+00:00';",
             "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION';",
             f"CREATE DATABASE {database}; USE {database};"]
    for table, columns in TABLES.items():
        parts.append(f"CREATE TABLE {table} {columns};")
        parts.append(f"INSERT INTO {table} VALUES {INSERTS[table]};")
    parts.extend(f"{sql};" for sql in CHANGES.values())
    return "\n".join(parts)


def _server_expr(column: Column) -> str:
    name = f"`{column.name}`"
    family = column.family
    if family in ("string", "enum", "set", "binary", "geometry"):
        return f"HEX({name})"
    if family == "json":
        return f"HEX(CONVERT({name} USING utf8mb4))"
    if family == "timestamp":
        return f"UNIX_TIMESTAMP({name})"
    if family in ("bit", "year"):
        return f"CAST({name} AS UNSIGNED)"
    if family == "float":
        return f"CAST({name} AS DOUBLE)"  # the single-precision value, exactly
    return f"CAST({name} AS CHAR)"


def server_cells(connection, database: str, table: str, columns: tuple[Column, ...]) -> dict[int, tuple]:
    """id -> the server's cells of each row (None for NULL)."""
    exprs = ", ".join(_server_expr(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute("SET time_zone = '+00:00'")
        cursor.execute(f"SELECT {exprs} FROM `{database}`.`{table}`")
        rows = cursor.fetchall()
    return {int(row[0]): tuple(None if v is None else (v.decode() if isinstance(v, bytes) else str(v))
                               for v in row) for row in rows}


def _zero(text: str) -> bool:
    head = text[:10].split("-")
    return len(head) == 3 and any(part.strip("0") == "" for part in head)


def expected_cell(column: Column, server: str | None) -> str | None:
    """The server's cell as Delta must hold it: zero and partial dates read as NULL
    (zero_dates: to_null, the default), a TIMESTAMP of 0 is the zero timestamp."""
    if server is None:
        return None
    if column.family in ("date", "datetime") and _zero(server):
        return None
    if column.family == "timestamp" and Decimal(server) == 0:
        return None
    return server


def delta_cell(column: Column, value) -> str | None:
    """A Delta value rendered as server_cells renders the server's."""
    if value is None:
        return None
    family = column.family
    if family in ("string", "enum", "set"):
        return encode_text(value, column.charset).hex().upper()
    if family == "json":
        return value.encode("utf-8").hex().upper()
    if family in ("binary", "geometry"):
        return bytes(value).hex().upper()
    if family == "timestamp":
        instant = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        micros = (instant - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
        text = f"{micros // 1_000_000}.{micros % 1_000_000:06d}"
        return text[:len(text) - 6 + column.fsp].rstrip(".")
    if family == "datetime":
        text = value.strftime("%Y-%m-%d %H:%M:%S") + f".{value.microsecond:06d}"
        return text[:len(text) - 6 + column.fsp].rstrip(".")
    if family == "date":
        return value.isoformat()
    if family in ("float", "double"):
        return _float_text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _float_text(value: float) -> str:
    if value == 0:
        return "0"
    return repr(value) if math.isfinite(value) else str(value)


def same_cell(column: Column, ours: str | None, server: str | None) -> bool:
    if ours is None or server is None:
        return ours is server
    if column.family in ("float", "double"):  # the server prints shortest-roundtrip text
        ours_value, server_value = float(ours), float(server)
        if column.family == "float":
            server_value = struct.unpack("<f", struct.pack("<f", server_value))[0]
        return ours_value == server_value
    if column.family == "int":  # ZEROFILL pads the text only
        return int(ours) == int(server)
    if column.family == "decimal":  # a DECIMAL(p,s) column fixes the scale; Spark's Decimal may
        return Decimal(ours) == Decimal(server)  # carry another exponent ('-1.00E-19')
    return ours == server
