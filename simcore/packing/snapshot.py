"""A point-in-time cluster state: machines with capacities, tasks with requests and placements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: A request fits a free capacity when it exceeds it by at most this (float sums of requests).
EPS = 1e-9


@dataclass(frozen=True)
class Snapshot:
    """Machines ``capacity`` (N, R), tasks ``request`` (T, R) in the cluster's units.

    ``placement[t]`` is the machine index of task ``t`` or -1 when it is
    pending; ``job[t]`` groups tasks into jobs (horizontal inflation clones
    whole jobs, and a job is picky when one of its tasks is). Task order is
    the arrival order (the paper's *arrival* ordering).
    """

    resources: tuple[str, ...]
    capacity: FloatArray
    request: FloatArray
    placement: IntArray
    job: IntArray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cap = np.asarray(self.capacity, dtype=np.float64)
        req = np.asarray(self.request, dtype=np.float64)
        r = len(self.resources)
        if r == 0:
            raise InputError("a snapshot needs at least one resource")
        cap = cap.reshape(-1, r)
        req = req.reshape(-1, r)
        place = np.asarray(self.placement, dtype=np.int64).reshape(-1)
        job = np.asarray(self.job, dtype=np.int64).reshape(-1)
        object.__setattr__(self, "capacity", cap)
        object.__setattr__(self, "request", req)
        object.__setattr__(self, "placement", place)
        object.__setattr__(self, "job", job)
        if len(cap) == 0:
            raise InputError("the snapshot has no machines")
        if len(req) == 0:
            raise InputError("the snapshot has no tasks (nothing running or pending at that time)")
        if len(place) != len(req) or len(job) != len(req):
            raise InputError("placement and job need one entry per task")
        if not (np.isfinite(cap).all() and np.isfinite(req).all()) or (cap < 0).any() or (req < 0).any():
            raise InputError("capacities and requests must be finite and non-negative")
        if ((place < -1) | (place >= len(cap))).any():
            raise InputError(f"placements must be -1 (pending) or a machine index below {len(cap)}")
        used = self.used_per_machine()
        if (used > cap + 1e-6).any():
            bad = int(np.flatnonzero((used > cap + 1e-6).any(axis=1))[0])
            raise InputError(f"machine {bad} is over capacity: used {used[bad].tolist()} > {cap[bad].tolist()}")

    @property
    def n_machines(self) -> int:
        return len(self.capacity)

    @property
    def n_tasks(self) -> int:
        return len(self.request)

    @property
    def n_pending(self) -> int:
        return int(np.count_nonzero(self.placement < 0))

    def used_per_machine(self) -> FloatArray:
        """Requests of the placed tasks summed per machine, shape (N, R)."""
        used = np.zeros_like(self.capacity)
        on = self.placement >= 0
        np.add.at(used, self.placement[on], self.request[on])
        return used

    def median_machine(self) -> FloatArray:
        """Per-resource median of the machine capacities (the paper's "median machine").

        Taken per resource, not as one machine's vector: with an even count
        or machines off the cpu/memory diagonal there may be no single median
        machine, and the paper only uses it as a yardstick.
        """
        return np.asarray(np.median(self.capacity, axis=0), dtype=np.float64)

    def with_placement(self, placement: IntArray, meta: dict[str, Any] | None = None) -> Snapshot:
        return Snapshot(self.resources, self.capacity, self.request, placement, self.job, {**self.meta, **(meta or {})})
