"""The one reader of the YAML files an operator writes: the job configuration (libs/config/job.py)
and the target declarations (libs/targets/config.py).

yaml.safe_load builds an alias (`*a`) as a second reference to its anchor's value, so a file of
a few hundred bytes can describe a value of 10^9 leaves ("billion laughs"): anything that walks
it (a type check, a repr in an error message, str()) runs for minutes into gigabytes. No setting
needs a shared value, so aliases are refused outright, naming the line of the first one. Nesting
is bounded too (PyYAML's composer recurses once per level: a file of `[[[[...` would end in
RecursionError), and an integer Python will not convert to or from text (more than 4300 decimal
digits; YAML reads 0x... integers of any length) is a YAML error with its line, not a bare
ValueError later.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from libs.settings.errors import PRINTABLE_INT_BITS, clipped, one_line, quoted

MAX_DEPTH = 64  # nested collections; a real configuration or declaration is 5 deep
MAX_INT_BITS = PRINTABLE_INT_BITS  # str() of a bigger int raises ValueError
MAX_PROBLEM = 300  # characters of a parser's message (a tag it quotes is as long as the file allows)


class YamlFileError(ValueError):
    """The file is not UTF-8 YAML the loader accepts. One line, starting `invalid YAML:`, with
    the line (and column) of the problem when the parser knows it; callers prefix the file."""


class _Refused(yaml.MarkedYAMLError):
    pass


def _where(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _problem(exc: yaml.YAMLError) -> str:
    """`line L, column C: problem (context at line L', column C')`: PyYAML's own str() quotes the
    input around both marks over several lines."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None or exc.problem is None:
        return one_line(str(exc)).replace('in "<unicode string>", ', "at ")
    text = f"{_where(exc.problem_mark)}: {exc.problem}"
    if exc.context:
        text += f" ({exc.context}" + (f" at {_where(exc.context_mark)})" if exc.context_mark else ")")
    return one_line(text)


def _text(node: yaml.Node) -> str:
    return quoted(node.value) if isinstance(node, yaml.ScalarNode) else node.tag


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader (plain data only) with no aliases and at most MAX_DEPTH nested collections."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(problem=f"alias *{clipped(event.anchor, 40)}: YAML aliases are not accepted "
                                   f"in this file (write the value out)", problem_mark=event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise _Refused(problem=f"nested deeper than {MAX_DEPTH} levels",
                           problem_mark=self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            data = super().construct_object(node, deep)
        except ValueError as exc:  # int("1" * 5000): Python's integer string conversion limit (its
            # advice, after the `;`, is for Python programmers)
            reason = str(exc).split(";")[0]
            raise _Refused(problem=f"cannot read {_text(node)}: {reason}",
                           problem_mark=node.start_mark) from None
        if isinstance(data, int) and data.bit_length() > MAX_INT_BITS:  # 0x... of any length
            raise _Refused(problem=f"integer {_text(node)} has more than {MAX_INT_BITS} bits",
                           problem_mark=node.start_mark)
        return data


def read_yaml_file(path: str | Path) -> Any:
    """The plain data (mappings, lists, scalars) of the YAML file at `path`. OSError when it
    cannot be read (callers word it); YamlFileError when it is not YAML this loader accepts."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"invalid YAML: not UTF-8 text (byte {exc.start})") from None
    try:
        loader = _BoundedLoader(text)  # the reader checks the characters here
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise YamlFileError(f"invalid YAML: {clipped(_problem(exc), MAX_PROBLEM)}") from None
