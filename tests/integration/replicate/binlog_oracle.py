"""What a server's own decoder says a binlog file holds, as transactions (the oracle of the
corpus integration tests). Independent of the code under test: it reads only the text that
`mariadb-binlog -vv --base64-output=decode-rows` printed for the file (corpus README) and, to
spot frames a hand-edited test file left with a wrong CRC32, the file's bytes at the printed
positions.

    oracle = read_oracle(binlog_path)         # the text next to the file
    oracle.transactions   [OracleTrx(end, gtid, changes)]   committed, in commit order
    oracle.quarantined    {pos}        frames a replica must not apply (issue #4 "Bad input")
    oracle.covered_until  pos | None   the decoder stopped (rc=1): compare before it only
    oracle.stopped_at     pos | None   the position the decoder could not read

The transaction rules are those of a client replaying the printed SQL (BEGIN / START
TRANSACTION / XA START open, COMMIT / Xid commit, ROLLBACK discards, XA PREPARE holds until
XA COMMIT), plus what issue #4 asks of broken input: events of an unfinished or broken group,
rows/table maps outside any group, and groups holding a frame with a bad checksum are
quarantined, never applied.
"""
from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass, field

_AT = re.compile(r"^# at (\d+)$")
_HEADER = re.compile(r"^#\d{6} +\d+:\d\d:\d\d server id \d+ +end_log_pos (\d+)"
                     r"(?: CRC32 0x([0-9a-f]{8}))? ?\t?(.*)$")
_ROW = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`")
_OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}
_ROWS_HEADER = re.compile(r"^(Write|Update|Delete)(_compressed)?_rows(_compressed)?: ")
_LOAD_HEAD = re.compile(r"LOAD\s+DATA\s+(?:LOCAL\s+)?INFILE\s+'[^']*'\s+(?:(?:IGNORE|REPLACE)\s+)?INTO",
                        re.IGNORECASE)
_XID_LITERAL = re.compile(r"X'([0-9a-fA-F]*)',\s*X'([0-9a-fA-F]*)',\s*(\d+)")


def oracle_path(binlog_path: str) -> str:
    """The corpus names oracles FILE.vv.txt[.gz] (MariaDB) or FILE.mariadb-binlog.vv.txt (MySQL)."""
    for suffix in (".vv.txt", ".vv.txt.gz", ".mariadb-binlog.vv.txt"):
        if os.path.exists(binlog_path + suffix):
            return binlog_path + suffix
    raise FileNotFoundError(f"no mariadb-binlog oracle next to {binlog_path}")


@dataclass
class OracleEvent:
    at: int
    header: str  # the header line's text after end_log_pos [CRC32 ...]
    crc: int | None
    body: list[str] = field(default_factory=list)
    end: int | None = None  # start of the next event (or the file size)
    end_log_pos: int = 0  # the header's: the end offset in a server's own binlog (not a relay log)


@dataclass(frozen=True)
class OracleTrx:
    end: int  # file offset just after the event that committed it
    gtid: str | None  # MariaDB "d-s-n"; MySQL GTIDs are not printed by mariadb-binlog
    changes: tuple  # ((database, table, op, statement) per row) / (None, None, "statement", sql)


@dataclass
class Oracle:
    transactions: list[OracleTrx]
    quarantined: set[int]
    covered_until: int | None  # compare transactions ending and frames starting before it
    stopped_at: int | None  # where the decoder gave up (rc=1), None when it read the whole file


def parse_events(text_lines: list[str], file_size: int) -> tuple[list[OracleEvent], int | None]:
    """Events with their positions: the k-th '# at' line belongs to the k-th header line (an
    Annotate_rows prints two '# at' lines before its own and its Table_map's headers); a header
    with no '# at' of its own continues the previous event (Exec_load reprints Create_file)."""
    events: list[OracleEvent] = []
    pending: list[int] = []
    complete = False
    for line in text_lines:
        if line.startswith("DELIMITER ;"):
            complete = any(rest.startswith("# End of log file") for rest in text_lines[-8:])
            break
        m = _AT.match(line)
        if m:
            pending.append(int(m.group(1)))
            continue
        h = _HEADER.match(line)
        if h and pending:
            events.append(OracleEvent(pending.pop(0), h.group(3), int(h.group(2), 16) if h.group(2) else None,
                                      end_log_pos=int(h.group(1))))
        elif events:
            events[-1].body.append(line)
    for a, b in zip(events, events[1:]):
        a.end = b.at
    if complete:
        if events:
            events[-1].end = file_size
        return events, None
    # The decoder stopped (rc=1): at a '# at' it could not print, or after the last event it
    # printed, which ends at its end_log_pos if that is a file offset past it (else it is left
    # out: its end is unknown).
    if pending:
        stopped = pending[0]
        if events:
            events[-1].end = stopped
    elif events and events[-1].end_log_pos > events[-1].at:
        stopped = events[-1].end = events[-1].end_log_pos
    else:
        stopped = events.pop().at if events else 4
    return events, stopped


def _kind(ev: OracleEvent) -> str:
    h = ev.header or (ev.body[0].lstrip("#") if ev.body else "")
    if h.startswith("Start: binlog"):
        return "format"
    if h.startswith("GTID "):
        return "gtid"
    if h.startswith("Ignorable"):
        note = " ".join(ev.body)
        return "gtid" if "(MySQL Gtid)" in note or "(MySQL Anonymous_Gtid)" in note else "skip"
    if h.startswith(("Query", "Execute_load_query")):
        return "query"
    if h.startswith("Xid = "):
        return "xid"
    if h.startswith("XID = "):
        return "xa_prepare"
    if h.startswith("Annotate_rows:"):
        return "annotate"
    if h.startswith("Table_map:"):
        return "table_map"
    if _ROWS_HEADER.match(h):
        return "rows"
    if h.startswith(("Intvar", "Rand")):
        return "pre"
    if h.startswith("User_var"):
        # a MariaDB dummy User_var (capability-0 replica capture) names '!': a no-op
        return "skip" if any(line.startswith("SET @`!`") for line in ev.body) else "pre"
    if h.startswith(("Begin_load_query", "Append_block")):
        return "load_block"
    if h.startswith("Incident"):
        return "incident"
    return "skip"  # Rotate, Stop, Gtid list, Binlog checkpoint, Exec_load, Previous_gtids


def statement_of(ev: OracleEvent) -> str | None:
    """The SQL a Query event printed: lines that are neither comments nor session settings
    (those end in the delimiter), without the delimiter line."""
    lines = [line for line in ev.body if not line.startswith("#") and not line.endswith("/*!*/;")]
    text = "\n".join(lines).strip()
    if not text:
        return None  # a dummy Query ("# Dummy event replacing ...") or a Create_file comment
    return normalise_statement(text)


def _is_create_file(ev: OracleEvent) -> bool:
    """mariadb-binlog prints a binlog v3 Create_file as a commented-out LOAD DATA Query
    (`# LOAD DATA ...`, `# file_id: N  block_len: M`)."""
    return any(line.startswith("# LOAD DATA") for line in ev.body) and \
        any(line.startswith("# file_id: ") for line in ev.body)


