"""libs/snapshot/pymysql_wire.py on a real PyMySQL Connection whose socket is one end of a
socketpair, the other end playing the server: PyMySQL's private attributes it relies on (this
test fails when a PyMySQL release changes them), and the connection still working afterwards."""
from __future__ import annotations

import socket
import struct
import threading

import pymysql
import pytest
from pymysql.constants import CLIENT

from libs.snapshot import pymysql_wire, row_stream, values
from tests.unit.snapshot.row_packets import EOF_PAYLOAD, err_payload, lenenc, packet, row_section


def column_definition(name: bytes) -> bytes:
    strings = b"".join(lenenc(s) for s in (b"def", b"d", b"t", b"t", name, name))
    return strings + b"\x0c" + struct.pack("<HIBHB", 63, 255, 252, 0, 0) + b"\x00\x00"  # binary BLOB


def result_set(names, rows, end=EOF_PAYLOAD) -> bytes:
    """A server's whole answer to a COM_QUERY (sequence ids from 1)."""
    out = packet(lenenc(bytes([len(names)]))[1:], 1)
    for seq, name in enumerate(names, start=2):
        out += packet(column_definition(name), seq)
    out += packet(EOF_PAYLOAD, len(names) + 2)
    rows_data, _ = row_section(rows, seq=len(names) + 3, end=end)
    return out + rows_data


@pytest.fixture
def wire():
    """(connection, server end of the socket) with PyMySQL's state as after a handshake."""
    client, server = socket.socketpair()
    conn = pymysql.Connection(defer_connect=True, **pymysql_wire.RAW_BYTES)
    conn._sock, conn._rfile, conn._next_seq_id = client, client.makefile("rb"), 0
    yield conn, server
    conn._force_close()
    server.close()


def serve(server, answer: bytes) -> threading.Thread:
    thread = threading.Thread(target=server.sendall, args=(answer,))
    thread.start()
    return thread


def assert_usable(conn, server) -> None:
    """The next statement runs on `conn` with PyMySQL's own reader, in step with the server:
    sequence ids, no pending result."""
    server.recv(1 << 16)  # the previous query
    sending = serve(server, result_set([b"1"], [(b"1",)]))
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((b"1",),)
    sending.join()


def test_pymysql_asks_for_no_deprecate_eof_and_is_the_pinned_release():
    assert pymysql.VERSION[:3] == (1, 1, 2)
    assert not CLIENT.CAPABILITIES & CLIENT.DEPRECATE_EOF


def test_rows_then_the_next_statement_on_the_same_connection(wire):
    conn, server = wire
    columns = [values.SourceColumn(i, name, "blob", "blob", None) for i, name in ((1, "a"), (2, "b"))]
    rows = [(str(i).encode(), None if i % 7 == 0 else b"v" * (i % 300)) for i in range(20_000)]
    sending = serve(server, result_set([b"a", b"b"], rows))  # ~3 MB: many socket reads
    packets = pymysql_wire.RowPackets(conn, "SELECT a, b FROM d.t")
    assert packets.field_count == 2 and packets.seq == 5
    got = [r for b in row_stream.batches(packets, columns, max_rows=5000, max_bytes=1 << 20)
           for r in zip(*(c.to_pylist() for c in b.columns))]
    sending.join()
    assert got == rows
    assert not conn._result.unbuffered_active and conn.server_status == 0x22
    assert_usable(conn, server)


def test_an_err_packet_raises_and_leaves_the_connection_usable(wire):
    conn, server = wire
    columns = [values.SourceColumn(1, "a", "blob", "blob", None)]
    interrupted = err_payload(1317, "Query execution was interrupted")
    sending = serve(server, result_set([b"a"], [(b"1",)], end=interrupted))
    packets = pymysql_wire.RowPackets(conn, "SELECT a FROM d.t")
    with pytest.raises(pymysql.err.OperationalError) as error:
        list(row_stream.batches(packets, columns, max_rows=10, max_bytes=100))
    assert error.value.args == (1317, "Query execution was interrupted")
    sending.join()
    assert_usable(conn, server)


def test_stopping_early_or_a_lost_connection_closes_it(wire):
    conn, server = wire
    columns = [values.SourceColumn(1, "a", "blob", "blob", None)]
    sending = serve(server, result_set([b"a"], [(b"1",), (b"2",)]))
    stream = row_stream.batches(pymysql_wire.RowPackets(conn, "SELECT a FROM d.t"), columns, max_rows=1,
                                max_bytes=100)
    next(stream)
    stream.close()
    sending.join()
    assert conn._sock is None and not conn.open
    conn.close()  # what snapshot_run's `finally` does: no "Already closed"


def test_a_connection_lost_mid_rows_is_pymysqls_lost_connection_error(wire):
    conn, server = wire
    columns = [values.SourceColumn(1, "a", "blob", "blob", None)]
    answer = result_set([b"a"], [(b"1",), (b"2",)])
    server.sendall(answer[:-12])
    server.shutdown(socket.SHUT_WR)
    packets = pymysql_wire.RowPackets(conn, "SELECT a FROM d.t")
    with pytest.raises(pymysql.err.OperationalError) as error:
        list(row_stream.batches(packets, columns, max_rows=10, max_bytes=100))
    assert error.value.args[0] == 2013 and conn._sock is None


def test_raw_bytes_arguments_decode_nothing():
    conn = pymysql.Connection(defer_connect=True, **pymysql_wire.RAW_BYTES)
    assert conn.decoders == {} and not conn.use_unicode
    conn.server_status = 0  # as after a handshake: no NO_BACKSLASH_ESCAPES
    assert conn.escape("it's") == "'it\\'s'"  # parameters are still escaped
