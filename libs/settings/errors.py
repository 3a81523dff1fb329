"""ConfigError: the one type of every configuration or declaration problem. Apart from
libs/config/job.py so that libs the configuration itself imports (libs/targets/errors.py) can raise it
without an import cycle."""
from __future__ import annotations

import re
import reprlib

# The longest message a ConfigError keeps: a terminal line or two. Values are quoted through
# quoted() already; this bounds whatever else a message carries (a nested error's text, a list
# of names), so no operator file can make an error message the size of the file.
MAX_MESSAGE = 2000
# Below Python's integer string conversion limit (4300 decimal digits, about 14,280 bits): str()
# or repr() of a bigger int raises ValueError.
PRINTABLE_INT_BITS = 14_000


class ConfigError(ValueError):
    """Any configuration or declaration problem (job settings, target declarations, DDL):
    one type, so an entry point reports every one of them the same way, as one line."""

    def __init__(self, message: str):
        super().__init__(clipped(one_line(message), MAX_MESSAGE))


def clipped(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many were left out."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class _BoundedRepr(reprlib.Repr):
    """reprlib's repr (a few elements per level, a few levels, long strings cut in the middle)
    with integers of any size: repr() of one past 4300 digits raises ValueError (Python's
    integer string conversion limit), and YAML reads 0x... integers of any length."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother, self.maxlong = 2, 60, 60, 40
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = 6
        self.maxdict = 4

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > PRINTABLE_INT_BITS:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_QUOTE = _BoundedRepr()
MAX_QUOTE = 120


def quoted(value: object) -> str:
    """The repr of a value an operator wrote, for an error message: at most MAX_QUOTE characters
    (plus a note of what was cut) whatever the value's size, in time that does not grow with it.
    Every message quoting a configuration or declaration value goes through here."""
    text = _QUOTE.repr(value)
    return text if len(text) <= MAX_QUOTE else f"{text[:MAX_QUOTE]}...(cut)"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def one_line(text: str) -> str:
    """A message for a terminal line: no newlines (YAML and SQL parser errors quote the input
    over several lines, with ANSI underlining)."""
    return " ".join(_ANSI.sub("", str(text)).split())


_PYTHON_ERROR = re.compile(r"^\s*((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Stopped|Exit)): (.+)$")


def cause_line(text: str) -> str:
    """The one line that names the cause in an error's text, for a user without --verbose: the
    innermost Python `SomeError: message` line of a trace Spark wrapped (the last one in the
    text), else the text's first line."""
    lines = str(text).splitlines()
    for line in reversed(lines):
        match = _PYTHON_ERROR.match(line)
        if match:
            return one_line(f"{match[1].rsplit('.', 1)[-1]}: {match[2]}")
    return one_line(next((line for line in lines if line.strip()), ""))
