"""The replication user and password, kept off the command line.

A password given as an argument is readable by every user of the machine (`ps`, /proc/PID/
cmdline) and stays in shell history, so cdc-ship takes it from, in this order:

  1. --password-file FILE: the whole file is the password (one trailing newline dropped);
  2. --defaults-extra-file FILE: a MySQL option file, `[client]` group, `password=` and
     `user=` (what `mysql --defaults-extra-file` reads);
  3. the environment variable CDC_SOURCE_PASSWORD (read by the entry point, passed in here:
     libraries do not read the environment);
  4. none: an empty password.
Giving a password both as a file and in an option file is refused (which one was meant?).

The password never appears in a repr, a log line or an error message: errors about these files
name the file and a line number, never a line's text.
"""
from __future__ import annotations

import configparser
import stat
from dataclasses import dataclass, field
from pathlib import Path

from libs.source.errors import CredentialError

ENV_PASSWORD = "CDC_SOURCE_PASSWORD"
OPTION_GROUP = "client"
# mysys/my_default.c search_default_file_with_buffers: escapes inside option values
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'", "\\": "\\"}


@dataclass(frozen=True)
class Credentials:
    user: str | None
    password: str = field(default="", repr=False)
    password_from: str = "none"  # where it came from, for messages: never the value itself


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise CredentialError(f"cannot read the {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CredentialError(f"the {what} {path} is not UTF-8 text") from None


def readable_by_others(path: Path) -> bool:
    """True when group or other users may read `path` (worth a warning, like ssh's)."""
    try:
        return bool(path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))
    except OSError:
        return False


def read_password_file(path: Path) -> str:
    text = _read_text(path, "password file")
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text:
        raise CredentialError(f"the password file {path} is empty")
    return text


def _option_value(raw: str) -> str:
    """An option value as MySQL reads it: a `#` outside quotes starts a comment, surrounding
    quotes are dropped, backslash escapes are resolved (mysys/my_default.c)."""
    quote, escape, end = "", False, len(raw)
    for i, ch in enumerate(raw):
        if ch in "'\"" and not escape:
            quote = "" if quote == ch else (quote or ch)
        if not quote and ch == "#":
            end = i
            break
        escape = bool(quote) and ch == "\\" and not escape
    value = raw[:end].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def read_option_file(path: Path) -> dict[str, str]:
    """`user` and `password` of the [client] group of a MySQL option file (those present)."""
    parser = configparser.ConfigParser(interpolation=None, allow_no_value=True, strict=False,
                                       comment_prefixes=("#", ";"), inline_comment_prefixes=None,
                                       delimiters=("=",))
    # MySQL ignores leading whitespace (configparser would read a continuation line)
    text = "\n".join(line.strip() for line in _read_text(path, "option file").splitlines())
    try:
        parser.read_string(text, source=str(path))
    except configparser.MissingSectionHeaderError as exc:
        raise CredentialError(f"{path} line {exc.lineno}: an option before any [group] "
                              f"header") from None
    except configparser.ParsingError as exc:
        lines = ", ".join(str(n) for n, _ in exc.errors)  # never the line text: it may be a password
        raise CredentialError(f"{path}: cannot parse line(s) {lines}") from None
    except configparser.Error as exc:
        raise CredentialError(f"{path}: not a MySQL option file ({type(exc).__name__})") from None
    if not parser.has_section(OPTION_GROUP):
        return {}
    group = parser[OPTION_GROUP]
    return {key: _option_value(group[key] or "") for key in ("user", "password") if key in group}


def resolve(*, user: str | None, password_file: Path | None, option_file: Path | None,
            env_password: str | None) -> Credentials:
    """The credentials by the precedence of the module docstring."""
    options = read_option_file(option_file) if option_file is not None else {}
    if password_file is not None and "password" in options:
        raise CredentialError(f"a password in both --password-file {password_file} and "
                              f"--defaults-extra-file {option_file}: give it once")
    user = user or options.get("user") or None
    if password_file is not None:
        return Credentials(user, read_password_file(password_file), f"file {password_file}")
    if "password" in options:
        return Credentials(user, options["password"], f"option file {option_file}")
    if env_password:
        return Credentials(user, env_password, f"environment {ENV_PASSWORD}")
    return Credentials(user)
