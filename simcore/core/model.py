"""The cluster and workload model: plain numpy arrays, never one object per job.

Units: times are seconds; resource amounts are in whatever unit the cluster
uses (the Google presets normalise every resource to the largest machine,
as the LoTES paper does), requests and capacities in the same unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.fit import fit_floor, fits_in
from simcore.core.limits import max_machines
from simcore.core.taskgraph import TaskGraph

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Cluster:
    """A list of machine configurations, each with ``counts[j]`` identical machines.

    ``capacity[j, l]`` is the capacity of one machine of configuration ``j``
    in resource ``resources[l]``. Machines are numbered configuration by
    configuration in the order given (the LoTES paper's Table 1 order), so
    machine ``i`` belongs to configuration ``machine_config[i]``.
    """

    name: str
    resources: tuple[str, ...]
    config_names: tuple[str, ...]
    counts: IntArray
    capacity: FloatArray
    attributes: tuple[dict[str, Any], ...] = ()
    description: str = ""
    #: Relative processing speed of each configuration (e.g. clock rate in GHz), or None: all equal.
    #: With speeds, a job's processing time on configuration ``j`` is its work times
    #: ``max(speed) / speed[j]`` (:class:`SpeedRuntime`): the fastest machines run a trace's
    #: recorded durations, slower ones proportionally longer (the design-space paper, section 4.1.3).
    speed: FloatArray | None = None

    def __post_init__(self) -> None:
        limit = max_machines()
        raw = np.asarray(self.counts, dtype=object).reshape(-1)
        for j, c in enumerate(raw.tolist()):
            # Checked as Python integers first: 2**64 would overflow int64 silently or loudly.
            if isinstance(c, float) and c.is_integer():
                c = int(c)
            if not isinstance(c, (int, np.integer)) or isinstance(c, bool):
                raise InputError(f"configuration {j}: machine count must be an integer, got {c!r}")
            if c > limit:
                raise InputError(
                    f"configuration {j}: {c} machines exceeds the limit of {limit:,} machines per cluster "
                    "(setting SIMCORE_MAX_MACHINES)"
                )
        counts = np.asarray(raw.tolist(), dtype=np.int64)
        total = int(counts.sum())
        if total > limit:
            raise InputError(
                f"the cluster has {total:,} machines, more than the limit of {limit:,} (setting SIMCORE_MAX_MACHINES)"
            )
        capacity = np.asarray(self.capacity, dtype=np.float64)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "capacity", capacity)
        if not self.resources:
            raise InputError("a cluster needs at least one resource")
        if len(set(self.resources)) != len(self.resources):
            raise InputError(f"duplicate resource names in {list(self.resources)}")
        if capacity.shape != (len(self.config_names), len(self.resources)):
            raise InputError(
                f"capacity has shape {capacity.shape}, expected "
                f"({len(self.config_names)} configurations, {len(self.resources)} resources)"
            )
        if len(counts) != len(self.config_names):
            raise InputError("one machine count per configuration is required")
        if len(self.config_names) == 0:
            raise InputError("a cluster needs at least one machine configuration")
        if (counts < 0).any() or counts.sum() == 0:
            raise InputError("machine counts must be non-negative and not all zero")
        if not np.isfinite(capacity).all() or (capacity < 0).any():
            raise InputError("capacities must be finite and non-negative")
        if not self.attributes:
            object.__setattr__(self, "attributes", tuple({} for _ in self.config_names))
        if self.speed is not None:
            speed = np.asarray(self.speed, dtype=np.float64).reshape(-1)
            if speed.shape != (len(self.config_names),):
                raise InputError(f"speed has {speed.size} values, expected one per configuration ({len(counts)})")
            if not (np.isfinite(speed) & (speed > 0)).all():
                j = int(np.argmax(~(np.isfinite(speed) & (speed > 0))))
                raise InputError(f"configuration {j}: speed must be a finite positive number, got {speed[j]!r}")
            object.__setattr__(self, "speed", speed)

    @property
    def n_configs(self) -> int:
        return len(self.config_names)

    @property
    def n_machines(self) -> int:
        return int(self.counts.sum())

    @property
    def machine_config(self) -> IntArray:
        """Configuration index of every machine, shape ``(n_machines,)``."""
        return np.repeat(np.arange(self.n_configs, dtype=np.int64), self.counts)

    @property
    def machine_capacity(self) -> FloatArray:
        """Capacity of every machine, shape ``(n_machines, n_resources)``."""
        return np.repeat(self.capacity, self.counts, axis=0)

    def total_capacity(self) -> FloatArray:
        """Capacity of the whole cluster per resource."""
        return (self.capacity * self.counts[:, None]).sum(axis=0)  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """The project's JSON cluster format (see :mod:`simcore.clusterfile`)."""
        return {
            "name": self.name,
            "resources": list(self.resources),
            "configurations": [
                {
                    "name": n,
                    "count": int(c),
                    "capacity": {r: float(v) for r, v in zip(self.resources, cap, strict=True)},
                    **({"speed": float(self.speed[j])} if self.speed is not None else {}),
                    **({"attributes": a} if a else {}),
                }
                for j, (n, c, cap, a) in enumerate(
                    zip(self.config_names, self.counts, self.capacity, self.attributes, strict=True)
                )
            ],
        }


@dataclass(frozen=True)
class ClassTable:
    """Job classes as the LoTES allocation LP sees them.

    ``requests[k, l]``: expected request of class ``k`` in resource ``l``.
    ``rates[k, j]``: the paper's mu_jk, jobs per second that one job slot of
    configuration ``j`` completes for class ``k`` (1 / expected processing time).
    ``proportions[k]``: the paper's alpha_k, fraction of arrivals in class ``k``.
    """

    names: tuple[str, ...]
    requests: FloatArray
    rates: FloatArray
    proportions: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "requests", np.asarray(self.requests, dtype=np.float64))
        object.__setattr__(self, "rates", np.asarray(self.rates, dtype=np.float64))
        object.__setattr__(self, "proportions", np.asarray(self.proportions, dtype=np.float64))

    @property
    def n_classes(self) -> int:
        return len(self.names)

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "requests": self.requests.tolist(),
            "rates": self.rates.tolist(),
            "proportions": self.proportions.tolist(),
        }


