"""A job that stops on purpose: the micro-batch is not committed, so a restart replays it from
the same Kafka offsets and assembler state, and nothing of it was applied (DESIGN.md "Exactly
once"). What the operator reads is `str(stop)`: one line naming what stopped it and where."""
from __future__ import annotations


class JobStopped(Exception):
    """Raised inside a micro-batch to stop the stream; the entry point prints it as one line."""
