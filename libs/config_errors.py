"""ConfigError: the one type of every configuration or declaration problem. Apart from
libs/config.py so that libs the configuration itself imports (libs/targets/errors.py) can raise it
without an import cycle."""
from __future__ import annotations

import re


class ConfigError(ValueError):
    """Any configuration or declaration problem (job settings, target declarations, DDL):
    one type, so an entry point reports every one of them the same way, as one line."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


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
