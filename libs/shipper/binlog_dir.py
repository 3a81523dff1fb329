"""Which binlog files to read: explicit files, or a binlog directory and its index file.

A server's index file (e.g. mdb-bin.index) lists its binlog files, one per line, as
`./mdb-bin.000001` (log-bin relative to the datadir) or as an absolute path (log-bin given as
one). The directory holding the index is where the files are read from: an absolute line is
taken by its file name (so a copied binlog directory still works), a relative line must be a
plain name or `./name`. A name that would leave the directory (`../other/secret-bin.000007`,
`..`, a symlink resolving elsewhere) is refused, never opened: the shipper publishes whatever
it opens, so a crafted index or Rotate could otherwise ship any readable file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from libs.binlog.file_names import binlog_sort_key, is_numbered

from libs.source.errors import ShipError, UnsafePathError


def plain_name_problem(name: str) -> str | None:
    """Why `name` is not a plain file name (None when it is one). A server writes the base name
    of the next file into a Rotate (MariaDB log_event_server.cc Rotate_log_event: the name
    without its directory), so a separator or `..` is never legitimate."""
    if not name:
        return "an empty file name"
    if name in (".", ".."):
        return f"{name!r} is a directory, not a file name"
    if any(c in name for c in "/\\\0"):
        return f"{name!r} is a path, not a plain file name"
    if not name.isprintable():
        return f"{name!r} holds control characters"
    return None


def check_plain_name(name: str, *, what: str, source: str | None = None,
                     file: str | None = None, pos: int | None = None) -> str:
    problem = plain_name_problem(name)
    if problem:
        raise UnsafePathError(f"{what}: {problem}", source=source, file=file, pos=pos)
    return name


def _index_entry(index: Path, number: int, line: str) -> str:
    path = PurePosixPath(line)
    where = f"{index} line {number}"
    if not path.is_absolute() and path.parent != PurePosixPath("."):
        raise UnsafePathError(f"{where} names {line!r}, outside the directory of the index")
    return check_plain_name(path.name, what=where)


def read_index(index: Path) -> list[Path]:
    """Files named by a server's index file, each inside the index's directory."""
    try:
        text = index.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ShipError(f"cannot read the binlog index {index}: {exc}") from None
    return [index.parent / _index_entry(index, n, line.strip())
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def contained(path: Path, root: Path) -> Path:
    """`path` if it resolves to a file directly inside `root` (symlinks followed)."""
    real, real_root = path.resolve(), root.resolve()
    if real.parent != real_root:
        raise UnsafePathError(f"{path} resolves to {real}, outside the binlog directory "
                              f"{real_root}")
    return path


def _single_index(directory: Path) -> Path | None:
    indexes = sorted(directory.glob("*.index"))
    if len(indexes) > 1:
        raise ShipError(f"{directory} holds several .index files: "
                        f"{', '.join(i.name for i in indexes)}; name the files instead")
    return indexes[0] if indexes else None


@dataclass
class Inputs:
    """What to ship: explicit files (in the given order), a directory's index, or both (explicit
    files followed, with --follow, by the files the index lists after them)."""

    files: list[Path]
    index: Path | None = None
    explicit: tuple[Path, ...] = ()  # given by the user: read as named, not from the index
    directory: Path | None = None  # a binlog directory given without an index file
    continues: bool = True  # the index goes on after the files (False: it does not list them)

    @classmethod
    def from_paths(cls, paths: list[Path], *, follow: bool = False) -> "Inputs":
        dirs = [p for p in paths if p.is_dir()]
        if dirs:
            if len(paths) != 1:
                raise ShipError("give either one binlog directory or a list of files, not both")
            index = _single_index(dirs[0])
            if index is not None:
                return cls(read_index(index), index)
            files = sorted((p for p in dirs[0].iterdir() if is_numbered(p.name)),
                           key=lambda p: binlog_sort_key(p.name))
            if not files:
                raise ShipError(f"{dirs[0]}: no .index file and no binlog files")
            return cls(files, directory=dirs[0])
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise ShipError(f"binlog file(s) not found: {', '.join(missing)}")
        index = _single_index(paths[-1].parent) if follow else None
        inputs = cls(list(paths), index, tuple(paths))
        inputs.refresh()
        return inputs

    @property
    def root(self) -> Path | None:
        """The directory every file not named by the user must lie in."""
        return self.index.parent if self.index is not None else self.directory

    def from_index(self, path: Path) -> bool:
        """Named by an index or a directory listing, not by the user: must stay in root."""
        return self.root is not None and path not in self.explicit

    @property
    def can_follow_rotation(self) -> bool:
        """Whether a file after the current last one can ever be learnt: only from an index
        that lists the files (a Rotate's name alone is not trusted)."""
        return self.index is not None and self.continues

    def refresh(self) -> None:
        if self.index is None:
            return
        listed = read_index(self.index)
        if not self.explicit:
            self.files = listed
            return
        names = [p.name for p in listed]
        last = self.explicit[-1].name
        self.continues = last in names
        later = listed[names.index(last) + 1:] if self.continues else []
        self.files = list(self.explicit) + later

    def remaining_bytes(self, name: str | None, pos: int) -> int | None:
        """Lag in bytes: what is left of file `name` after `pos` plus the later files."""
        names = [p.name for p in self.files]
        if name not in names:
            return None
        total = 0
        for i, p in enumerate(self.files[names.index(name):]):
            try:
                size = p.stat().st_size
            except OSError:
                continue
            total += size - pos if i == 0 else size
        return max(total, 0)