def normalise_statement(sql: str) -> str:
    """mariadb-binlog rebuilds a LOAD DATA head when printing Execute_load_query: its temporary
    file name, LOCAL, and the duplicate handling from the event's fields (log_event.cc
    Execute_load_query_log_event::print_query_header), so the head is compared without them."""
    return _LOAD_HEAD.sub("LOAD DATA INFILE '?' INTO", sql.strip())


def _xid_of(ev: OracleEvent, text: str) -> str | None:
    m = _XID_LITERAL.search(text)
    return f"{m.group(3)}:{m.group(1).lower()}:{m.group(2).lower()}" if m else None


def _control(sql: str) -> str | None:
    s = sql.lstrip().upper()
    for prefix, kind in (("BEGIN", "begin"), ("START TRANSACTION", "begin"), ("XA START", "begin"),
                         ("XA BEGIN", "begin"), ("XA END", "inside"), ("XA PREPARE", "xa_prepare"),
                         ("XA COMMIT", "xa_commit"), ("XA ROLLBACK", "xa_rollback"), ("COMMIT", "commit"),
                         ("SAVEPOINT", "inside"), ("RELEASE SAVEPOINT", "inside")):
        if s.startswith(prefix):
            return kind
    if s.startswith("ROLLBACK"):
        return "inside" if re.match(r"ROLLBACK\s+(WORK\s+)?TO\b", s) else "rollback"
    return None


@dataclass
class _Group:
    events: list[OracleEvent]
    gtid: str | None = None
    explicit: bool = False  # BEGIN / XA START seen: statements are inside until COMMIT
    broken: bool = False  # holds a frame with a bad checksum


def changes_of(events: list[OracleEvent]) -> tuple:
    out, statement = [], None
    for ev in events:
        kind = _kind(ev)
        if kind == "annotate":
            statement = "\n".join(line[4:] for line in ev.body if line.startswith("#Q> ")) or None
        elif kind == "rows":
            for line in ev.body:
                m = _ROW.match(line)
                if m:
                    out.append((m.group(2), m.group(3), _OPS[m.group(1)], statement))
            if "STMT_END_F" in ev.header:
                statement = None
        elif kind == "query":
            sql = statement_of(ev)
            statement = None
            if sql is not None and _control(sql) is None:
                out.append((None, None, "statement", sql))
    return tuple(out)


