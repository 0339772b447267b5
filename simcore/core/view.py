"""The engine's state as schedulers may read it: one documented, read-only view.

A scheduler decides; the engine owns the state and changes it only in
``Simulation.start`` and at completions. Schedulers read that state through
:class:`EngineView` (``sim.view``), never through private engine attributes
and never through a mirror of their own kept in sync by hand: the view *is*
the engine's state, so it is always current.

Layout. Free capacity is stored resource-major, ``free_by_resource[r, m]``
with shape ``(resources, machines)`` and C order, because the hot scans of
the schedulers (first fit, Tetris scores, LoTES's per-configuration fits) read
one resource of many machines: a contiguous row is one fast numpy pass over
10,000 machines, where the machine-major layout would be a strided column.
``free`` is the same memory seen as ``(machines, resources)`` (a transposed
view, no copy) for code that reads one machine at a time.

Every array here is a read-only numpy view of the engine's own buffer: the
engine writes through its private handles and the scheduler sees the change
at once, but an attempt by a scheduler to write raises ``ValueError``. The
flat ``memoryview`` objects (``free_flat``, ``request_flat``) are read-only
too; they exist because reading a Python scalar through a memoryview costs a
few tens of nanoseconds against about a microsecond for a numpy call, and the
per-event code of a scheduler reads single values.

The fit rule is :mod:`simcore.core.fit`'s, the project's one tolerance: a
request ``q`` fits in free capacity ``f`` when ``f >= q - EPS`` in every
resource. :meth:`EngineView.fits`, :meth:`EngineView.fit_mask` and
:meth:`EngineView.first_fit` apply the very same float comparison as the
engine's ``start``, so a scheduler's vectorised scan and the engine never
disagree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.fit import EPS, fit_floor
from simcore.core.model import Cluster, FloatArray, IntArray

__all__ = ["CHUNK", "EPS", "EngineView", "fit_floor", "flat_view", "read_only"]

#: Machines examined per numpy pass of :meth:`EngineView.first_fit`; bounds
#: the work when the first fit is early in a very large cluster.
CHUNK = 32768

BoolArray = NDArray[np.bool_]


def flat_view(a: NDArray[Any]) -> Any:
    """A flat :class:`memoryview` sharing ``a``'s memory (C-contiguous ``a``).

    Read-only when ``a`` is. Typed ``Any``: typeshed's memoryview only knows bytes.
    """
    if not a.flags.c_contiguous:
        raise ValueError("a flat view needs a C-contiguous array")
    return memoryview(a.reshape(-1))  # type: ignore[arg-type]


def read_only(a: NDArray[Any]) -> NDArray[Any]:
    """A view of ``a`` that cannot be written through (``a`` itself stays writable)."""
    v = a.view()
    v.flags.writeable = False
    return v


class EngineView:
    """What a scheduler may read of the engine's state, kept current by the engine.

    Attributes (all read-only; shapes use N machines, R resources, n jobs):

    - ``n_machines``, ``n_resources``, ``resources`` (names), ``n_configs``.
    - ``free_by_resource``: ``(R, N)`` float64, C order. Free capacity.
    - ``free``: ``(N, R)``, the same memory transposed.
    - ``free_flat``: memoryview of ``free_by_resource``; ``free_flat[r * N + m]``.
    - ``capacity``: ``(N, R)``; ``capacity_by_resource``: ``(R, N)``, C order.
    - ``request``: ``(n, R)`` float64, C order; ``request_flat[j * R + r]``.
    - ``config_of``: ``(N,)`` configuration of each machine; ``config_list``
      the same as a Python list (for scalar reads in per-event code).
    - ``config_ranges``: ``((lo, hi), ...)`` per configuration: the cluster
      lays the machines of configuration ``c`` out as ``lo..hi-1``.
    - ``running``: ``(N,)`` jobs running per machine.
    - ``last_class``: ``(N,)`` class of the job each machine finished last (-1 if none).
    """

    def __init__(
        self,
        cluster: Cluster,
        free_by_resource: FloatArray,
        request: FloatArray,
        running: IntArray,
        last_class: IntArray,
        *,
        chunk: int = CHUNK,
    ) -> None:
        R, N = free_by_resource.shape
        self.n_machines = N
        self.n_resources = R
        self.resources: tuple[str, ...] = tuple(cluster.resources)
        self.n_configs = cluster.n_configs
        self.free_by_resource: FloatArray = read_only(free_by_resource)
        self.free: FloatArray = self.free_by_resource.T
        self.free_flat = flat_view(self.free_by_resource)
        capacity = cluster.machine_capacity
        self.capacity: FloatArray = read_only(capacity)
        self.capacity_by_resource: FloatArray = read_only(np.ascontiguousarray(capacity.T))
        self.request: FloatArray = read_only(request)
        self.request_flat = flat_view(self.request)
        self.config_of: IntArray = read_only(cluster.machine_config)
        self.config_list: list[int] = self.config_of.tolist()
        ends = np.cumsum(cluster.counts).tolist()
        self.config_ranges: tuple[tuple[int, int], ...] = tuple(
            (hi - int(c), hi) for c, hi in zip(cluster.counts.tolist(), ends, strict=True)
        )
        self.running: IntArray = read_only(running)
        self.last_class: IntArray = read_only(last_class)
        self.chunk = max(1, int(chunk))
        size = min(self.chunk, N)
        # Scratch buffers for the masks, made once: a pass then allocates nothing.
        self._ok = np.empty(size, dtype=bool)
        self._tmp = np.empty(size, dtype=bool)
        self._rows = list(self.free_by_resource)  # one row view per resource

    # -- scalar reads ------------------------------------------------------------------
    def request_of(self, job: int) -> list[float]:
        """``job``'s request vector as Python floats."""
        R = self.n_resources
        jb = job * R
        req = self.request_flat
        return [req[jb + r] for r in range(R)]

    def floors_of(self, job: int) -> list[float]:
        """``fit_floor`` of each resource of ``job``'s request: compare free capacity with ``>=``."""
        return [fit_floor(q) for q in self.request_of(job)]

    def fits(self, job: int, machine: int) -> bool:
        """Whether ``job`` fits in the free capacity of ``machine`` now (the engine's own rule)."""
        R = self.n_resources
        N = self.n_machines
        req = self.request_flat
        free = self.free_flat
        jb = job * R
        for r in range(R):
            if not free[r * N + machine] >= req[jb + r] - EPS:
                return False
        return True

    # -- vectorised reads --------------------------------------------------------------
    def fit_mask(
        self, floors: list[float], lo: int = 0, hi: int | None = None, out: BoolArray | None = None
    ) -> BoolArray:
        """Mask over machines ``lo..hi-1``: where free capacity reaches ``floors`` in every resource.

        ``floors`` is :meth:`floors_of` of a job (or any thresholds made with :func:`fit_floor`).
        """
        hi = self.n_machines if hi is None else hi
        F = self.free_by_resource
        ok = np.greater_equal(F[0, lo:hi], floors[0], out=out)
        if self.n_resources > 1:
            tmp = np.empty(hi - lo, dtype=bool)
            for r in range(1, self.n_resources):
                np.greater_equal(F[r, lo:hi], floors[r], out=tmp)
                np.logical_and(ok, tmp, out=ok)
        return ok

    def first_fit(self, job: int, lo: int = 0, hi: int | None = None) -> int:
        """Lowest-numbered machine in ``lo..hi-1`` (default: all) where ``job`` fits now, or -1."""
        R = self.n_resources
        N = self.n_machines
        if lo == 0 and (hi is None or hi == N) and N <= self.chunk:
            # The common case, inlined: R + (R - 1) + 1 numpy calls in all.
            req = self.request_flat
            jb = job * R
            ok = self._ok
            tmp = self._tmp
            rows = self._rows
            np.greater_equal(rows[0], req[jb] - EPS, out=ok)
            for r in range(1, R):
                np.greater_equal(rows[r], req[jb + r] - EPS, out=tmp)
                np.logical_and(ok, tmp, out=ok)
            k = int(ok.argmax())  # the first True; 0 if there is none
            return k if ok[k] else -1
        hi = N if hi is None else hi
        floors = self.floors_of(job)
        for a in range(lo, hi, self.chunk):
            b = min(a + self.chunk, hi)
            ok = self.fit_mask(floors, a, b, out=self._ok[: b - a])
            k = int(ok.argmax())
            if ok[k]:
                return a + k
        return -1
