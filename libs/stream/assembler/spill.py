"""Where open transactions live between micro-batches: chunks of frames in a SpillStore, so the
assembler state stays small (DESIGN.md 'Whole transactions': bounded memory).

A chunk is keyed by (source, trx key, chunk no). Writes must be idempotent: a retried batch
starts again from the previous state and writes the same chunks with the same bytes."""
from __future__ import annotations

import io
import pickle
from typing import Callable, Iterable, Iterator, Protocol

from libs.stream.assembler.model import Frame, SpillRef


class SpillStore(Protocol):
    def put(self, source: str, trx_key: str, chunk_no: int, data: bytes) -> None: ...

    def get(self, source: str, trx_key: str, chunk_no: int) -> bytes: ...

    def delete(self, source: str, trx_key: str, chunk_count: int) -> None: ...

    def size(self, source: str, trx_key: str) -> int: ...


class InMemorySpillStore:
    """Dictionary-backed SpillStore for tests and notebooks (not durable)."""

    def __init__(self) -> None:
        self.chunks: dict[tuple[str, str, int], bytes] = {}

    def put(self, source: str, trx_key: str, chunk_no: int, data: bytes) -> None:
        self.chunks[(source, trx_key, chunk_no)] = data

    def get(self, source: str, trx_key: str, chunk_no: int) -> bytes:
        try:
            return self.chunks[(source, trx_key, chunk_no)]
        except KeyError:
            raise KeyError(f"spill chunk {chunk_no} of {trx_key} (source {source}) is missing") from None

    def delete(self, source: str, trx_key: str, chunk_count: int) -> None:
        for chunk_no in range(chunk_count):
            self.chunks.pop((source, trx_key, chunk_no), None)

    def size(self, source: str, trx_key: str) -> int:
        """Bytes of the chunks stored for one group."""
        return sum(len(v) for (s, k, _), v in self.chunks.items() if (s, k) == (source, trx_key))

    def total_bytes(self) -> int:
        return sum(len(v) for v in self.chunks.values())


def encode_chunk(frames: list[Frame]) -> bytes:
    # Frames hold decoded records (frozen dataclasses); pickle keeps them exactly. The store is
    # written and read by the same deployed code, so no cross-version format is promised.
    return pickle.dumps(tuple(frames), protocol=pickle.HIGHEST_PROTOCOL)


class _ChunkUnpickler(pickle.Unpickler):
    """Reads chunks spilled before the assembler moved from libs/assembler/ to
    libs/stream/assembler/: pickle names a class by its module, and a job upgraded while a
    transaction is spilled would otherwise fail on the old name."""

    def find_class(self, module: str, name: str):
        if module == "libs.assembler" or module.startswith("libs.assembler."):
            module = "libs.stream." + module.removeprefix("libs.")
        return super().find_class(module, name)


def decode_chunk(data: bytes) -> tuple[Frame, ...]:
    return _ChunkUnpickler(io.BytesIO(data)).load()


def release(store: SpillStore, source: str, refs: Iterable[SpillRef]) -> None:
    """Delete released chunks; call only once the batch that released them is committed."""
    for ref in refs:
        store.delete(source, ref.trx_key, ref.chunk_count)


class SpilledFrames:
    """Re-iterable view of one group's frames: its stored chunks, then the in-memory tail,
    filtered by `keep`. Reads one chunk at a time."""

    def __init__(self, store: SpillStore, source: str, ref: SpillRef | None, tail: tuple[Frame, ...],
                 keep: Callable[[Frame], bool] = lambda frame: True):
        self._store, self._source, self._ref, self._tail, self._keep = store, source, ref, tail, keep

    def only(self, keep: Callable[[Frame], bool]) -> "SpilledFrames":
        return SpilledFrames(self._store, self._source, self._ref, self._tail, keep)

    def __iter__(self) -> Iterator[Frame]:
        if self._ref is not None:
            for chunk_no in range(self._ref.chunk_count):
                for frame in decode_chunk(self._store.get(self._source, self._ref.trx_key, chunk_no)):
                    if self._keep(frame):
                        yield frame
        for frame in self._tail:
            if self._keep(frame):
                yield frame
