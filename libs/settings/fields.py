"""How a setting is declared (a doc line, its default and bounds: STYLE.md practice 11) and
checked against its declared type, for the job configuration and its sections (libs/config/job.py,
libs/config/sections.py)."""
from __future__ import annotations

import math
import sys
import typing
from dataclasses import Field, field, fields
from typing import Any

from libs.settings.errors import ConfigError, quoted

def setting(text: str, default: Any = None, *, minimum: float | None = None,
         choices: tuple[str, ...] = (), **kw) -> Any:
    """A field declared once: doc line, default and the bounds its type does not say."""
    if "default_factory" not in kw:
        kw["default"] = default
    return field(metadata={"doc": text, "minimum": minimum, "choices": choices}, **kw)


def check_fields(obj: Any, skip: tuple[str, ...] = ()) -> None:
    """Every field of a config dataclass checked against its type and metadata."""
    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        if f.name not in skip:
            _check_field(f, hints[f.name], getattr(obj, f.name))


# Java's long: Spark options and timeouts (idle_source_timeout_s * 1000 ms) are longs.
_LONG_MAX = 2 ** 63 // 1000


def _type_problem(kind: type, value: Any) -> str | None:
    """Why `value` is not a `kind` (str, bool, int, float), or None. bool is checked apart
    from int (True is an int in Python, and YAML reads `yes`/`true` as one); a float field
    takes an integer but no NaN or infinity."""
    if kind is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return None if abs(value) <= _LONG_MAX else f"must be at most {_LONG_MAX}"
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        # an int past float's range is no number either (math.isfinite(10**400) raises OverflowError)
        finite = math.isfinite(value) if isinstance(value, float) else abs(value) <= sys.float_info.max
        return None if finite else "must be a finite number"
    if kind is str:
        if not isinstance(value, str):
            return "must be a string"
        return None if value.strip() else "must not be empty"
    raise TypeError(f"JobConfig field type {kind!r} has no check")  # a programmer error


def _check_field(f: Field, hint: Any, value: Any) -> None:
    """The checks a field's declared type and metadata imply (STYLE.md practice 11)."""
    kinds = [k for k in typing.get_args(hint) if k is not type(None)] or [hint]
    optional = type(None) in typing.get_args(hint)
    if value is None:
        if not optional:
            raise ConfigError(f"{f.name}: required, got null")
        return
    problem = _type_problem(kinds[0], value)
    if problem is None and f.metadata.get("choices") and value not in f.metadata["choices"]:
        problem = f"must be one of {f.metadata['choices']}"
    minimum = f.metadata.get("minimum")
    if problem is None and minimum is not None and value < minimum:
        problem = f"must be >= {minimum}"
    if problem is not None:
        raise ConfigError(f"{f.name}: {problem}, got {quoted(value)}")
