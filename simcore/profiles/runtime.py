"""The profile study's run-time model: a table per job type and machine type, cold or warm.

A job of type ``k`` started on a machine of type ``j`` runs for
``warm_s[k, j]`` seconds if the machine's last finished job was also of type
``k`` (its file cache holds the database and indices, the paper's section
3.2), otherwise for ``cold_s[k, j]``. The engine tracks the last job type per
machine (``Simulation.last_class``) and passes it in.
"""

from __future__ import annotations

import numpy as np

from simcore.core.model import FloatArray, IntArray
from simcore.profiles.table import ProfileTable


class ProfileRuntime:
    """``duration(job, config, last_class)`` in seconds, from a :class:`ProfileTable`.

    ``job_class[z]`` indexes the table's job types and ``config`` its machine
    types (the cluster's configurations are the table's machine types, in
    the same order). Run times are deterministic: the paper found the
    variance between successive runs small (section 3.1) and its simulator
    reads one number per job type and machine type.
    """

    def __init__(self, table: ProfileTable, job_class: IntArray) -> None:
        self.table = table
        self.cold: FloatArray = np.asarray(table.cold_s, dtype=np.float64)
        self.warm: FloatArray = np.asarray(table.warm_s, dtype=np.float64)
        self._cold = self.cold.tolist()
        self._warm = self.warm.tolist()
        self._cls = np.asarray(job_class, dtype=np.int64)
        #: Every job type has a finite time on every machine type (the profile readers require it).
        self.all_runnable = bool(np.isfinite(self.cold).all() and np.isfinite(self.warm).all())

    def duration(self, job: int, config: int, last_class: int) -> float:
        k = int(self._cls[job])
        if last_class == k:
            return self._warm[k][config]  # type: ignore[no-any-return]
        return self._cold[k][config]  # type: ignore[no-any-return]

    def compiled_form(self) -> tuple[int, FloatArray, IntArray, FloatArray, FloatArray]:
        """This model as arrays for compiled kernels (:func:`simcore.compiled.core.duration`)."""
        return 3, np.zeros(0), self._cls, self.cold, self.warm

    def class_time(self, k: int, config: int, last_class: int) -> float:
        """Run time (s) of any job of type ``k`` on machine type ``config`` after ``last_class``."""
        return self._warm[k][config] if last_class == k else self._cold[k][config]  # type: ignore[no-any-return]
