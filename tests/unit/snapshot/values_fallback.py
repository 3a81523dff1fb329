"""TEST-ONLY stand-in for libs/snapshot/values.py (written on branch s16-values), with its
interface, installed as `libs.snapshot.values` only while the real module is missing
(install()). Deliberately tiny: a handful of type codes, text or bytes. Delete once the values
branch is merged into main."""
from __future__ import annotations

import importlib
import sys
import types
from collections import namedtuple

import pymysql.converters

SourceColumn = namedtuple("SourceColumn", "ordinal name data_type column_type charset")
COLUMNS_QUERY = ("SELECT ORDINAL_POSITION, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, "
                 "CHARACTER_SET_NAME FROM information_schema.COLUMNS "
                 "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION")
SESSION_SETUP = ("SET SESSION time_zone = '+00:00'",)
_TYPE_CODES = {"int": 3, "bigint": 8, "smallint": 2, "tinyint": 1, "double": 5, "decimal": 246,
               "varchar": 15, "char": 254, "text": 252, "blob": 252, "mediumblob": 252,
               "longtext": 252, "datetime": 12, "date": 10, "varbinary": 15}


def _text(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def source_column(row) -> SourceColumn:
    ordinal, name, data_type, column_type, charset = (_text(v) for v in row)
    return SourceColumn(int(ordinal) - 1, name, data_type, column_type, charset)


def select_expression(column) -> str:
    return "`" + column.name.replace("`", "``") + "`"


def column_value(column, raw) -> dict:
    value = {"ordinal": column.ordinal, "name": column.name,
             "type_code": _TYPE_CODES.get(column.data_type, 254), "text": None, "binary": None}
    if raw is not None:
        if column.charset is None and column.data_type in ("blob", "mediumblob", "varbinary"):
            value["binary"] = bytes(raw)
        else:
            value["text"] = bytes(raw).decode("utf-8")
    return value


def row_image(columns, raw_row) -> list[dict]:
    return [column_value(c, v) for c, v in zip(columns, raw_row)]


def connect_kwargs() -> dict:
    encoders = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}
    return {"conv": encoders, "use_unicode": False}


def install() -> None:
    try:
        importlib.import_module("libs.snapshot.values")
    except ModuleNotFoundError:
        module = types.ModuleType("libs.snapshot.values")
        module.__dict__.update({k: v for k, v in globals().items() if not k.startswith("__")})
        sys.modules["libs.snapshot.values"] = module
        import libs.snapshot
        libs.snapshot.values = module
