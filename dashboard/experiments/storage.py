"""A run's per-job records as one compressed Parquet object in the "records" storage, not in the database.

The records of a paper-scale cell (LoTES Figure 11: 37 M jobs, 1.3 GB
packed) made PostgreSQL grow by about 100 GB for one figure. They are now an
object of Django's storage API (``storages["records"]``, set by
SIMCORE_STORAGE_URL: a local folder by default, any S3-compatible store in
production), and the database keeps a :class:`~dashboard.models.RunRecordsObject`
row: key, rows, row groups, bytes, SHA-256 and layout.

* Written in row groups of ``SIMCORE_JOB_CHUNK`` records, one at a time from
  the engine's arrays, to a temporary file, then handed to the storage (a
  rename on the local filesystem, a multipart upload to S3): a huge run never
  sits in memory twice.
* Read row group by row group (:func:`read_records`): downloads, archives and
  packing snapshots hold one row group at a time whatever the run's size.
* Nothing half-way: the object is written first, the row afterwards in the
  transaction that finishes the run; if that fails the object is deleted
  (:func:`discard`). A worker killed between the two leaves an object no row
  names, under its run's folder and attempt: the run's next attempt deletes
  it (:func:`delete_leftovers`), and so does deleting the experiment.
* Deleting a row (its run, its experiment) deletes its object once the
  deletion commits; deleting an experiment deletes its whole folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from simcore import archive
from simcore.core.errors import ParameterError

log = logging.getLogger(__name__)

#: The name of the storage in settings.STORAGES (dashboard.settings.records_storage).
STORAGE = "records"
#: The object layout written now: the columns of simcore.archive.STORED_COLUMNS in their types, plus ``job``
#: (int64) for a sample. Kept in each row, so a later layout can still read the objects written before it.
LAYOUT = 1
#: zstd at its default level: the float times compress to about half (docs/notes/storage.md) at several
#: hundred MB/s a core, so a 33 M-job run stores in seconds; gzip would be several times slower.
COMPRESSION = "zstd"

#: Columns with few distinct values, dictionary-encoded; the float times are not (a dictionary of nearly
#: unique values costs time for nothing: half the write's CPU, docs/notes/storage.md).
DICTIONARY = ["class", "machine", "config"]

_ARROW = {np.float64: pa.float64(), np.int32: pa.int32()}
_ATTEMPT = re.compile(r"attempt-(\d+)-[0-9a-f]+\.parquet")


def storage() -> Storage:
    return storages[STORAGE]


def schema(sampled: bool) -> pa.Schema:
    fields = [pa.field(k, _ARROW[t], nullable=False) for k, t in archive.STORED_COLUMNS.items()]
    if sampled:
        fields.append(pa.field("job", pa.int64(), nullable=False))
    return pa.schema(fields, metadata={b"simcore.layout": str(LAYOUT).encode()})


def experiment_folder(experiment_id: int) -> str:
    return f"experiments/{experiment_id}/"


def run_folder(experiment_id: int, run_id: int) -> str:
    return f"{experiment_folder(experiment_id)}runs/{run_id}/"


@dataclass(frozen=True)
class Stored:
    """An object written and not yet named by a row: what the row will say of it."""

    key: str
    rows: int
    row_groups: int
    size: int
    sha256: str


class _HashingSink:
    """The file pyarrow writes to: passes the bytes on and keeps their SHA-256 and count as they go,
    so the checksum costs no second read of the object."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.hash = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.hash.update(view)
        self.size += view.nbytes
        return self._out.write(view)

    def flush(self) -> None:
        self._out.flush()

    def tell(self) -> int:
        return self.size

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


class _MovableFile(File):
    """A finished temporary file: FileSystemStorage moves it into place (a rename on one filesystem, as it
    does for large uploads) instead of copying it; other storages read it."""

    def temporary_file_path(self) -> str:
        return str(self.name)


