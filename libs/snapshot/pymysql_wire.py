"""A SELECT's row packets, straight off a PyMySQL connection (the only module that touches
PyMySQL's private attributes; tests/unit/snapshot/test_pymysql_wire.py fails when PyMySQL changes
them, setup.cfg pins PyMySQL).

PyMySQL sends the query and reads the column count and definitions with its own reader
(`Connection.query(unbuffered=True)`), then the row section is read in large blocks for
libs/snapshot/row_stream.py to parse: first what PyMySQL's buffered socket file (`_rfile`, 8 KB)
already holds, then straight from the socket (`recv_into`, no copy through that buffer: its
`readinto1` would even wait for the socket while it still held bytes to give, CPython's
_bufferedreader_readinto_generic, when asked for more than its size),
and the connection is handed back as PyMySQL would leave it after the last row: the next sequence
id, no unbuffered result pending, the EOF packet's server status. So the following statements of
the snapshot transaction run on the same connection.

PyMySQL 1.1 does not ask for CLIENT_DEPRECATE_EOF, so the row section ends with an EOF packet
(checked here: with it, the end would be an OK packet the parser does not know).
"""
from __future__ import annotations

import pymysql
from pymysql import err
from pymysql.constants import CLIENT, CR
from pymysql.converters import conversions
from pymysql.protocol import EOFPacketWrapper, MysqlPacket

RAW_BYTES = dict(use_unicode=False, conv={k: v for k, v in conversions.items() if not isinstance(k, int)})
"""pymysql.connect arguments under which every value of a query result is the server's bytes:
no text decoding, no int / datetime / Decimal decoders (int keys of `conv` are the result
decoders; the others, kept, escape the %s parameters)."""


class RowPackets:
    """The row section of `statement`'s result set on `conn`: the sequence id its first packet
    carries, blocks of its bytes, then `finish` with the terminator (or `abandon`)."""

    def __init__(self, conn: pymysql.Connection, statement: str):
        if conn.client_flag & CLIENT.DEPRECATE_EOF:
            raise err.NotSupportedError("the snapshot reader expects EOF packets (no CLIENT_DEPRECATE_EOF)")
        self.conn = conn
        conn.query(statement, unbuffered=True)
        self.result = conn._result
        self.field_count = self.result.field_count  # 0: the statement returned no result set
        if not self.result.unbuffered_active:
            raise err.ProgrammingError(f"not a SELECT: {statement}")
        self.seq: int = conn._next_seq_id
        self._buffered = True  # _rfile may hold bytes of the rows

    def readinto1(self, view: memoryview) -> int:
        """Bytes of the result into `view` (at least one: waits for the server), what one read of
        the socket gives; OperationalError CR_SERVER_LOST like PyMySQL's own reader."""
        conn = self.conn
        conn._sock.settimeout(conn._read_timeout)
        try:
            if self._buffered:  # read1: the buffered bytes (all: len(view) > 8 KB), or one read
                data = conn._rfile.read1(len(view))
                view[:len(data)] = data
                n, self._buffered = len(data), len(data) == len(view)
            else:
                n = conn._sock.recv_into(view)
        except OSError as exc:
            conn._force_close()
            raise err.OperationalError(CR.CR_SERVER_LOST,
                                       f"Lost connection to MySQL server during query ({exc})") from None
        if not n:
            conn._force_close()
            raise err.OperationalError(CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
        return n

    def finish(self, seq: int, terminator: bytes) -> None:
        """The terminator packet's payload was read and `seq` is the next sequence id: EOF ends
        the result as PyMySQL's unbuffered cursor would; ERR raises the server's error."""
        conn, result = self.conn, self.result
        conn._next_seq_id = seq
        result.unbuffered_active = False
        result.connection = None
        if terminator[:1] == b"\xff":
            err.raise_mysql_exception(terminator)
        eof = EOFPacketWrapper(MysqlPacket(terminator, conn.encoding))
        result.warning_count, result.has_next = eof.warning_count, eof.has_next
        conn.server_status = eof.server_status
        if eof.has_next:  # one SELECT is one result set; nothing else is read after it
            self.abandon()
            raise err.InternalError("the snapshot SELECT announced a second result set")

    def abandon(self) -> None:
        """The rows will not be read to their end: the stream is out of step with PyMySQL's
        reader, so the connection is closed (any later statement on it fails clearly)."""
        self.result.unbuffered_active = False
        self.conn._force_close()
