"""Simulated binlog streams of every shape the boundary parser and the assembler must take alike
(both flavours, markers, ignorable events, dummies, statement and mixed format, no checksum):
shared by the equivalence tests of their fast paths."""
from __future__ import annotations

from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.sinks import FileSink, Substitution

STREAM_SHAPES = [
    dict(flavour="mariadb"), dict(flavour="mysql"),
    dict(flavour="mariadb", markers=True, ignorable_rate=0.2),
    dict(flavour="mysql", markers=True, ignorable_rate=0.2, rows_query=False),
    dict(flavour="mariadb", capability=0, ignorable_rate=0.2),  # dummies for what the consumer cannot take
    dict(flavour="mysql", binlog_format="STATEMENT", ddl_rate=0.2),
    dict(flavour="mariadb", binlog_format="MIXED", ddl_rate=0.2, checksum=False),
]


def simulated_sink(**options) -> FileSink:
    """The binlog a simulation with `options` (SimulationOptions fields) writes."""
    opts = SimulationOptions(**options)
    sink = FileSink(Substitution(opts.capability, opts.checksum) if opts.capability is not None else None)
    simulate(opts, sink)
    return sink
