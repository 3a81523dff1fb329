"""Decode stage: Kafka records -> frames with their source, binlog position and record kind
(from the record's Kafka headers). No frame byte is decoded here: the assemble stage decodes the
common header and the bodies it needs (it holds the per-source Format_description), the rows
stage the row images. A frame whose size disagrees with its header still flows on (as data) and
is quarantined there, never dropped (DESIGN.md "Bad input").

A record that is not one of the pipeline's (no key, missing or malformed headers, a key naming
another source than its headers: libs/stages/kafka_input.py) flows on too, with its problems named in
`record_problem`; the assemble stage quarantines it with its topic, partition and offset. So no
header is cast here that was not checked first: under ANSI mode a bad cast would stop the job at
every restart (issue #38).

With a topic secret (the job's topic_secret_file) it also hands on each record's cdc_tag and the
encoding of its key and headers the tag covers (tag_columns, Spark expressions: the secret never
enters a plan); the assemble stage adds the value and checks the HMAC (libs/contracts/topic_tag.py).

Until issue #21 this stage also decoded every frame's common header in a pandas_udf (a Python
pass over every record) into a `header` column no later stage read: the assembler decodes the
header again with the body, so that pass was work done twice and is gone."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from libs.binlog.constants import COMMON_HEADER_LEN
from libs.binlog.header import EVENT_SIZE_FIELD
from libs.stages.kafka_input import DECIMAL_PATTERN, UNATTRIBUTED_PREFIX
from libs.contracts.topic import (
    HEADER_BINLOG_EPOCH, HEADER_BINLOG_FILE, HEADER_BINLOG_POS, HEADER_RECORD_KIND, HEADER_SOURCE, HEADER_TAG,
    TopicKind,
)
from libs.contracts.topic_tag import DOMAIN, NULL_FIELD


def _header(name: str) -> Column:
    """The header's value as text; NULL when the record has no such header (F.get: [0] fails
    under ANSI mode on an empty array; a record without headers has a NULL array)."""
    return F.get(F.filter(F.col("headers"), lambda h: h["key"] == name), 0)["value"].cast("string")


def _decimal(text: Column) -> Column:
    """The text as a long when it is a decimal that fits one; NULL otherwise (never an error)."""
    return F.when(text.rlike(DECIMAL_PATTERN), text.try_cast("long"))


def _key() -> Column:
    """The record's key as text; NULL when it has none (an empty key names no source)."""
    return F.nullif(F.col("key").cast("string"), F.lit(""))


def _binlog_file() -> Column:
    """The record's file as the job names it: `EPOCH/NAME` after the shipper moved to another
    server (binlog_epoch header > 0), so that positions keep one order across servers
    (libs/binlog/file_names.py epoch_file); the plain name otherwise."""
    epoch = F.coalesce(_decimal(_header(HEADER_BINLOG_EPOCH)), F.lit(0))
    name = _header(HEADER_BINLOG_FILE)
    return F.when(epoch == 0, name).otherwise(F.concat(epoch.cast("string"), F.lit("/"), name))


def _quoted(text: Column) -> Column:
    return F.concat(F.lit("'"), F.substring(text, 1, 100), F.lit("'"))


def _not_a_number(name: str) -> Column:
    text = _header(name)
    return F.when(text.isNotNull() & ~text.rlike(DECIMAL_PATTERN),
                  F.concat(F.lit(f"{name} header "), _quoted(text), F.lit(" is not a number")))


def _event_length() -> Column:
    """The u32 little-endian event_size of the value's common header (log_event.h: timestamp 4,
    type 1, server_id 4, then event_size), read without Python: its 4 bytes as hex, byte order
    reversed."""
    offset, length = EVENT_SIZE_FIELD
    hexed = F.hex(F.substring(F.col("value"), offset + 1, length))
    big_endian = F.concat(*(F.substring(hexed, i, 2) for i in (7, 5, 3, 1)))
    return F.conv(big_endian, 16, 10).cast("long")


def _not_one_event(kind: Column) -> Column:
    """A binlog (or format) record's value must be one whole event: the shipper cuts the byte
    stream by event_size. A value of another size is not what its headers say (one past the
    event_size would also move the source's next expected position past the real frames)."""
    length = F.octet_length(F.col("value"))
    framed = F.col("value").isNotNull() & kind.isin(TopicKind.BINLOG, TopicKind.FORMAT)
    return (F.when(framed & (length < COMMON_HEADER_LEN),
                   F.format_string(f"value of %d bytes is shorter than a binlog event header "
                                   f"({COMMON_HEADER_LEN})",
                                   length))
            .when(framed & (_event_length() != length),
                  F.format_string("value of %d bytes is not one binlog event (its header's event_size is %d)",
                                  length, _event_length())))