class RuntimeModel(Protocol):
    """How long a job runs on a machine.

    ``last_class`` is the class of the job the machine ran last (-1 if none),
    which the profile-driven study needs for its warm file cache. A model may
    set ``all_runnable = True`` when every job has a finite time on every
    configuration; schedulers then skip their "can it run there?" checks.
    """

    def duration(self, job: int, config: int, last_class: int) -> float: ...


class FixedRuntime:
    """Processing time independent of the machine: ``duration = work``."""

    #: The work is finite and non-negative (Workload validates it), so every job runs everywhere.
    all_runnable = True

    def __init__(self, work: FloatArray) -> None:
        # A memoryview gives Python floats per element as fast as a list does,
        # without a second copy of every job (8 bytes per job, not 32).
        self._keep = np.ascontiguousarray(work, dtype=np.float64)
        self._work = memoryview(self._keep)  # type: ignore[arg-type]

    def duration(self, job: int, config: int, last_class: int) -> float:
        return self._work[job]

    def compiled_form(self) -> tuple[int, FloatArray, IntArray, FloatArray, FloatArray]:
        """This model as arrays for compiled kernels (:func:`simcore.compiled.core.duration`)."""
        none = np.zeros((1, 1))
        return 0, self._keep, np.zeros(0, dtype=np.int64), none, none

    def shortest(self) -> FloatArray:
        """Each job's processing time, the same everywhere."""
        return self._keep


class SpeedRuntime:
    """Processing time scaled by the machine's speed: ``work * max(speed) / speed[config]``.

    The design-space paper's environment (section 4.1.3) mixes 4.1 GHz and
    3.5 GHz machines; a task's recorded duration is taken as its time on the
    fastest configuration, the others run it proportionally longer.
    """

    all_runnable = True

    def __init__(self, work: FloatArray, speed: FloatArray) -> None:
        self._keep = np.ascontiguousarray(work, dtype=np.float64)
        self._work = memoryview(self._keep)  # type: ignore[arg-type]
        speed = np.asarray(speed, dtype=np.float64)
        self._factor: list[float] = (float(speed.max()) / speed).tolist()

    def duration(self, job: int, config: int, last_class: int) -> float:
        return self._work[job] * self._factor[config]

    def compiled_form(self) -> tuple[int, FloatArray, IntArray, FloatArray, FloatArray]:
        """This model as arrays for compiled kernels (:func:`simcore.compiled.core.duration`)."""
        return 1, self._keep, np.zeros(0, dtype=np.int64), np.array([self._factor]), np.zeros((1, 1))

    def shortest(self) -> FloatArray:
        """Each job's shortest processing time (on the fastest configuration): its work."""
        return self._keep


