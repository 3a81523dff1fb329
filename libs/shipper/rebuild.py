"""Rebuild binlog files from a topic (DESIGN.md "Kafka record": a consumer must be able to
rebuild the binlog file from the topic byte for byte).

For one source: binlog records in partition order (snapshot and format records are skipped),
grouped by binlog_file; inside a file every record must start where the previous one ended
(binlog_pos == previous binlog_pos + len(value)), so a gap or a duplicate is an error naming
source, file and position. A file whose first record is at position 4 is written as magic +
values = the original file up to the last shipped event.
After the shipper moved to another server (record epoch > 0, cdc-ship --follow-gtid) the files
are that server's: named EPOCH/NAME here (libs/binlog/file_names.py) and written to OUT/EPOCH/.

    python -m libs.shipper.rebuild --bootstrap HOST:PORT --topic T --source S --out DIR [--kafka-...]

The --kafka-* options are cdc-ship's (libs/settings/kafka_security.py; README "Security").
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from confluent_kafka import Consumer, KafkaError, TopicPartition

from libs.binlog.constants import BINLOG_MAGIC
from libs.binlog.file_names import epoch_file, split_epoch

from libs.shipper.binlog_dir import check_plain_name
from libs.source.errors import ShipError
from libs.shipper.kafka_sink import client_conf, ensure_topic, partition_for
from libs.contracts.topic import KafkaRecord
from libs.settings import kafka_security
from libs.settings.kafka_security import PLAINTEXT_AUTH, KafkaAuth, KafkaSecurityError


@dataclass
class RebuiltFile:
    name: str
    start_pos: int  # position of the first shipped event (4 = from the start of the file)
    chunks: list[bytes] = field(default_factory=list)
    end_pos: int = 0
    events: int = 0

    def content(self) -> bytes:
        """The file's bytes from position 0 (magic included) when shipped from position 4."""
        if self.start_pos != 4:
            raise ShipError(f"file was shipped from position {self.start_pos}, not 4: its start "
                            f"cannot be rebuilt", file=self.name, pos=self.start_pos)
        return BINLOG_MAGIC + b"".join(self.chunks)


def rebuild(records: Iterable[KafkaRecord]) -> dict[str, RebuiltFile]:
    """Files (in shipping order) from one source's records; checks contiguity."""
    files: dict[str, RebuiltFile] = {}
    current: RebuiltFile | None = None
    for rec in records:
        if rec.is_side:  # snapshot rows or a dump's Format_description: not file bytes
            continue
        name = epoch_file(rec.binlog_file, rec.epoch)
        if current is None or name != current.name:
            if name in files:
                raise ShipError("binlog file shipped again after another file", source=rec.source,
                                file=name, pos=rec.binlog_pos)
            current = files[name] = RebuiltFile(name, rec.binlog_pos, end_pos=rec.binlog_pos)
        if rec.binlog_pos != current.end_pos:
            what = "duplicate/overlap" if rec.binlog_pos < current.end_pos else "gap"
            raise ShipError(f"{what}: expected an event at {current.end_pos}", source=rec.source,
                            file=name, pos=rec.binlog_pos)
        current.chunks.append(rec.value)
        current.end_pos = rec.end_pos
        current.events += 1
    return files


def read_records(bootstrap: str, topic: str, source: str, *, timeout: float = 30.0,
                 auth: KafkaAuth = PLAINTEXT_AUTH) -> Iterator[KafkaRecord]:
    """Every record of `source` in `topic`, in order, up to the end seen when called."""
    partition = partition_for(source, ensure_topic(bootstrap, topic, timeout=timeout, auth=auth))
    key = source.encode("utf-8")
    consumer = Consumer({**client_conf(bootstrap, auth), "group.id": f"cdc-rebuild-{source}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.max.bytes": 128 * 1024 * 1024,
                         "max.partition.fetch.bytes": 128 * 1024 * 1024})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        if high <= low:
            return
        consumer.assign([TopicPartition(topic, partition, low)])
        while True:
            msg = consumer.poll(timeout)
            if msg is None:
                raise ShipError(f"timed out reading topic {topic} partition {partition}",
                                source=source)
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return
                raise ShipError(f"reading topic {topic}: {msg.error()}", source=source)
            if msg.key() == key:
                try:
                    yield KafkaRecord.from_kafka(msg.key(), msg.value(), msg.headers())
                except ValueError as exc:
                    raise ShipError(f"bad record at offset {msg.offset()} of topic {topic}: "
                                    f"{exc}", source=source) from exc
            if msg.offset() >= high - 1:
                return
    finally:
        consumer.close()


def rebuild_topic(bootstrap: str, topic: str, source: str,
                  auth: KafkaAuth = PLAINTEXT_AUTH) -> dict[str, RebuiltFile]:
    return rebuild(read_records(bootstrap, topic, source, auth=auth))


def write_files(files: dict[str, RebuiltFile], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for f in files.values():
        # the name comes from a record header (data): one plain file name inside out_dir
        epoch, plain = split_epoch(f.name)
        folder = out_dir / str(epoch) if epoch else out_dir
        folder.mkdir(exist_ok=True)
        path = folder / check_plain_name(plain, what="binlog_file header")
        path.write_bytes(f.content())
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m libs.shipper.rebuild", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--out", required=True, type=Path)
    kafka_security.add_arguments(ap)
    args = ap.parse_args(argv)
    try:  # the secrets from their files or the environment, read here, in the entry point
        auth = kafka_security.from_arguments(args).resolve(os.environ)
    except KafkaSecurityError as exc:
        print(f"rebuild: {kafka_security.option_name(exc.setting)}: {exc.reason}", file=sys.stderr)
        return 2
    try:
        for path in write_files(rebuild_topic(args.bootstrap, args.topic, args.source, auth), args.out):
            print(path)
    except ShipError as exc:
        print(f"rebuild: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