def record_problem() -> Column:
    """What makes the record no record of the pipeline (libs/stages/kafka_input.py's table, every
    failing check named); NULL for a good record."""
    key, source, kind, pos = (_key(), _header(HEADER_SOURCE), _header(HEADER_RECORD_KIND),
                              _header(HEADER_BINLOG_POS))
    problems = F.concat_ws("; ",
        F.when(key.isNull(), F.lit("no key (the source id)")),
        F.when(key.isNotNull() & source.isNotNull() & (key != source),
               F.concat(F.lit("key "), _quoted(key), F.lit(" names another source than its source header "),
                        _quoted(source))),
        F.when(F.col("value").isNull(), F.lit("no value")),
        F.when(_header(HEADER_BINLOG_FILE).isNull(), F.lit(f"no {HEADER_BINLOG_FILE} header")),
        F.when(pos.isNull(), F.lit(f"no {HEADER_BINLOG_POS} header")),
        _not_a_number(HEADER_BINLOG_POS),
        _not_a_number(HEADER_BINLOG_EPOCH),
        F.when(kind.isNotNull() & ~kind.isin(*TopicKind),
               F.concat(F.lit(f"{HEADER_RECORD_KIND} header "), _quoted(kind),
                        F.lit(f" is not one of {', '.join(TopicKind)}"))),
        _not_one_event(F.coalesce(kind, F.lit(TopicKind.BINLOG))))
    return F.nullif(problems, F.lit(""))


def _source() -> Column:
    """The key; for a record without one its source header, else kafka:TOPIC:PARTITION
    (libs/stages/kafka_input.py unattributed_source): the assemble stage's groups are never NULL."""
    return F.coalesce(_key(), _header(HEADER_SOURCE),
                      F.concat(F.lit(UNATTRIBUTED_PREFIX), F.col("topic"), F.lit(":"), F.col("partition")))


def _u32(n: Column) -> Column:
    """4 bytes big-endian of a length (topic_tag.py's u32)."""
    return F.unhex(F.lpad(F.hex(n.cast("long")), 8, "0"))


def _field(data: Column) -> Column:
    """topic_tag.field_of: the bytes length-prefixed, NULL_FIELD for a null."""
    return F.when(data.isNull(), F.lit(bytearray(NULL_FIELD))).otherwise(F.concat(_u32(F.octet_length(data)),
                                                                                  data))


def tag_columns() -> list[Column]:
    """`tag`: the record's last header's text when that header is a cdc_tag (else NULL); `tag_head`:
    libs/contracts/topic_tag.py tag_head of the key and the headers before the last one, computed here
    in the JVM so that the assemble stage's Python pass only adds the value and the HMAC
    (TopicKeys.head_problem). NULL when the record has no headers. Never an error under ANSI mode."""
    headers = F.col("headers")
    count = F.size(headers)
    last = F.get(headers, count - 1)  # NULL for an empty array (get: no error out of bounds)
    before = F.slice(headers, 1, F.greatest(count - 1, F.lit(0)))
    fields = F.aggregate(before, F.lit(bytearray()), lambda acc, h: F.concat(
        acc, _field(F.encode(h["key"], "UTF-8")), _field(h["value"])))
    head = F.concat(F.lit(bytearray(DOMAIN)), _field(F.col("key")), _u32(F.greatest(count - 1, F.lit(0))),
                    fields)
    tag = F.when(last["key"] == HEADER_TAG, last["value"].cast("string"))
    return [tag.alias("tag"), F.when(headers.isNotNull(), head).alias("tag_head")]


def frames(kafka_df: DataFrame, tagged: bool = False) -> DataFrame:
    """Kafka source rows -> (source, binlog_file, binlog_pos, record_kind, kafka_topic, kafka_partition,
    kafka_offset, kafka_ms, record_problem, raw). record_kind: 'binlog' for a binlog event (no header),
    'snapshot' for a snapshot record. kafka_ms: the record's Kafka timestamp (epoch millis), whose oldest
    per source the assemble stage reports for the per-source Kafka -> Delta lag
    (libs/stages/counters.py). record_problem: NULL, or why the record is quarantined. `tagged` (the job
    has a topic secret): also tag_columns(), which the assemble stage verifies."""
    return kafka_df.select(
        _source().alias("source"),
        _binlog_file().alias("binlog_file"),
        _decimal(_header(HEADER_BINLOG_POS)).alias("binlog_pos"),
        F.coalesce(_header(HEADER_RECORD_KIND), F.lit(TopicKind.BINLOG)).alias("record_kind"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.unix_millis(F.col("timestamp")).alias("kafka_ms"),
        record_problem().alias("record_problem"),
        F.col("value").alias("raw"),
        *(tag_columns() if tagged else ()),
    )
