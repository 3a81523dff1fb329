"""Small builders shared by the simulator unit tests."""
from __future__ import annotations

from libs.binlog import iter_events
from libs.simulator.master import Master, Session
from libs.simulator.sinks import FileSink


def new_master(tables, *, flavour="mariadb", binlog_format="ROW", row_image="full",
               rows_query=True, markers=False, checksum=True, ignorable_rate=0.0,
               create_tables=False):
    sink = FileSink()
    master = Master(tables, sink, flavour=flavour, checksum=checksum, markers=markers,
                    ignorable_rate=ignorable_rate,
                    session=Session(binlog_format, row_image, rows_query),
                    create_tables=create_tables)
    return master, sink


def events(sink):
    return list(iter_events(sink.bytes(), file="sim-bin.000001"))


def rows_events(sink):
    return [e for e in events(sink) if e.type_code in (23, 24, 25, 30, 31, 32)]
