"""Streaming helpers shared by the trace readers: sources, gzip blocks, row errors, progress.

A *source* is a path, the raw bytes of an upload, or a binary file object, so
the command line and a Celery task call the same readers. Files are read in
blocks of whole lines (decompressed on the fly when they start with the gzip
magic bytes), so memory holds one block plus the reader's result, never the
whole input.

Parsing a block has a fast path (``pyarrow.csv``, imported lazily: ``simcore``
must import with numpy and scipy alone) and an exact path (the standard
library, line by line). The exact path runs when pyarrow is missing or when
the fast path rejects a block, so a malformed row is always reported with its
file, line and column.
"""

from __future__ import annotations

import io
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import DecompressionGuard, check_line_length, max_line_bytes

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO
OnError = Literal["raise", "skip"]

#: Decompressed bytes per block: about 180,000 Google task-event rows. Memory
#: for a block is a few times this, independent of the file's size.
BLOCK_BYTES = 16 << 20
#: Compressed bytes handed to zlib at a time.
_RAW_CHUNK = 1 << 20
#: How many skipped rows are quoted in a report (the rest are only counted).
MAX_EXAMPLES = 20

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class ImportProgress:
    """How far an import is, for progress bars (a Celery task can forward it).

    ``bytes_done``/``bytes_total`` count the *input* bytes (compressed for
    gzip) of the current file; ``bytes_total`` is None for unsized streams.
    """

    stage: str
    file: str
    file_index: int
    n_files: int
    bytes_done: int
    bytes_total: int | None
    rows: int

    @property
    def fraction(self) -> float:
        """Fraction of this stage done, counting files as equal parts."""
        if self.n_files <= 0:
            return 1.0
        within = self.bytes_done / self.bytes_total if self.bytes_total else 0.0
        return min(1.0, (self.file_index + min(within, 1.0)) / self.n_files)


ProgressFn = Callable[[ImportProgress], None]


@dataclass
class RowErrors:
    """The bad-input policy: raise at the first bad row, or count and skip it.

    ``counts`` maps a reason to the number of rows skipped for it;
    ``examples`` quotes the first :data:`MAX_EXAMPLES` of them with file and
    line, so nothing is lost silently.
    """

    on_error: OnError = "raise"
    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.on_error not in ("raise", "skip"):
            raise ParameterError(f"on_error must be 'raise' or 'skip', got {self.on_error!r}")

    def bad(
        self, reason: str, detail: str, *, file: str, line: int | None, column: str | None = None, count: int = 1
    ) -> None:
        """Report a bad row: raises :class:`InputError` or counts it under ``reason``."""
        if self.on_error == "raise":
            raise InputError(detail, file=file, line=line, column=column)
        self.counts[reason] = self.counts.get(reason, 0) + count
        if len(self.examples) < MAX_EXAMPLES:
            where = f"{file}, line {line}" if line is not None else file
            col = f", column {column!r}" if column else ""
            self.examples.append(f"{where}{col}: {detail}")

    @property
    def skipped(self) -> int:
        return sum(self.counts.values())


def source_name(src: Source, default: str) -> str:
    """A name for error messages: the path, the file object's name, or ``default``."""
    if isinstance(src, (str, os.PathLike)):
        return os.fspath(src)
    if isinstance(src, (bytes, bytearray, memoryview)):
        return default
    name = getattr(src, "name", None)
    return str(name) if isinstance(name, str) else default


def source_list(sources: Sequence[Source] | Source, empty: str) -> Sequence[Source]:
    """``sources`` as a sequence: one path, upload or file object becomes a list of one; none raises ``empty``."""
    single = (
        isinstance(sources, (str, bytes, bytearray, memoryview))
        or hasattr(sources, "read")
        or hasattr(sources, "__fspath__")
    )
    srcs: Sequence[Source] = [sources] if single else sources  # type: ignore[list-item,assignment]
    if not srcs:
        raise ParameterError(empty)
    return srcs