class RateRuntime:
    """Machine-dependent processing time ``work / mu[class, config]`` (LoTES section 5.4)."""

    def __init__(self, work: FloatArray, job_class: IntArray, rates: FloatArray) -> None:
        self._keep = (np.ascontiguousarray(work, dtype=np.float64), np.ascontiguousarray(job_class, dtype=np.int64))
        self._work = memoryview(self._keep[0])  # type: ignore[arg-type]
        self._cls = memoryview(self._keep[1])  # type: ignore[arg-type]
        rates = np.asarray(rates, dtype=np.float64)
        if not (np.isfinite(rates) & (rates >= 0)).all():
            j, k = (int(x) for x in np.argwhere(~(np.isfinite(rates) & (rates >= 0)))[0])
            raise ParameterError(
                f"rate[{j}][{k}] is {float(rates[j, k])!r}; rates must be finite and non-negative (0: cannot run)"
            )
        self._rates = rates.tolist()
        #: Every class runs on every configuration (no zero rate).
        self.all_runnable = bool((rates > 0).all())

    def duration(self, job: int, config: int, last_class: int) -> float:
        rate = self._rates[self._cls[job]][config]
        if rate <= 0:
            # mu_jk = 0 means "cannot run there" (LoTES section 5.3: architecture limits).
            # An infinite time lets rate-aware schedulers (Tetris) rank the machine last;
            # the engine refuses to start a job with an infinite processing time.
            return math.inf
        return self._work[job] / rate  # type: ignore[no-any-return]

    def compiled_form(self) -> tuple[int, FloatArray, IntArray, FloatArray, FloatArray]:
        """This model as arrays for compiled kernels (:func:`simcore.compiled.core.duration`)."""
        return 2, self._keep[0], self._keep[1], np.array(self._rates, dtype=np.float64), np.zeros((1, 1))


@dataclass
class Workload:
    """A stream of ``n`` jobs, sorted by submission time.

    ``work[z]`` is the job's duration in seconds when ``runtime`` is None
    (machine-independent processing), otherwise whatever the runtime model
    divides (LoTES: work, with mean 1, divided by mu).
    ``job_class[z]`` is -1 where the class is unknown.
    """

    name: str
    resources: tuple[str, ...]
    submit: FloatArray
    request: FloatArray
    work: FloatArray
    job_class: IntArray
    horizon_s: float
    classes: ClassTable | None = None
    runtime: RuntimeModel | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: Jobs made of tasks (:mod:`simcore.core.taskgraph`): then every unit above is a task, released to the
    #: scheduler when its job has arrived and its parents have finished. None: every unit is a job.
    graph: TaskGraph | None = None

    def __post_init__(self) -> None:
        self.submit = np.asarray(self.submit, dtype=np.float64)
        # numpy cannot infer the width (-1) of an empty array: a workload without jobs (a cut
        # that kept none) takes it from its resources, so that it reaches the checks that name it.
        n_jobs = len(self.submit)
        self.request = np.asarray(self.request, dtype=np.float64).reshape(n_jobs, -1 if n_jobs else len(self.resources))
        self.work = np.asarray(self.work, dtype=np.float64)
        self.job_class = np.asarray(self.job_class, dtype=np.int64)
        n = len(self.submit)
        if self.request.shape[1] != len(self.resources):
            raise InputError(
                f"requests have {self.request.shape[1]} columns but the workload names {len(self.resources)} resources"
            )
        if len(self.work) != n or len(self.job_class) != n:
            raise InputError("submit, request, work and job_class must have one entry per job")
        self._check_values()
        if n and np.any(np.diff(self.submit) < 0):
            raise InputError("jobs must be sorted by submission time")
        if self.graph is not None:
            self.graph.check_submit(self.submit, f"workload {self.name!r}")

    def _check_values(self) -> None:
        """Finite, non-negative submit times, requests and work (vectorised: ~10 ms per million jobs).

        A NaN submit time would start a job at time NaN, a negative request would let jobs
        overfill a machine, and negative work would reach the engine as a scheduler bug.
        """
        where = f"workload {self.name!r}"
        for field_name, arr in (("submit", self.submit), ("request", self.request), ("work", self.work)):
            bad = ~(np.isfinite(arr) & (arr >= 0))  # NaN fails both tests
            if bad.any():
                idx = np.argwhere(bad)[0]
                at = ", ".join(str(int(i)) for i in idx)
                value = float(arr[tuple(idx)])
                raise ParameterError(
                    f"{where}: {field_name}[{at}] is {value!r}; {field_name} values must be finite and non-negative"
                )
        if len(self.job_class) and int(self.job_class.min()) < -1:
            z = int(np.argmax(self.job_class < -1))
            raise ParameterError(
                f"{where}: job_class[{z}] is {int(self.job_class[z])}; classes are >= 0, or -1 for unknown"
            )
        if not (math.isfinite(self.horizon_s) and self.horizon_s >= 0):
            raise ParameterError(f"{where}: horizon_s is {self.horizon_s!r}; it must be finite and non-negative")

    @property
    def n_jobs(self) -> int:
        return len(self.submit)

    def runtime_model(self, cluster: Cluster | None = None) -> RuntimeModel:
        """The workload's own runtime model, else its work scaled by the cluster's speeds, else its work."""
        if self.runtime is not None:
            return self.runtime
        if cluster is not None and cluster.speed is not None:
            return SpeedRuntime(self.work, cluster.speed)
        return FixedRuntime(self.work)


