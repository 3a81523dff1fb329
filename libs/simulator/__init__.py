"""cdc-simulate's library: a seeded master simulator that writes real binlog bytes.

    schema.py      tables, columns (wire type + Table_map metadata), engines, WL#5092 PKE
    images.py      WL#5092 R1: the columns of each row image per binlog_row_image
    model.py       the master's tables in memory (reference model), undo for ROLLBACK
    statements.py  INSERT / UPDATE / DELETE / INSERT..SELECT / DDL and their SQL text
    master.py      the session: WL#3303 decision, row/statement logging, groups, DDL
    flavour.py     MariaDB 10.11 vs MySQL 8.0 events (FDE, GTIDs, BEGIN, Rows_query/Annotate)
    stream.py      framing: positions, log_pos, WL#4162 markers, WL#4033 ignorable events
    sinks.py       binlog file / Kafka topic, MariaDB dummy-event substitution
    workload.py    the seeded workload generator
    expected.py    the expected-tables files
    run.py         options + the fixed-count / paced run loop
"""
from libs.simulator.expected import write_expected
from libs.simulator.master import Master, Outcome, Session
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.sinks import FileSink, KafkaSink, Substitution

__all__ = ["Master", "Outcome", "Session", "SimulationOptions", "simulate", "FileSink",
           "KafkaSink", "Substitution", "write_expected"]
