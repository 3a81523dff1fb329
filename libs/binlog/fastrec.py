"""Fast constructors for the immutable records built once per event or per row (Header, Event,
RowChange, Rows): a frozen dataclass' generated __init__ goes through object.__setattr__ once
per field (about 1.2 us for Header); these allocate the object and set its slots through the
slots' own descriptors in C (_frames.c `constructor`) and give the very same objects. Only for
slotted frozen dataclasses without __post_init__ or validation; every field must be passed
(positional, in field order), so a field added to a record makes the callers fail loudly
instead of leaving a slot unset.
"""
from __future__ import annotations

import dataclasses

from libs.binlog._frames import constructor


def fast_constructor(cls):
    fields = [f.name for f in dataclasses.fields(cls)]
    if hasattr(cls, "__post_init__") or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast constructor needs a slotted dataclass without "
                        f"__post_init__")
    # the slot (member) descriptors of exactly these fields, as object.__setattr__ would find them
    return constructor(cls, tuple(cls.__dict__[name] for name in fields))
