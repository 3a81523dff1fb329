"""Fast constructors for the immutable records built once per event or per row (Header, Event,
RowChange, Rows): a frozen dataclass' generated __init__ goes through object.__setattr__ once
per field (about 1.2 us for Header); these set the slots directly (about 0.5 us) and give the
very same objects. Only for slotted frozen dataclasses without __post_init__ or validation; every
field must be passed (positional, in field order), so a field added to a record makes the
callers fail loudly instead of leaving a slot unset.
"""
from __future__ import annotations

import dataclasses


def fast_constructor(cls):
    fields = [f.name for f in dataclasses.fields(cls)]
    if hasattr(cls, "__post_init__") or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast constructor needs a slotted dataclass without "
                        f"__post_init__")
    env = {"new": object.__new__, "cls": cls}
    lines = [f"def make({', '.join(fields)}):", "    o = new(cls)"]
    for i, name in enumerate(fields):
        env[f"s{i}"] = cls.__dict__[name].__set__
        lines.append(f"    s{i}(o, {name})")
    lines.append("    return o")
    exec("\n".join(lines), env)  # noqa: S102
    make = env["make"]
    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    return make
