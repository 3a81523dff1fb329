"""binlog-dump (pipelines/dump.py): walk a binlog file through the codec and the boundary parser,
then print each event as mariadb-binlog -vv style text or as JSON lines. Beside the codec, not
inside it: it reads the codec's records and the boundary parser's states, and nothing in the
codec depends on it."""
