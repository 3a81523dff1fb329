"""cdc-ship: ship binlog events into Kafka, one record per event (issue #6, DESIGN.md "Kafka record").

  Usage: USAGE below (--help prints it; README "Commands" has the same line). The source server's
  options and the user's privileges: README "Preparing the source"; a refusal for want of one is
  one line naming it (libs/source/privileges.py).

--snapshot first publishes a consistent snapshot of the included tables through the topic
(schemas/snapshot_record.avsc: begin, per table: table, rows..., table_end; end), then follows
the binlog from exactly the snapshot's position; a run killed mid-way is continued on restart by
a new run of the tables it had not finished (libs/snapshot/protocol.py, libs/snapshot/source.py).
MariaDB takes no lock for it; MySQL holds a global read lock for a moment to read the position.

The replication password comes from --password-file, the [client] group of a MySQL option
file (--defaults-extra-file, which may also give the user), or the environment variable
CDC_SOURCE_PASSWORD; never from the command line, where every user of the machine can read it
(libs/source/credentials.py).

Kafka security (README "Security"): the --kafka-* options are the job's `kafka_security` settings
(libs/settings/kafka_security.py), taken by every Kafka client of cdc-ship (its producer, its
resume reader); the SASL password and the key's passphrase come from files only their owner
reads (--kafka-sasl-password-file, --kafka-key-password-file) or the environment variables
CDC_KAFKA_SASL_PASSWORD and CDC_KAFKA_KEY_PASSWORD, never from the command line.

TLS to the source (issue #56 item 2; README "Security"): --source-tls puts every connection to
the --server on TLS (the binlog dump's and the snapshot's), the server's certificate verified,
chain and host name (--source-ca, --source-cert/--source-key, --source-tls-no-verify-identity:
libs/source/source_tls.py). A bad file is one line naming the option (exit 2); a certificate that
does not verify or a server without TLS one line naming host:port (exit 1), not retried.

Topic secret (issue #56 item 3; README "Who may write the topic"): with --topic-secret-file (or
CDC_TOPIC_SECRET) every record carries a cdc_tag the job verifies, and the resume read walks back
past records whose tag does not verify (one line each). Without it any record naming the source is
trusted; a file:pos the server does not have is refused in one line either way.

Resumes after the source's last record in the topic, by file:pos on the server it came from
(every record names its server: server_identity header). Pointed at another server (a promoted
replica after a failover), it refuses, naming both, unless --follow-gtid: then it continues
after the GTID state the topic holds whole (MariaDB; the new server needs log_slave_updates and
GTID replication). A binlog purged before it was shipped stops it with one line naming the
position and the way on: --resnapshot (libs/shipper/purge.py). SIGTERM/SIGINT: flush and exit 0.
Exit codes: 0 done/stopped, 1 shipping error (one line on stderr), 2 bad arguments.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from libs.settings import kafka_security
from libs.settings.kafka_security import KafkaAuth, KafkaSecurityError
from libs.settings.topic_secret import ENV_PREVIOUS_SECRET, ENV_SECRET, TopicSecretError, read_topic_secrets
from libs.contracts.topic_tag import TopicKeys
from libs.source import credentials, source_tls
from libs.source.errors import CredentialError, ShipError
from libs.source.source_tls import SourceTlsError
from libs.source.replica_source import ServerOptions
from libs.shipper.kafka_sink import MAX_EVENT_BYTES
from libs.shipper.shipper import ShipConfig, ship_files, ship_server
from libs.snapshot import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS
from libs.snapshot.protocol import INITIAL, RESNAPSHOT
from libs.snapshot.table_filter import TableFilter


USAGE = ("cdc-ship --from-file FILE...|DIR [--follow] | --server H:P [--user U] [--password-file F | "
         "--defaults-extra-file F] [--source-tls [--source-ca F] [--source-cert F --source-key F] "
         "[--source-tls-no-verify-identity]] [--server-id N] [--capability N] "
         "[--start-file F [--start-pos P] | --gtid STATE] "
         "[--follow-gtid] [--snapshot | --resnapshot] [--include REGEX]... [--exclude REGEX]... "
         "[--snapshot-chunk-rows N] --bootstrap H:P --topic T --source S "
         "[--topic-secret-file F [--topic-previous-secret-file F]] [--heartbeat S] [--non-block] "
         "[--progress S] [--max-event-bytes N] [--metrics-port P] [--kafka-security-protocol P] "
         "[--kafka-sasl-mechanism M --kafka-sasl-username U] [--kafka-sasl-password-file F] "
         "[--kafka-oauth-token-endpoint URL] [--kafka-oauth-scope S] [--kafka-ca-file F] "
         "[--kafka-cert-file F --kafka-key-file F] [--kafka-key-password-file F] "
         "[--kafka-verify-hostname | --no-kafka-verify-hostname]")  # README "Commands" has the same


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cdc-ship", usage=USAGE, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-file", nargs="+", type=Path, metavar="FILE",
                     help="binlog files in order, or one binlog directory (its .index file)")
    src.add_argument("--server", type=_host_port, metavar="HOST:PORT",
                     help="connect to this MySQL/MariaDB server as a replica")
    ap.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers HOST:PORT")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--source", required=True, help="source id: record key and `source` header")
    ap.add_argument("--follow", action="store_true",
                    help="files: keep following the newest file as it grows, and the files the "
                         "directory's index file lists after it (a partial last event is waited "
                         "for; without --follow every file must end on an event boundary)")
    ap.add_argument("--user", help="replication user (--server; or `user=` of the option file)")
    ap.add_argument("--password-file", type=Path, metavar="FILE",
                    help="file holding the replication password (one trailing newline ignored)")
    ap.add_argument("--defaults-extra-file", type=Path, metavar="FILE",
                    help="MySQL option file: `user=` and `password=` of its [client] group")
    # Refused, not taken: a password argument is visible in the process list and shell
    # history. Declared so that argparse does not echo the value back as "unrecognized".
    ap.add_argument("--password", nargs="?", const="", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--server-id", type=int, default=4242,
                    help="this replica's server_id, unique among the master's replicas")
    ap.add_argument("--capability", type=int, default=4, choices=range(0, 5),
                    help="@mariadb_slave_capability (4 = ignorable events understood; lower "
                         "values make a MariaDB master send dummy events, seed 003)")
    ap.add_argument("--start-file", help="binlog file to start from (default: the oldest)")
    ap.add_argument("--start-pos", type=int, default=4)
    ap.add_argument("--gtid", help="start at a GTID state: MariaDB 'd-s-n,...' or a MySQL GTID set")
    ap.add_argument("--follow-gtid", action="store_true",
                    help="when the server is not the one the topic's last record came from (a "
                         "promoted replica), continue after the topic's GTID state instead of "
                         "refusing (MariaDB; the server must have log_slave_updates=ON)")
    ap.add_argument("--heartbeat", type=float, default=1.0,
                    help="heartbeat period in seconds: the server's (--server), or the silence after "
                         "which a --follow of files publishes one (a heartbeat record in the topic); "
                         "0: none")
    ap.add_argument("--non-block", action="store_true",
                    help="server: stop at the end of the binlog instead of waiting")
    ap.add_argument("--progress", type=float, default=5.0, help="seconds between progress lines")
    ap.add_argument("--max-event-bytes", type=_positive_bytes, default=MAX_EVENT_BYTES, metavar="N",
                    help="the largest record sent (a binlog event, a snapshot chunk); the broker's "
                         "message.max.bytes must take it (default %(default)s; --from-file frames "
                         "over 64 MB stay refused as damage)")
    ap.add_argument("--metrics-port", type=_port, metavar="PORT",
                    help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics "
                         "(libs/runtime/metrics.py)")
    _snapshot_arguments(ap)
    _topic_secret_arguments(ap)
    source_tls.add_arguments(ap)
    kafka_security.add_arguments(ap)
    return ap


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return int(text)


def _positive_bytes(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of rows, got {text!r}")
    return int(text)


def _snapshot_arguments(ap: argparse.ArgumentParser) -> None:
    snap = ap.add_mutually_exclusive_group()
    snap.add_argument("--snapshot", dest="snapshot", action="store_const", const=INITIAL,
                      help="server: publish a consistent snapshot of the included tables first, "
                           "unless the topic already has records of this source (then follow "
                           "the binlog); an unfinished snapshot run is resumed by a new run of "
                           "its remaining tables")
    snap.add_argument("--resnapshot", dest="snapshot", action="store_const", const=RESNAPSHOT,
                      help="server: publish a new snapshot run of the included tables now, on a "
                           "topic that already has records (e.g. after adding a table to "
                           "--include); the binlog continues where the topic left it")
    ap.add_argument("--include", action="append", default=[], metavar="REGEX",
                    help="snapshot only tables whose 'db.table' fully matches REGEX "
                         "(repeatable; default: every table outside the system schemas)")
    ap.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                    help="never snapshot tables whose 'db.table' fully matches REGEX "
                         "(repeatable; wins over --include; also takes a table out of an "
                         "interrupted run's remaining tables, which --include does not narrow)")
    ap.add_argument("--snapshot-chunk-rows", type=_positive, default=DEFAULT_CHUNK_ROWS,
                    metavar="N", help="at most N rows per snapshot rows record (and at most "
                                      f"~{DEFAULT_CHUNK_BYTES // (1024 * 1024)} MB of values; "
                                      f"default {DEFAULT_CHUNK_ROWS})")


def _topic_secret_arguments(ap: argparse.ArgumentParser) -> None:
    group = ap.add_argument_group("Topic secret (README \"Who may write the topic\")")
    group.add_argument("--topic-secret-file", metavar="FILE",
                       help="file holding the topic secret shared with the job (at least 32 bytes, chmod "
                            f"600; else the environment variable {ENV_SECRET}): every record sent carries "
                            "a cdc_tag, and the resume read trusts only records whose tag verifies")
    group.add_argument("--topic-previous-secret-file", metavar="FILE",
                       help="while the secret is rotated: the previous secret, whose tags the resume read "
                            f"still takes (else {ENV_PREVIOUS_SECRET})")
    ap.add_argument("--topic-secret", nargs="?", const="", default=None, help=argparse.SUPPRESS)


def _topic_keys(args: argparse.Namespace) -> TopicKeys | None:
    """The topic secrets (files, else the environment, read here in the entry point); None when
    none is given. A problem raises TopicSecretError naming the option or variable."""
    secrets = read_topic_secrets(args.topic_secret_file, args.topic_previous_secret_file, os.environ,
                                 ("--topic-secret-file", "--topic-previous-secret-file"))
    return TopicKeys(secrets) if secrets else None


def _check_snapshot_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    used = args.snapshot or args.include or args.exclude or (
        args.snapshot_chunk_rows != DEFAULT_CHUNK_ROWS)
    if used and not args.server:
        ap.error("--snapshot, --resnapshot, --include, --exclude and --snapshot-chunk-rows "
                 "need --server")
    if args.snapshot and (args.start_file or args.gtid):
        ap.error("--snapshot/--resnapshot start the binlog at the snapshot's position: "
                 "no --start-file or --gtid")
    if (args.include or args.exclude) and not args.snapshot:
        ap.error("--include/--exclude select the tables of --snapshot or --resnapshot")


def _server_options(args: argparse.Namespace) -> ServerOptions:
    """Connection options; the environment is read here, in the entry point, only."""
    creds = credentials.resolve(user=args.user, password_file=args.password_file,
                                option_file=args.defaults_extra_file,
                                env_password=os.environ.get(credentials.ENV_PASSWORD))
    if not creds.user:
        raise CredentialError("--server needs a user: --user or `user=` in the [client] group "
                              "of --defaults-extra-file")
    for path in (args.password_file, args.defaults_extra_file):
        if path is not None and credentials.readable_by_others(path):
            print(f"cdc-ship: warning: {path} is readable by other users (chmod 600 it)",
                  file=sys.stderr)
    tls = source_tls.from_arguments(args, warn=lambda line: print(f"cdc-ship: warning: {line}",
                                                                  file=sys.stderr))
    return ServerOptions(args.server[0], args.server[1], creds.user, creds.password,
                         server_id=args.server_id, capability=args.capability,
                         heartbeat_s=args.heartbeat, non_block=args.non_block, tls=tls)


def _kafka_auth(args: argparse.Namespace) -> KafkaAuth | None:
    """The Kafka clients' security, secrets read (the environment is read here, in the entry
    point); None after printing the one line of a bad setting or secret."""
    try:
        return kafka_security.from_arguments(args).resolve(os.environ)
    except KafkaSecurityError as exc:
        print(f"cdc-ship: {kafka_security.option_name(exc.setting)}: {exc.reason}", file=sys.stderr)
        return None


def _check_args(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot check alone; each problem ends the command (exit 2, one line)."""
    if args.password is not None:
        ap.error("--password is not accepted (the process list and shell history would show "
                 "it): use --password-file FILE, --defaults-extra-file FILE or the environment "
                 f"variable {credentials.ENV_PASSWORD}")
    if args.topic_secret is not None:
        ap.error("--topic-secret is not accepted (the process list and shell history would show it): use "
                 f"--topic-secret-file FILE or the environment variable {ENV_SECRET}")
    if args.follow_gtid and not args.server:
        ap.error("--follow-gtid needs --server")
    if source_tls.options_given(args) and not args.server:
        ap.error(f"{source_tls.options_given(args)[0]} needs --server")
    if args.gtid and args.start_file:
        ap.error("--gtid and --start-file exclude each other")
    if args.start_pos < 4:
        ap.error("--start-pos must be >= 4")
    if args.heartbeat < 0:
        ap.error("--heartbeat must be >= 0 (0: no heartbeats)")
    _check_snapshot_args(ap, args)


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    _check_args(ap, args)
    try:
        TableFilter.compile(args.include, args.exclude)
    except ValueError as exc:  # one line, exit 2: nothing has connected yet
        print(f"cdc-ship: {exc}", file=sys.stderr)
        return 2
    kafka = _kafka_auth(args)
    if kafka is None:
        return 2
    try:
        keys = _topic_keys(args)
    except TopicSecretError as exc:
        print(f"cdc-ship: {exc}", file=sys.stderr)
        return 2
    stop = {"asked": False}

    def on_signal(signum, _frame):
        stop["asked"] = True

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    cfg = ShipConfig(args.bootstrap, args.topic, args.source, progress_s=args.progress,
                     metrics_port=args.metrics_port, max_event_bytes=args.max_event_bytes, kafka=kafka,
                     topic_keys=keys)
    try:
        if args.from_file:
            stats = ship_files(cfg, args.from_file, follow=args.follow,
                               should_stop=lambda: stop["asked"], heartbeat_s=args.heartbeat or None)
        else:
            opts = _server_options(args)
            stats = ship_server(cfg, opts, start_file=args.start_file, start_pos=args.start_pos,
                                gtid=args.gtid, follow_gtid=args.follow_gtid,
                                should_stop=lambda: stop["asked"],
                                snapshot=args.snapshot, include=tuple(args.include),
                                exclude=tuple(args.exclude),
                                snapshot_chunk_rows=args.snapshot_chunk_rows)
    except (CredentialError, SourceTlsError) as exc:
        print(f"cdc-ship: {exc}", file=sys.stderr)
        return 2
    except ShipError as exc:
        print(f"cdc-ship: {exc}", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    snap = stats.snapshot
    if snap is not None and snap.runs:
        print(f"cdc-ship {args.source}: snapshot of {snap.tables} table(s), {snap.rows} rows "
              f"to {args.topic}", file=sys.stderr)
    print(f"cdc-ship {args.source}: shipped {stats.events} events to {args.topic}"
          + (f", {stats.holes} hole(s) in the server stream" if stats.holes else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
