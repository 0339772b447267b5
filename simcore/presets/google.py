"""The LoTES paper's clusters and workloads (Tables 1 and 2, section 5.4).

Clusters (resources ``cpu``, ``mem``, normalised to the largest machine as
in the paper):

* ``google-2011``: the ten machine configurations of Table 1 with their
  machine counts (12,583 machines), in Table 1 order.
* ``google-balanced``: the same configurations with ``machines_per_config``
  machines each (section 5.4.1 uses 1000).

Workloads (arrival rate = ``load`` x lambda*, lambda* from the allocation LP
of the given cluster and the workload's class table; Poisson arrivals on
``[0, hours * 3600)`` seconds):

* ``google-like``: the four job classes of Table 2.
* ``lotes-phi``: section 5.4.2, nine classes whose mean requests differ by Phi.
* ``lotes-omega``: section 5.4.3, machine-dependent processing rates spread by Omega.

Every preset defaults to a one-hour arrival window; the paper simulated 100
hours for section 5.4 and a month of the trace for section 5.3 (at full
scale ``google-like`` produces about 4.7 million jobs per hour), so pass
``hours`` (``--hours``) to go longer.

Job requests use the section 5.4 distribution for every preset: a Gaussian
of the class mean and coefficient of variation ``request_cv`` (default the
paper's 0.5), *truncated* (conditioned, not clipped) to ``[0, cap_l]``. ``cap_l`` is the largest capacity of
resource ``l`` in the cluster for ``google-like`` and ``min(1, that)`` for the
section 5.4 presets (the paper's ``[0, 1]``; identical on Table 1 clusters).
The class mean is the mean *before* truncation, so a job's expected request
is 2.8% above it (:func:`simcore.workloads.generators.truncated_gaussian`); the LP sees
the class means, as in the paper. ``request_cv=0`` gives every job exactly its
class mean: the setting in which LoTES leads Tetris on the Phi sweep (with the
paper's 0.5 Tetris leads; see :class:`simcore.schedulers.lotes.LoTESDispatcher`).

Arrival rate: ``load`` x lambda, where lambda is the allocation LP's bound
lambda* (``load_basis="allocation"``, the default) or the machine-assignment
LP's value (LoTES stage 2 with its default options, ``load_basis="assignment"``),
which is what section 5.4 means by lambda* ("the solution of the machine
assignment LP"); the stage-2 value is at most the stage-1 one, so the same
``load`` is a lighter system on that basis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.capacity import allocation_lp
from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FloatArray, RateRuntime, Workload
from simcore.presets import cluster_preset, workload_preset
from simcore.schedulers.base import Param
from simcore.workloads.generators import (
    choose_classes,
    class_requests,
    exponential,
    poisson_arrivals,
    uniform_open_low,
)

HOUR_S = 3600.0

#: Coefficient of variation of job requests around their class mean (section 5.4); the default of ``request_cv``.
REQUEST_CV = 0.5

#: The workload parameters every class-based preset here takes.
REQUEST_CV_PARAM = Param(
    "request_cv",
    float,
    REQUEST_CV,
    "coefficient of variation of a job's requests around its class mean (the paper: 0.5; 0: every job at its mean)",
    min=0.0,
    max=10.0,
)
LOAD_BASIS_PARAM = Param(
    "load_basis",
    str,
    "allocation",
    "what load is a fraction of: the allocation LP's lambda* (stage 1) or the machine-assignment LP's "
    "lambda (LoTES stage 2, the paper's section 5.4)",
    choices=("allocation", "assignment"),
)

#: Table 1: (machines, cores, memory, |K^j| reported by the paper), top to bottom.
TABLE1: tuple[tuple[int, float, float, int], ...] = (
    (6732, 0.50, 0.50, 4),
    (3863, 0.50, 0.25, 2),
    (1001, 0.50, 0.75, 1),
    (795, 1.00, 1.00, 2),
    (126, 0.25, 0.25, 2),
    (52, 0.50, 0.12, 1),
    (5, 0.50, 0.03, 1),
    (5, 0.50, 0.97, 2),
    (3, 1.00, 0.50, 2),
    (1, 1.00, 0.06, 1),
)

#: Table 2: per class (mean time in hours, mean cores, mean memory, proportion of jobs).
TABLE2: tuple[tuple[float, float, float, float], ...] = (
    (0.03, 0.02, 0.01, 0.23),
    (0.04, 0.02, 0.03, 0.46),
    (0.04, 0.07, 0.03, 0.30),
    (0.03, 0.20, 0.06, 0.01),
)

RESOURCES = ("cpu", "mem")

#: Section 5.4: mean request of every class before the Phi spread.
LOTES_BASE_REQUEST = 0.025
LOTES_CLASSES = 9


# -- clusters -----------------------------------------------------------------------------


def _table1_cluster(name: str, counts: list[int], description: str) -> Cluster:
    return Cluster(
        name=name,
        resources=RESOURCES,
        config_names=tuple(f"G{i + 1}" for i in range(len(TABLE1))),
        counts=np.array(counts, dtype=object),  # the model checks the machine limit before int64
        capacity=np.array([[c, m] for _, c, m, _ in TABLE1]),
        attributes=tuple({"table1_row": i + 1, "paper_K_j": kj} for i, (_, _, _, kj) in enumerate(TABLE1)),
        description=description,
    )


@cluster_preset(
    "google-2011",
    "Google cluster, May 2011: the 10 configurations of LoTES Table 1 (12,583 machines)",
    (
        Param(
            "scale",
            float,
            1.0,
            "fraction of Table 1's machine counts (each rounded, at least 1 machine per configuration)",
            min=0.0001,
            max=100.0,
        ),
    ),
)
def google_2011(scale: float = 1.0) -> Cluster:
    """Table 1 of the LoTES paper: 10 configurations, capacities normalised to the largest machine.

    ``scale`` shrinks (or grows) every configuration's count in proportion, rounded to the nearest
    machine and never below one, so that a reduced run keeps all ten configurations and their mix.
    """
    if not (scale > 0 and np.isfinite(scale)):
        raise ParameterError(f"scale must be a positive number, got {scale}")
    counts = [n for n, _, _, _ in TABLE1] if scale == 1.0 else [max(1, round(n * scale)) for n, _, _, _ in TABLE1]
    return _table1_cluster(
        "google-2011",
        counts,
        "LoTES Table 1: the machine configurations of Google's May 2011 trace, normalised to the largest machine"
        + ("" if scale == 1.0 else f", counts scaled by {scale:g}"),
    )


@cluster_preset(
    "google-balanced",
    "Table 1 configurations with the same number of machines each (LoTES section 5.4.1: 1000)",
    (Param("machines_per_config", int, 1000, "machines in each of the 10 configurations", min=1),),
)
def google_balanced(machines_per_config: int = 1000) -> Cluster:
    """The Table 1 configurations with ``machines_per_config`` machines each (section 5.4.1)."""
    if machines_per_config < 1:
        raise ParameterError(f"machines_per_config must be at least 1, got {machines_per_config}")
    return _table1_cluster(
        "google-balanced",
        [machines_per_config] * len(TABLE1),
        f"LoTES section 5.4.1: the Table 1 configurations with {machines_per_config} machines each",
    )


# -- shared workload pieces ---------------------------------------------------------------------


def _request_caps(cluster: Cluster, unit_cap: bool) -> FloatArray:
    """Upper truncation bound per resource: the largest capacity (and at most 1 if ``unit_cap``)."""
    biggest = cluster.capacity[cluster.counts > 0].max(axis=0)
    return np.minimum(biggest, 1.0) if unit_cap else biggest  # type: ignore[no-any-return]


def _finish(
    name: str,
    cluster: Cluster,
    classes: ClassTable,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    class_mean_work: FloatArray,
    machine_dependent: bool,
    unit_cap: bool,
    params: dict[str, Any],
    request_cv: float = REQUEST_CV,
    load_basis: str = "allocation",
) -> Workload:
    """Draw the jobs of a class-based workload at ``load`` x lambda* of ``cluster``.

    ``class_mean_work[k]`` is the mean of the exponential ``work`` of class k:
    seconds for machine-independent processing, or the dimensionless work
    that :class:`~simcore.core.model.RateRuntime` divides by ``classes.rates``.
    """
    if not (load > 0 and np.isfinite(load)):
        raise ParameterError(f"load must be a positive number, got {load}")
    if not (hours > 0 and np.isfinite(hours)):
        raise ParameterError(f"hours must be a positive number, got {hours}")
    if not (request_cv >= 0 and np.isfinite(request_cv)):
        raise ParameterError(f"request_cv must be a finite non-negative number, got {request_cv}")
    lam_star = allocation_lp(cluster, classes).lambda_star
    lam_basis = lam_star if load_basis == "allocation" else assignment_lambda(cluster, classes)
    rate = load * lam_basis
    horizon = hours * HOUR_S
    submit = poisson_arrivals(rate, horizon, rng)
    n = len(submit)
    job_class = choose_classes(classes.proportions, n, rng)
    work = exponential(class_mean_work[job_class], None, rng)
    request = class_requests(classes.requests, job_class, request_cv, 0.0, _request_caps(cluster, unit_cap), rng)
    runtime = RateRuntime(work, job_class, classes.rates) if machine_dependent else None
    return Workload(
        name=name,
        resources=cluster.resources,
        submit=submit,
        request=request,
        work=work,
        job_class=job_class,
        horizon_s=horizon,
        classes=classes,
        runtime=runtime,
        params={
            "load": float(load),
            "hours": float(hours),
            "arrival_rate": float(rate),
            "lambda_star": float(lam_star),
            "load_basis": load_basis,
            "lambda_basis": float(lam_basis),
            "jobs": int(n),
            "request_cv": float(request_cv),
            **params,
        },
    )


#: Bin limit of the stage-2 solve behind ``load_basis="assignment"``: a few section 5.4 instances need
#: over a million candidate bins on one configuration (Phi 0.012, seed 1: 1.14 million on G4, about
#: 30 s and 2 GB), above LoTES's default guard; ten times it still stops a runaway enumeration.
ASSIGNMENT_BASIS_MAX_BINS = 5_000_000


def assignment_lambda(cluster: Cluster, classes: ClassTable) -> float:
    """The machine-assignment LP's lambda (jobs/s): LoTES stages 1 and 2 with their default options.

    Section 5.4 sets lambda = 0.97 of this value. It depends on the bins, so on K^j
    (``k_sets="vertex"``, LoTES's default); a LoTES run with other options plans its own.
    The bin limit is :data:`ASSIGNMENT_BASIS_MAX_BINS`, not LoTES's default, so that every
    scheduler of a grid can run the instances whose bins LoTES's default guard refuses.
    """
    from simcore.schedulers.lotes.assignment import plan_offline  # a scheduler's planner, imported only when asked

    try:
        plan = plan_offline(cluster, classes, max_bins=ASSIGNMENT_BASIS_MAX_BINS)
    except ParameterError as e:
        raise ParameterError(f"load_basis='assignment' needs LoTES's machine-assignment LP: {e}") from None
    return float(plan.assignment.lambda_lp)


# -- google-like ----------------------------------------------------------------------------------


def google_like_classes(cluster: Cluster) -> ClassTable:
    """Table 2 as a class table: rates 1 / (mean time in s) on every configuration."""
    if tuple(cluster.resources) != RESOURCES:
        raise ParameterError(
            f"workload 'google-like' needs a cluster with resources {list(RESOURCES)}, "
            f"cluster {cluster.name!r} has {list(cluster.resources)}"
        )
    t = np.array(TABLE2)
    mean_s = t[:, 0] * HOUR_S
    return ClassTable(
        names=tuple(f"class {k + 1}" for k in range(len(t))),
        requests=t[:, 1:3],
        rates=np.repeat((1.0 / mean_s)[:, None], cluster.n_configs, axis=1),
        proportions=t[:, 3],
    )


@workload_preset(
    "google-like",
    "The four job classes of LoTES Table 2 (Google, May 2011) as a Poisson stream",
    (REQUEST_CV_PARAM, LOAD_BASIS_PARAM),
    default_cluster="google-2011",
    default_hours=1.0,
)
def google_like(
    cluster: Cluster,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    request_cv: float = REQUEST_CV,
    load_basis: str = "allocation",
) -> Workload:
    """Poisson arrivals of the four Table 2 classes.

    Class k arrives with its Table 2 proportion; its duration is exponential
    with the Table 2 mean time (0.03 h = 108 s, 0.04 h = 144 s) on every
    machine (machine-independent processing, as the paper assumes for the
    trace); its requests are truncated Gaussians (CV 0.5) around the Table 2
    mean cores and memory, truncated to the largest machine. On
    ``google-2011`` lambda* = 1314.11 jobs/s.

    Deviation: the paper replays the trace itself; this preset is a
    stationary stand-in with the same class statistics (no daily cycle, no
    initial batch, no drift of the proportions shown in its Figure 7).
    """
    classes = google_like_classes(cluster)
    mean_s = np.array([row[0] for row in TABLE2]) * HOUR_S
    return _finish(
        "google-like",
        cluster,
        classes,
        rng,
        load=load,
        hours=hours,
        class_mean_work=mean_s,
        machine_dependent=False,
        unit_cap=False,
        request_cv=request_cv,
        load_basis=load_basis,
        params={
            "classes": [
                {"name": nm, "mean_time_h": h, "mean_cpu": c, "mean_mem": m, "proportion": p}
                for nm, (h, c, m, p) in zip(classes.names, TABLE2, strict=True)
            ]
        },
    )


# -- section 5.4 ------------------------------------------------------------------------------------

_CLASS_SEED = Param(
    "class_seed",
    int,
    None,
    "seed of the class parameters r_kl and u_k alone (default: drawn from the run's seed); "
    "fix it to keep the classes while the run seed varies, as the paper's instances do",
    min=0,
)


def lotes_class_parameters(
    resources: tuple[str, ...], phi: float, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Section 5.4.2 class parameters: ``(r, u)``.

    ``r[k, l] = 0.025 + U[-phi, phi]`` (mean request of class k in resource
    l, before truncation) and ``u[k]`` uniform on ``(0, 1]`` (mean processing
    time of class k, hours; 0 is excluded because 1/u_k is a rate).
    """
    if not (0 <= phi <= LOTES_BASE_REQUEST):
        raise ParameterError(f"phi must be in [0, {LOTES_BASE_REQUEST}] so mean requests stay >= 0, got {phi}")
    r = LOTES_BASE_REQUEST + rng.uniform(-phi, phi, size=(LOTES_CLASSES, len(resources)))
    u = uniform_open_low(0.0, 1.0, LOTES_CLASSES, rng)
    return r, u


def _class_rng(rng: np.random.Generator, class_seed: int | None) -> np.random.Generator:
    return rng if class_seed is None else np.random.default_rng(class_seed)


@workload_preset(
    "lotes-phi",
    "LoTES section 5.4.2: nine classes, mean requests 0.025 + U[-Phi, Phi], processing rates 1/u_k",
    (
        Param(
            "phi",
            float,
            0.009,
            "spread of the class mean requests: r_kl = 0.025 + U[-Phi, Phi]",
            min=0.0,
            max=LOTES_BASE_REQUEST,
        ),
        _CLASS_SEED,
        REQUEST_CV_PARAM,
        LOAD_BASIS_PARAM,
    ),
    default_cluster="google-balanced",
    default_hours=1.0,
)
def lotes_phi(
    cluster: Cluster,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    phi: float = 0.009,
    class_seed: int | None = None,
    request_cv: float = REQUEST_CV,
    load_basis: str = "allocation",
) -> Workload:
    """Section 5.4.2: varying resource requirements.

    Nine classes, alpha_k = 1/9, Poisson arrivals. Per instance, class k has
    mean request ``r_kl = 0.025 + U[-Phi, Phi]`` per resource and
    ``u_k ~ U(0, 1]``; ``mu_jk = 1 / u_k`` on every configuration. Each job
    has work ``w ~ Exp(1)`` and processing time ``w / mu_jk``; its requests
    are truncated Gaussians (mean r_kl, CV ``request_cv``, the paper's 0.5,
    truncated to [0, 1]).

    Time unit: the paper does not give one for work and mu; we take hours,
    so class k's mean processing time is u_k hours (0.5 h on average) and a
    100-hour run (``hours=100``) matches the paper's horizon.

    Load: the paper sets lambda = 0.97 lambda* with lambda* from the
    machine-assignment LP (LoTES stage 2): ``load_basis="assignment"``. By
    default ``load`` is relative to the allocation LP (stage 1), an upper bound
    on the stage-2 value (0.93-0.955 of it on these instances), so the same
    ``load`` is then a somewhat heavier system than in the paper.
    Defaults to a one-hour window (the paper: 100 h).
    """
    r, u = lotes_class_parameters(cluster.resources, phi, _class_rng(rng, class_seed))
    rates_per_hour = np.repeat((1.0 / u)[:, None], cluster.n_configs, axis=1)
    classes = ClassTable(
        names=tuple(f"class {k + 1}" for k in range(LOTES_CLASSES)),
        requests=r,
        rates=rates_per_hour / HOUR_S,
        proportions=np.full(LOTES_CLASSES, 1.0 / LOTES_CLASSES),
    )
    return _finish(
        "lotes-phi",
        cluster,
        classes,
        rng,
        load=load,
        hours=hours,
        class_mean_work=np.ones(LOTES_CLASSES),
        machine_dependent=True,
        unit_cap=True,
        request_cv=request_cv,
        load_basis=load_basis,
        params={"phi": float(phi), "class_seed": class_seed, "time_unit": "hour", "u": u.tolist(), "r": r.tolist()},
    )


@workload_preset(
    "lotes-omega",
    "LoTES section 5.4.3: the Phi instance's requests, machine-dependent rates mu_jk = u_k * omega_jk",
    (
        Param(
            "omega",
            float,
            0.1,
            "spread of the per-configuration rate multiplier: omega_jk ~ U[1-Omega, 1+Omega]",
            min=0.0,
            max=1.0,
        ),
        Param(
            "phi",
            float,
            0.006,
            "Phi of the section 5.4.2 instance whose requests are used (the paper's '0.06', read as 0.006)",
            min=0.0,
            max=LOTES_BASE_REQUEST,
        ),
        _CLASS_SEED,
        REQUEST_CV_PARAM,
        LOAD_BASIS_PARAM,
        Param(
            "mu_form",
            str,
            "u_times_omega",
            "processing rate: u_times_omega (the paper's text, mu_jk = u_k omega_jk) or omega_over_u "
            "(mu_jk = omega_jk / u_k, the 5.4.2 rate times omega)",
            choices=("u_times_omega", "omega_over_u"),
        ),
    ),
    default_cluster="google-balanced",
    default_hours=1.0,
)
def lotes_omega(
    cluster: Cluster,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    omega: float = 0.1,
    phi: float = 0.006,
    class_seed: int | None = None,
    request_cv: float = REQUEST_CV,
    load_basis: str = "allocation",
    mu_form: str = "u_times_omega",
) -> Workload:
    """Section 5.4.3: machine-dependent processing times.

    Class parameters r_kl and u_k are those of the section 5.4.2 instance
    with the given ``phi`` (same ``class_seed``, or same run seed, gives the
    same r and u as ``lotes-phi``). Then ``omega_jk ~ U(1 - Omega, 1 + Omega]``
    per configuration and class (the open end keeps every rate positive) and
    ``mu_jk = u_k * omega_jk`` per hour. Jobs are drawn as in ``lotes-phi``.

    Which Phi: the paper says "r_kl generated from the previous experiment
    with Phi = 0.06", but that experiment only ran Phi in {0, 0.003, ...,
    0.015}, and 0.025 - 0.06 < 0 would make mean requests negative. We read
    it as a dropped zero, Phi = 0.006, one of the tested values; ``phi`` is a
    parameter (at most 0.025) so other readings can be run.

    Rate: the text says mu_jk = u_k omega_jk, whereas 5.4.2 used 1 / u_k.
    Taken literally, class k's mean processing time is 1 / (u_k omega_jk)
    hours, which is long (and heavy-tailed across instances) for small u_k.
    ``mu_form="omega_over_u"`` gives the other reading, omega_jk / u_k.

    As for ``lotes-phi``, ``load`` is relative to the allocation LP unless
    ``load_basis="assignment"`` (the paper's basis). Defaults to a one-hour window (the
    paper: 100 h).
    """
    if not (0 <= omega <= 1):
        raise ParameterError(f"omega must be in [0, 1] so every rate stays positive, got {omega}")
    if mu_form not in ("u_times_omega", "omega_over_u"):
        raise ParameterError(f"mu_form must be 'u_times_omega' or 'omega_over_u', got {mu_form!r}")
    r, u = lotes_class_parameters(cluster.resources, phi, _class_rng(rng, class_seed))
    # Drawn from the run's stream: the paper draws omega anew for every instance.
    om = uniform_open_low(1.0 - omega, 1.0 + omega, (cluster.n_configs, LOTES_CLASSES), rng)  # (M, K)
    mu_per_hour = u[None, :] * om if mu_form == "u_times_omega" else om / u[None, :]  # (M, K)
    classes = ClassTable(
        names=tuple(f"class {k + 1}" for k in range(LOTES_CLASSES)),
        requests=r,
        rates=mu_per_hour.T / HOUR_S,
        proportions=np.full(LOTES_CLASSES, 1.0 / LOTES_CLASSES),
    )
    return _finish(
        "lotes-omega",
        cluster,
        classes,
        rng,
        load=load,
        hours=hours,
        class_mean_work=np.ones(LOTES_CLASSES),
        machine_dependent=True,
        unit_cap=True,
        request_cv=request_cv,
        load_basis=load_basis,
        params={
            "omega": float(omega),
            "phi": float(phi),
            "class_seed": class_seed,
            "mu_form": mu_form,
            "time_unit": "hour",
            "u": u.tolist(),
            "r": r.tolist(),
            "omega_jk": om.tolist(),
        },
    )