def interpret(events: list[OracleEvent], bad_crc: set[int]) -> tuple[list[OracleTrx], set[int], int | None]:
    trxs: list[OracleTrx] = []
    quarantined: set[int] = set()
    prepared: dict[str, _Group] = {}
    group: _Group | None = None

    def commit(g: _Group, end: OracleEvent, events_of: _Group | None = None) -> None:
        trxs.append(OracleTrx(end.end, g.gtid, changes_of((events_of or g).events)))

    def drop(g: _Group | None) -> None:
        if g is not None:
            quarantined.update(e.at for e in g.events)

    def end_group(g: _Group | None, end: OracleEvent) -> None:
        """`end` (Xid, COMMIT, an auto-committed statement) ends g: committed unless broken.
        With no group open it ends nothing, so it is quarantined on its own."""
        if g is None:
            quarantined.add(end.at)
            return
        g.events.append(end)
        commit(g, end) if not g.broken else drop(g)

    for ev in events:
        kind = _kind(ev)
        if kind in ("format", "skip"):
            continue
        if ev.at in bad_crc:  # its type and content cannot be trusted: the group is lost
            if group is None:
                quarantined.add(ev.at)
            else:
                group.events.append(ev)
                group.broken = True
            continue
        if kind == "gtid":
            drop(group)  # a group that never ended
            m = re.match(r"GTID (\d+-\d+-\d+)", ev.header)
            explicit = any(line.startswith(("START TRANSACTION", "BEGIN", "XA START")) for line in ev.body)
            group = _Group([ev], m.group(1) if m else None, explicit)
            continue
        if kind == "incident":
            drop(group)
            group = None
            quarantined.add(ev.at)
            continue
        if kind == "pre":
            if group is None:
                group = _Group([ev])
            else:
                group.events.append(ev)
            continue
        if kind in ("annotate", "table_map", "rows", "load_block"):
            if group is None:
                quarantined.add(ev.at)  # row data outside any transaction
            else:
                group.events.append(ev)
            continue
        if kind == "xid":
            end_group(group, ev)
            group = None
            continue
        if kind == "xa_prepare":
            text = " ".join(ev.body)
            if group is None:
                quarantined.add(ev.at)
                continue
            group.events.append(ev)
            if group.broken:
                drop(group)
            elif "XA COMMIT" in text.upper():  # one-phase XA: committed here
                commit(group, ev)
            else:
                prepared[_xid_of(ev, text)] = group
            group = None
            continue
        # a Query
        sql = statement_of(ev)
        if sql is None:
            if _is_create_file(ev):  # LOAD DATA content kept as bytes: never applied, never dropped
                quarantined.add(ev.at)
            continue
        control = _control(sql)
        if control == "begin":
            if group is not None and group.explicit:
                drop(group)
                group = None
            if group is None:
                group = _Group([ev], explicit=True)
            else:
                group.events.append(ev)
                group.explicit = True
        elif control == "inside":
            if group is not None:
                group.events.append(ev)
        elif control == "commit":
            end_group(group, ev)
            group = None
        elif control == "rollback":
            if group is None:
                quarantined.add(ev.at)
            elif group.broken:
                group.events.append(ev)
                drop(group)
            group = None
        elif control == "xa_prepare":
            if group is not None:
                group.events.append(ev)
                prepared[_xid_of(ev, sql)] = group
            group = None
        elif control in ("xa_commit", "xa_rollback"):
            held = prepared.pop(_xid_of(ev, sql), None)
            if control == "xa_commit" and held is None:  # its XA PREPARE was never seen
                drop(group)
                quarantined.add(ev.at)
            elif control == "xa_commit":
                commit(group or _Group([]), ev, events_of=held)
            group = None
        elif group is not None and group.explicit:
            group.events.append(ev)
        elif group is not None:  # the statement a GTID or Intvar/Rand/User_var began: auto-commit
            end_group(group, ev)
            group = None
        else:
            commit(_Group([ev]), ev)
    if group is not None and group.broken:
        drop(group)  # never applied, so in quarantine even without its END
    open_at = group.events[0].at if group is not None and not group.broken and group.events else None
    return trxs, quarantined, open_at


def bad_checksums(events: list[OracleEvent], data: bytes) -> set[int]:
    """Positions of events whose stored CRC32 (printed by the decoder) does not match the bytes."""
    bad = set()
    for ev in events:
        if ev.crc is None or ev.end is None or _kind(ev) == "format":
            continue  # an FDE's CRC is computed with LOG_EVENT_BINLOG_IN_USE_F cleared
        frame = data[ev.at:ev.end]
        if int.from_bytes(frame[-4:], "little") != ev.crc or zlib.crc32(frame[:-4]) != ev.crc:
            bad.add(ev.at)
    return bad


def read_oracle(binlog_path: str) -> Oracle:
    path = oracle_path(binlog_path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        # split on \n only: statements may hold \x0b, \x1c.. (str.splitlines would cut there)
        lines = f.read().decode("utf-8", errors="replace").split("\n")
    data = open(binlog_path, "rb").read()
    events, stopped = parse_events(lines, len(data))
    trxs, quarantined, open_at = interpret(events, bad_checksums(events, data))
    if stopped is not None:  # nothing is known of the group the decoder was in when it stopped
        limit = min(stopped, open_at) if open_at is not None else stopped
        trxs = [t for t in trxs if t.end <= limit]
        quarantined = {q for q in quarantined if q < limit}
        return Oracle(trxs, quarantined, limit, stopped)
    return Oracle(trxs, quarantined, None, None)