def write_records(
    experiment_id: int,
    run_id: int,
    attempt: int,
    pieces: Iterable[tuple[Mapping[str, np.ndarray], np.ndarray | None]],
    *,
    sampled: bool,
) -> Stored:
    """Write a run's records (``pieces``: stored columns and, for a sample, job numbers; simcore.archive.
    job_column_chunks) as one Parquet object, a row group a piece; what was written. Nothing is left
    behind if it fails (no temporary file, no object)."""
    key = f"{run_folder(experiment_id, run_id)}attempt-{attempt}-{uuid.uuid4().hex}.parquet"
    target = schema(sampled)
    fd, tmp = tempfile.mkstemp(suffix=".parquet", dir=settings.FILE_UPLOAD_TEMP_DIR)
    saved: str | None = None
    try:
        rows = groups = 0
        with os.fdopen(fd, "wb") as out:
            sink = _HashingSink(out)
            with pq.ParquetWriter(
                sink, target, compression=COMPRESSION, use_dictionary=DICTIONARY, write_statistics=False
            ) as writer:
                for cols, job in pieces:
                    n = len(cols["submit_s"])
                    if n == 0:
                        continue
                    arrays = [pa.array(np.asarray(cols[k], dtype=t)) for k, t in archive.STORED_COLUMNS.items()]
                    if sampled:
                        arrays.append(pa.array(np.asarray(job, dtype=np.int64)))
                    writer.write_table(pa.Table.from_arrays(arrays, schema=target), row_group_size=n)
                    rows += n
                    groups += 1
                    del arrays
        with open(tmp, "rb") as f:
            saved = storage().save(key, _MovableFile(f, name=tmp))
        return Stored(saved, rows, groups, sink.size, sink.hash.hexdigest())
    except BaseException:
        if saved is not None:
            discard(saved)
        raise
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:  # moved into place
            pass


def read_records(key: str, what: str) -> Iterator[dict[str, np.ndarray]]:
    """The columns of simcore.archive.JOB_COLUMNS of the object ``key``, one row group at a time (``job``
    numbered from 0 unless the object stores job numbers). ``what`` names the run in errors."""
    try:
        f = storage().open(key, "rb")
    except FileNotFoundError:
        raise ParameterError(f"{what}: its per-job records ({key}) are missing from the records storage") from None
    with f:
        pf = pq.ParquetFile(f)
        sampled = "job" in pf.schema_arrow.names
        if pf.num_row_groups == 0:
            yield archive.derived_jobs({k: np.array([], dtype=t) for k, t in archive.STORED_COLUMNS.items()}, None)
            return
        first = 0
        for i in range(pf.num_row_groups):
            cols = _row_group(pf, i, sampled, first)
            first += len(cols["job"])
            yield cols
            # Dropped before the next row group is read: the suspended generator would otherwise hold this one
            # while the next is read (two row groups in memory instead of one).
            del cols


def _row_group(pf: pq.ParquetFile, i: int, sampled: bool, first: int) -> dict[str, np.ndarray]:
    t = pf.read_row_group(i)
    raw = {k: t.column(k).to_numpy() for k in archive.STORED_COLUMNS}
    job = t.column("job").to_numpy() if sampled else None
    return archive.derived_jobs(raw, job, first)


def checksum(key: str) -> str:
    """The SHA-256 of the object as stored now, read in pieces (to compare with its row's)."""
    h = hashlib.sha256()
    with storage().open(key, "rb") as f:
        while piece := f.read(1 << 20):
            h.update(piece)
    return h.hexdigest()


def discard(key: str | None) -> None:
    """Delete an object no row names (a failed or refused store); a missing one is no error."""
    if key is not None:
        storage().delete(key)


def objects_under(folder: str) -> Iterator[str]:
    """The keys of every object under ``folder`` (none if it does not exist)."""
    try:
        dirs, files = storage().listdir(folder)
    except FileNotFoundError:
        return
    for name in files:
        yield f"{folder}{name}"
    for d in dirs:
        yield from objects_under(f"{folder}{d}/")


def delete_folder(folder: str) -> int:
    """Delete every object under ``folder`` (and, on a local filesystem, its emptied folders); how many."""
    st = storage()
    n = 0
    for key in list(objects_under(folder)):
        st.delete(key)
        n += 1
    try:
        root = st.path(folder)
    except NotImplementedError:  # an object store: no folders
        return n
    for here, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        try:
            os.rmdir(here)
        except OSError:
            pass
    return n


def delete_leftovers(experiment_id: int, run_id: int, attempt: int, keep: Iterable[str] = ()) -> list[str]:
    """Delete the run's objects of earlier attempts that no row names (a worker killed after writing its
    object, before its row); those of this or later attempts may be being written, and stay."""
    kept = set(keep)
    gone = []
    for key in objects_under(run_folder(experiment_id, run_id)):
        m = _ATTEMPT.fullmatch(key.rsplit("/", 1)[-1])
        if key not in kept and m is not None and int(m.group(1)) < attempt:
            storage().delete(key)
            gone.append(key)
    return gone


def _after_commit(action: Any, *args: Any) -> None:
    def run() -> None:
        try:
            action(*args)
        except Exception:  # the rows are gone already; an unreachable store leaves an object, logged
            log.exception("could not delete per-job records %s from the records storage", args)

    transaction.on_commit(run)


@receiver(post_delete, sender="dashboard.RunRecordsObject")
def _object_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _after_commit(discard, instance.key)


@receiver(post_delete, sender="dashboard.Experiment")
def _experiment_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    _after_commit(delete_folder, experiment_folder(instance.pk))