def _open(src: Source, name: str) -> tuple[BinaryIO, int | None, bool]:
    """(binary stream, size in bytes or None, whether we opened it and must close it)."""
    if isinstance(src, (str, os.PathLike)):
        p = Path(src)
        if not p.exists():
            raise InputError("cannot open: no such file", file=name)
        if p.is_dir():
            raise InputError("is a directory, expected a file", file=name)
        return p.open("rb"), p.stat().st_size, True
    if isinstance(src, (bytes, bytearray, memoryview)):
        b = bytes(src)
        return io.BytesIO(b), len(b), True
    if not hasattr(src, "read"):
        raise ParameterError(f"a trace source must be a path, bytes or a binary file, got {type(src).__name__}")
    size = None
    try:
        pos = src.tell()
        size = src.seek(0, io.SEEK_END) - pos
        src.seek(pos)
    except (OSError, AttributeError, ValueError):
        size = None
    return src, size, False


def _raw_chunks(f: BinaryIO) -> Iterator[bytes]:
    while True:
        b = f.read(min(_RAW_CHUNK, BLOCK_BYTES))
        if not b:
            return
        if isinstance(b, str):
            raise ParameterError("trace sources must be opened in binary mode")
        yield b


def _decompressed(
    f: BinaryIO, name: str, errors: RowErrors, lines_before: Callable[[], int], status: dict[str, bool]
) -> Iterator[tuple[bytes, int]]:
    """Yield (decompressed bytes, input bytes consumed so far); handles multi-member gzip.

    A stream that ends before the gzip end-of-stream marker is *truncated*:
    an error, or (skip mode) a counted skip of the incomplete last line.
    """
    raw = _raw_chunks(f)
    first = next(raw, b"")
    consumed = len(first)
    if not first.startswith(_GZIP_MAGIC):
        if first:
            yield first, consumed
        for b in raw:
            consumed += len(b)
            yield b, consumed
        return
    status["gzip"] = True
    d = zlib.decompressobj(wbits=31)
    out_max = max(1 << 16, BLOCK_BYTES // 4)
    fed = False  # whether the current gzip member has been given any bytes
    chunk: bytes | None = first
    while chunk is not None:
        data = chunk
        try:
            while data:
                fed = True
                # Bounded output: highly compressible input must not inflate into one huge chunk.
                out = d.decompress(data, out_max)
                if out:
                    yield out, consumed
                if d.eof:
                    # Concatenated gzip members are one stream (what `cat a.gz b.gz` gives).
                    data = d.unused_data
                    d = zlib.decompressobj(wbits=31)
                    fed = False
                elif d.unconsumed_tail:
                    data = d.unconsumed_tail
                elif len(out) == out_max:
                    data = b""
                    while len(out) == out_max and not d.eof:  # drain output zlib still holds
                        out = d.decompress(b"", out_max)
                        if out:
                            yield out, consumed
                    if d.eof:
                        data = d.unused_data
                        d = zlib.decompressobj(wbits=31)
                        fed = False
                else:
                    data = b""
        except zlib.error as e:
            status["broken"] = True
            errors.bad(
                "corrupt gzip data",
                f"truncated or corrupt gzip data after line {lines_before()} ({e}); the rest of the file is unreadable",
                file=name,
                line=lines_before() + 1,
            )
            return
        chunk = next(raw, None)
        if chunk is not None:
            consumed += len(chunk)
    if fed and not d.eof:
        status["broken"] = True
        errors.bad(
            "truncated gzip file",
            f"truncated or corrupt gzip data: the stream ends early after line {lines_before()} "
            "(truncated download?); the incomplete last line is ignored",
            file=name,
            line=lines_before() + 1,
        )


@dataclass(frozen=True)
class Block:
    """Whole lines of one file: ``data`` ends with a newline; its first line is ``first_line`` (1-based)."""

    file: str
    first_line: int
    data: bytes
    n_lines: int
    bytes_done: int
    bytes_total: int | None


def iter_blocks(src: Source, name: str, errors: RowErrors, block_bytes: int | None = None) -> Iterator[Block]:
    """Split a (possibly gzipped) source into blocks of whole lines (about ``BLOCK_BYTES`` each).

    The last block of a readable file may be empty (``n_lines == 0``), so a
    progress callback always sees the file's end.
    """
    block_bytes = block_bytes or BLOCK_BYTES
    f, size, close = _open(src, name)
    line = 1
    pieces: list[bytes] = []
    status = {"broken": False}

    def before() -> int:
        return line - 1 + sum(p.count(b"\n") for p in pieces)

    guard = DecompressionGuard(name)
    max_line = max_line_bytes()
    try:
        done = 0
        have = 0
        tail = 0  # bytes after the last newline seen (the line still open)
        for chunk, done in _decompressed(f, name, errors, before, status):
            pieces.append(chunk)
            have += len(chunk)
            guard.add(len(chunk), done if status.get("gzip") else None, line)
            nl = chunk.rfind(b"\n")
            tail = tail + len(chunk) if nl < 0 else len(chunk) - nl - 1
            if tail > max_line:
                check_line_length(tail, name, before() + 1)
            if have < block_bytes:
                continue
            buf = b"".join(pieces)
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                pieces = [buf]
                continue
            data = buf[:cut]
            rest = buf[cut:]
            n = data.count(b"\n")
            pieces = [rest] if rest else []
            have = len(rest)
            yield Block(name, line, data, n, done, size)
            line += n
        buf = b"".join(pieces)
        pieces = []
        if status["broken"]:
            # The bytes after the last newline are the start of a line cut off mid-way.
            buf = buf[: buf.rfind(b"\n") + 1]
        if buf and not buf.endswith(b"\n"):
            buf += b"\n"
        # The whole input has been consumed (even if the last chunk produced no output).
        yield Block(name, line, buf, buf.count(b"\n"), size if size is not None else done, size)
    except OSError as e:
        raise InputError(f"cannot read: {e}", file=name) from None
    finally:
        if close:
            f.close()


# -- parsing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column to extract: 0-based ``index``, schema name, numeric kind, and whether it may be empty.

    ``kind="id"``: a name ending in a number (Alibaba's ``j_1234``, ``t_5``), kept as that int64:
    names are identities only, and a number per row keeps the columns numeric.
    """

    index: int
    name: str
    kind: Literal["int", "float", "id"]
    optional: bool = False


def _pyarrow() -> Any:
    try:
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - exercised only without pyarrow
        return None
    return pcsv


def parse_csv_block(
    block: Block, ncols: int, columns: Sequence[Column], errors: RowErrors, *, fast: bool = True
) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
    """Parse a block of header-less CSV rows into numpy columns and their line numbers.

    Integer columns become int64, float columns float64 with NaN for empty
    optional fields. Rows with the wrong number of fields, a non-numeric
    value or an empty mandatory field raise :class:`InputError` or are
    skipped and counted, depending on ``errors``.
    """
    if not block.data:
        return {c.name: np.zeros(0, dtype=np.float64 if c.kind == "float" else np.int64) for c in columns}, np.zeros(
            0, dtype=np.int64
        )
    if fast and b"\n\n" not in block.data and not block.data.startswith(b"\n"):
        out = _parse_fast(block, ncols, columns)
        if out is not None:
            n = len(next(iter(out.values())))
            if n == block.n_lines:
                return out, np.arange(block.first_line, block.first_line + n, dtype=np.int64)
    return _parse_exact(block, ncols, columns, errors)


def _parse_fast(block: Block, ncols: int, columns: Sequence[Column]) -> dict[str, NDArray[Any]] | None:
    pcsv = _pyarrow()
    if pcsv is None:
        return None
    import pyarrow as pa

    names = [f"c{i}" for i in range(ncols)]
    kinds = {"int": pa.int64(), "float": pa.float64(), "id": pa.string()}
    types = {f"c{c.index}": kinds[c.kind] for c in columns}
    try:
        table = pcsv.read_csv(
            pa.BufferReader(block.data),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False, block_size=1 << 24),
            parse_options=pcsv.ParseOptions(quote_char=False),
            convert_options=pcsv.ConvertOptions(
                include_columns=list(types),
                column_types=types,
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None
    out: dict[str, NDArray[Any]] = {}
    for c in columns:
        col = table.column(f"c{c.index}")
        if c.kind == "id":
            import pyarrow.compute as pc

            digits = pc.extract_regex(col, r"(?P<n>[0-9]{1,18})$")
            if digits.null_count:
                return None  # a name without a trailing number: the exact path names the line
            col = pc.cast(pc.struct_field(digits, [0]), pa.int64())
        if col.null_count:
            if not c.optional or c.kind != "float":
                return None  # the exact path names the line
            col = col.fill_null(float("nan"))
        out[c.name] = np.ascontiguousarray(col.to_numpy())
    return out


_EXPECTED = {"int": "an integer", "float": "a number", "id": "a name ending in a number (like j_1234)"}
_TRAILING_DIGITS = re.compile(rb"([0-9]{1,18})$")


def _id(s: bytes) -> int:
    m = _TRAILING_DIGITS.search(s)
    if m is None:
        raise ValueError(s)
    return int(m.group(1))


def _parse_exact(
    block: Block, ncols: int, columns: Sequence[Column], errors: RowErrors
) -> tuple[dict[str, NDArray[Any]], NDArray[np.int64]]:
    vals: list[list[float] | list[int]] = [[] for _ in columns]
    lines: list[int] = []
    nan = float("nan")
    line_no = block.first_line - 1
    for raw in block.data.split(b"\n")[:-1]:
        line_no += 1
        if not raw.strip():
            continue
        f = raw.split(b",")
        if len(f) != ncols:
            errors.bad(
                "wrong column count",
                f"expected {ncols} comma-separated fields, found {len(f)}",
                file=block.file,
                line=line_no,
            )
            continue
        row: list[float | int] = []
        ok = True
        for c in columns:
            s = f[c.index].strip()
            if not s:
                if c.optional and c.kind == "float":
                    row.append(nan)
                    continue
                errors.bad("missing value", "required field is empty", file=block.file, line=line_no, column=c.name)
                ok = False
                break
            try:
                row.append(_id(s) if c.kind == "id" else int(s) if c.kind == "int" else float(s))
            except ValueError:
                errors.bad(
                    "non-numeric field",
                    f"expected {_EXPECTED[c.kind]}, found {s.decode(errors='replace')[:40]!r}",
                    file=block.file,
                    line=line_no,
                    column=c.name,
                )
                ok = False
                break
        if not ok:
            continue
        for v, x in zip(vals, row, strict=True):
            v.append(x)  # type: ignore[arg-type]
        lines.append(line_no)
    out: dict[str, NDArray[Any]] = {}
    for c, v in zip(columns, vals, strict=True):
        try:
            out[c.name] = np.array(v, dtype=np.float64 if c.kind == "float" else np.int64)
        except OverflowError:
            # Python ints beyond int64: report the first such row precisely.
            for i, x in enumerate(v):
                if not -(2**63) <= int(x) < 2**63:
                    errors.bad(
                        "non-numeric field",
                        f"integer {x} does not fit in 64 bits",
                        file=block.file,
                        line=lines[i],
                        column=c.name,
                    )
            raise InputError("integer out of range", file=block.file, column=c.name) from None
    return out, np.array(lines, dtype=np.int64)


def reject_rows(
    mask: NDArray[np.bool_],
    lines: NDArray[np.int64],
    errors: RowErrors,
    *,
    file: str,
    reason: str,
    column: str | None,
    detail: Callable[[int], str],
) -> NDArray[np.bool_]:
    """Rows where ``mask`` is True are bad: raise at the first, or count them all; returns the rows to keep.

    ``detail(i)`` describes row ``i`` (called for the first few only).
    """
    bad = np.flatnonzero(mask)
    if len(bad) == 0:
        return np.ones(len(mask), dtype=bool)
    quoted = max(1, min(len(bad), MAX_EXAMPLES - len(errors.examples)))
    for i in bad[:quoted]:
        errors.bad(reason, detail(int(i)), file=file, line=int(lines[i]), column=column)
    if len(bad) > quoted:
        errors.counts[reason] = errors.counts.get(reason, 0) + len(bad) - quoted
    return ~mask


def describe(fmt: str, *cols: NDArray[Any]) -> Callable[[int], str]:
    """``detail`` for :func:`reject_rows`: ``fmt`` formatted with row ``i`` of each column."""

    def detail(i: int) -> str:
        return fmt.format(*(c[i] for c in cols))

    return detail


class Growing:
    """Append-only float/int columns kept as a list of numpy chunks (no per-row Python objects)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._chunks: dict[str, list[NDArray[Any]]] = {n: [] for n in names}

    def append(self, **cols: NDArray[Any]) -> None:
        for k, v in cols.items():
            if len(v):
                self._chunks[k].append(np.asarray(v))

    def column(self, name: str, dtype: Any) -> NDArray[Any]:
        ch = self._chunks[name]
        return np.concatenate(ch).astype(dtype, copy=False) if ch else np.zeros(0, dtype=dtype)
