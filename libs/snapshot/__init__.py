"""Consistent snapshot: the existing rows of a source's tables, shipped beside the binlog.

The chunk bounds are here, not in chunks.py, so cdc-ship's flags and defaults load no pyarrow
(libs/shipper/shipper.py imports the snapshot reader only when --snapshot asks for it)."""

DEFAULT_CHUNK_ROWS = 5000  # rows per `rows` record (cdc-ship --snapshot-chunk-rows)
DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024  # ... and about this many bytes of values