def shortest_durations(runtime: RuntimeModel, n_jobs: int, n_configs: int) -> FloatArray:
    """Each job's shortest processing time over the configurations (s): the critical-path durations.

    Models that know it cheaply say so (``shortest()``); otherwise every
    configuration is asked, with an idle (cold) machine.
    """
    fast = getattr(runtime, "shortest", None)
    if fast is not None:
        return np.asarray(fast(), dtype=np.float64)
    out = np.full(n_jobs, np.inf)
    dur = runtime.duration
    for z in range(n_jobs):
        out[z] = min(dur(z, c, -1) for c in range(n_configs))
    return out


def check_compatible(cluster: Cluster, workload: Workload) -> None:
    """Fail with a clear message when the workload cannot run on the cluster."""
    if tuple(workload.resources) != tuple(cluster.resources):
        raise InputError(
            f"workload {workload.name!r} requests resources {list(workload.resources)} "
            f"but cluster {cluster.name!r} has {list(cluster.resources)}"
        )
    if workload.n_jobs == 0:
        return
    biggest = cluster.capacity[cluster.counts > 0]
    fits_somewhere = _fits_chunked(workload.request, biggest)
    if not fits_somewhere.all():
        z = int(np.flatnonzero(~fits_somewhere)[0])
        req = workload.request[z]
        top = biggest.max(axis=0)
        over = [
            r for r, v, c in zip(workload.resources, req.tolist(), top.tolist(), strict=True) if not c >= fit_floor(v)
        ]
        if over:
            why = "; no machine has more than " + ", ".join(f"{r} {top[workload.resources.index(r)]:g}" for r in over)
        else:
            why = " in one machine (each resource fits somewhere, but no configuration has them all)"
        # Traces record where job 0 is in the file when jobs map to lines one to one (tracefile.py).
        first = workload.params.get("first_data_line")
        raise InputError(
            f"job {z} requests {dict(zip(workload.resources, req.tolist(), strict=True))}, more than any machine of "
            f"cluster {cluster.name!r} offers{why}",
            file=workload.params.get("trace_file"),
            line=first + z if isinstance(first, int) else None,
            column=over[0] if over else None,
        )


#: Jobs tested at a time by :func:`_fits_chunked` (bounds its temporaries: 16 bytes a job per resource).
FIT_CHUNK = 1 << 20


def _fits_chunked(request: FloatArray, capacity: FloatArray) -> NDArray[np.bool_]:
    """Which jobs fit (the one fit rule, :mod:`simcore.core.fit`) in at least one of the ``capacity`` rows.

    The largest configurations are tried first and each later one only on the jobs no earlier one
    holds: usually one pass decides nearly every job. (Testing all ten configurations of the
    paper-scale Figure 11 workload, 33 million jobs, took 13 s of every run; this takes about 1 s.)
    """
    n = len(request)
    out = np.zeros(n, dtype=bool)
    order = np.argsort(-capacity.sum(axis=1), kind="stable")
    for a in range(0, n, FIT_CHUNK):
        chunk = request[a : a + FIT_CHUNK]
        left = np.arange(len(chunk))
        for c in order:
            ok = fits_in(chunk if len(left) == len(chunk) else chunk[left], capacity[c])
            out[a + left[ok]] = True
            left = left[~ok]
            if not len(left):
                break
    return out
