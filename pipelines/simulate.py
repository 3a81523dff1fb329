"""cdc-simulate: a master simulator that writes real binlog bytes (issue #6, simulator half).

File mode:   cdc-simulate --out FILE.bin --expected DIR [--flavour mariadb|mysql]
                 [--row-image full|noblob|minimal] [--transactions N] [--seed S] [--ddl-rate R] [--markers]
                 [--no-rows-query] [--ignorable-rate R] [--capability N]
                 [--binlog-format ROW|MIXED|STATEMENT] [--no-checksum] [--engine TABLE=ENGINE]
Kafka mode:  cdc-simulate --bootstrap H:P --topic T --source S (--rate TPS [--duration SECONDS]
                 | --transactions N) [same options] [--expected DIR]
                 [--kafka-*: cdc-ship's Kafka security options, README "Security"]

The expected-tables directory layout is documented in libs/simulator/expected.py.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

from libs.settings import kafka_security
from libs.simulator.expected import write_expected
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.sinks import FileSink, KafkaSink, Substitution


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cdc-simulate", description=__doc__.split("\n")[0])
    out = p.add_argument_group("output")
    out.add_argument("--out", help="binlog file to write")
    out.add_argument("--expected", help="directory for the expected final table contents")
    out.add_argument("--bootstrap", help="Kafka bootstrap servers (Kafka mode)")
    out.add_argument("--topic")
    out.add_argument("--source", help="source id: record key and 'source' header")
    out.add_argument("--rate", type=float, help="transactions per second, until --duration or stopped")
    out.add_argument("--duration", type=float, help="seconds to run at --rate (default: until stopped)")
    out.add_argument("--broker-timeout", type=float, default=30.0,
                     help="seconds to wait for the broker (topic check/creation)")
    w = p.add_argument_group("workload and logging")
    w.add_argument("--flavour", default="mariadb", choices=("mariadb", "mysql"))
    w.add_argument("--row-image", default="full", choices=("full", "noblob", "minimal"))
    w.add_argument("--binlog-format", default="ROW", type=str.upper,
                   choices=("ROW", "MIXED", "STATEMENT"))
    w.add_argument("--transactions", type=int, default=100)
    w.add_argument("--seed", type=int, default=1)
    w.add_argument("--ddl-rate", type=float, default=0.03,
                   help="share of units of work that are DDL (0: no DDL after the CREATE TABLEs)")
    w.add_argument("--markers", action="store_true", help="WL#4162 boundary markers")
    w.add_argument("--no-rows-query", action="store_true",
                   help="no Rows_query / Annotate_rows events (WL#4033)")
    w.add_argument("--ignorable-rate", type=float, default=0.0,
                   help="probability of an ignorable unknown event (0x7A) per slot")
    w.add_argument("--capability", type=int,
                   help="MariaDB consumer @mariadb_slave_capability: substitute dummy events")
    w.add_argument("--no-checksum", action="store_true", help="binlog_checksum=NONE")
    w.add_argument("--server-id", type=int, default=1)
    w.add_argument("--file-name", default="sim-bin.000001",
                   help="binlog file name (Rotate/Binlog_checkpoint, Kafka header)")
    w.add_argument("--engine", action="append", default=[], metavar="TABLE=ENGINE",
                   help="storage engine of a table (WL#3303 capability table)")
    kafka_security.add_arguments(p)
    return p


def _options(a) -> SimulationOptions:
    engines = {}
    for spec in a.engine:
        table, sep, engine = spec.partition("=")
        if not sep:
            raise ValueError(f"--engine expects TABLE=ENGINE, got {spec!r}")
        engines[table] = engine
    return SimulationOptions(
        flavour=a.flavour, row_image=a.row_image, binlog_format=a.binlog_format,
        rows_query=not a.no_rows_query, markers=a.markers, checksum=not a.no_checksum,
        ignorable_rate=a.ignorable_rate, capability=a.capability, transactions=a.transactions,
        ddl_rate=a.ddl_rate, seed=a.seed, server_id=a.server_id, file_name=a.file_name,
        engines=engines).validate()


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    kafka = a.bootstrap is not None
    if kafka == (a.out is not None):
        p.error("give either --out FILE (file mode) or --bootstrap H:P --topic T --source S")
    if kafka and not (a.topic and a.source):
        p.error("Kafka mode needs --topic and --source")
    if not kafka and not a.expected:
        p.error("file mode needs --expected DIR")
    if a.rate is not None and not kafka:
        p.error("--rate is for Kafka mode")
    try:
        opts = _options(a)
        # Kafka mode's security; the secrets from their files or the environment, read here only
        auth = kafka_security.from_arguments(a).resolve(os.environ)
    except kafka_security.KafkaSecurityError as exc:
        print(f"cdc-simulate: {kafka_security.option_name(exc.setting)}: {exc.reason}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"cdc-simulate: {exc}", file=sys.stderr)
        return 2
    substitution = Substitution(opts.capability, opts.checksum) if opts.capability is not None else None
    stop = {"flag": False}

    def _stop(*_):
        stop["flag"] = True

    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if kafka:
            sink = KafkaSink(a.bootstrap, a.topic, a.source, opts.file_name, opts.server_id,
                             substitution, timeout=a.broker_timeout, auth=auth)
            result = simulate(opts, sink, rate=a.rate, duration=a.duration,
                              should_stop=lambda: stop["flag"])
            sink.flush()
            where = f"topic {a.topic} ({sink.sent} records)"
        else:
            sink = FileSink(substitution)
            result = simulate(opts, sink)
            sink.write(a.out)
            where = f"{a.out} ({len(sink.frames)} events, {len(sink.bytes())} bytes)"
    except Exception as exc:  # broker down, unwritable path: a message, not a traceback
        print(f"cdc-simulate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:  # called in-process (tests, benches): the caller's handlers back
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    master = result.master
    if a.expected:
        write_expected(a.expected, master.model, opts.as_dict(), master.statements)
    print(f"cdc-simulate: {master.groups_written} groups to {where}"
          + (f"; expected tables in {a.expected}" if a.expected else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
