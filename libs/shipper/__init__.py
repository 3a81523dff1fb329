"""The shipper (cdc-ship): binlog events -> one Kafka record each (DESIGN.md "Kafka record").

    record.py          header names + KafkaRecord (the contract the Spark job reads)
    stream.py          pure position tracking of a replica packet stream (fake Rotate, artificial FDE)
    binlog_dir.py      which files to read: explicit files or a directory's index, never outside it
    frame_check.py     per-file frame verification: CRC32 per the Format_description, Rotate names
    file_source.py     events of binlog files / a binlog directory, optionally following growth
    credentials.py     replication user/password from a file, a MySQL option file or the environment
    replica_protocol.py  COM_REGISTER_SLAVE / COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID payloads (pure)
    replica_source.py  connect as a replica with PyMySQL, yield (file, pos, frame)
    kafka_sink.py      idempotent producer (records tagged with the topic secret), partition per source
    resume_reader.py   the newest record of the source the shipper trusts (its tag verifies), for resume
    rebuild.py         read a topic back for a source and write the binlog files
    shipper.py         the loops (files / server) with resume and progress
    server_dump.py     one dump connection of the server loop: where it starts, its frames to Kafka
"""
