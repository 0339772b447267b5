"""Append-only numpy columns that spill to disk: what lets an import of any size stay within a memory bound.

:class:`Spill` has the interface of :class:`simcore.traces._stream.Growing`
(``append(**columns)``) but keeps at most ``limit_bytes`` in memory: beyond
that the pending rows are written as one *chunk* of ``.npy`` files (one per
column) in a temporary directory, removed by :meth:`Spill.close`. Chunks
are read back one at a time, in the order they were appended, so rows keep
their order (which decides ties when sorting later).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: Bytes of pending rows kept in memory before they are written as a chunk.
LIMIT_BYTES = 16 << 20


class Spill:
    """Columns ``names`` appended block by block, kept as numbered chunks on disk."""

    def __init__(self, names: Sequence[str], *, limit_bytes: int = LIMIT_BYTES, directory: str | None = None) -> None:
        self.names = tuple(names)
        self.limit = limit_bytes
        self.dir = Path(tempfile.mkdtemp(prefix="simcore-spill-", dir=directory))
        self._pending: dict[str, list[NDArray[Any]]] = {n: [] for n in self.names}
        self._pending_bytes = 0
        self.n_chunks = 0
        self.rows = 0

    def append(self, **cols: NDArray[Any]) -> None:
        """Add rows (every column the same length); writes a chunk once ``limit_bytes`` are pending."""
        n = len(next(iter(cols.values()))) if cols else 0
        if n == 0:
            return
        for k in self.names:
            a = np.ascontiguousarray(cols[k])
            self._pending[k].append(a)
            self._pending_bytes += a.nbytes
        self.rows += n
        if self._pending_bytes >= self.limit:
            self.flush()

    def flush(self) -> None:
        """Write the pending rows as the next chunk (nothing to do when none are pending)."""
        if not self._pending[self.names[0]]:
            return
        for k in self.names:
            np.save(self.dir / f"{self.n_chunks}.{k}.npy", np.concatenate(self._pending[k]), allow_pickle=False)
            self._pending[k] = []
        self._pending_bytes = 0
        self.n_chunks += 1

    def chunk(self, i: int, *, mmap: bool = False) -> dict[str, NDArray[Any]]:
        """Chunk ``i``'s columns (memory-mapped read-only with ``mmap``: only the slices used are read)."""
        mode: Any = "r" if mmap else None
        return {k: np.load(self.dir / f"{i}.{k}.npy", mmap_mode=mode, allow_pickle=False) for k in self.names}

    def chunks(self) -> Iterator[dict[str, NDArray[Any]]]:
        """Every chunk in order (pending rows are written first), one in memory at a time."""
        self.flush()
        for i in range(self.n_chunks):
            yield self.chunk(i)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["LIMIT_BYTES", "Spill"]
