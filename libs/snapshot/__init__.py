"""Consistent snapshot: the existing rows of a source's tables, shipped beside the binlog."""
