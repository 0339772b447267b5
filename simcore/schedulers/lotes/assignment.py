"""LoTES Stage 2, second step (section 4.2, eq. 6-10): the machine assignment LP and its rounding.

Variables are lambda and x_ij, the number of machines of configuration j
that emulate bin i. Substituting (8), Delta_jkl = r_kl * sum_i N_ijk x_ij,
into (7) gives, for every resource with r_kl > 0, the same inequality

    sum_j mu_jk sum_i N_ijk x_ij >= lambda alpha_k,

so the LP is solved with one row per class (|K| rows, not |K||R|) plus the
|M| equalities (9); the resource-indexed Delta_jkl are recovered from the
solution. This is an exact reformulation, not an approximation. The LP is
solved with HiGHS on a sparse matrix.

Rounding follows the paper: per configuration, q_j = sum_i (x_ij - floor
x_ij); the fractional x_ij are sorted by fractionality, non-increasing
(ties by bin order: stable sort), the first q_j are rounded up and the rest
down. Delta and lambda are then recomputed from the integer solution:
lambda_rounded = min_k (sum_j mu_jk sum_i N_ijk x_ij) / alpha_k.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FloatArray, IntArray
from simcore.core.view import EPS
from simcore.schedulers.lotes.bins import DEFAULT_MAX_BINS, config_bins
from simcore.schedulers.lotes.stage1 import Stage1, fit_classes, solve_stage1

#: x_ij within this distance of an integer count as integral when rounding.
INT_TOL = 1e-7


@dataclass(frozen=True)
class Assignment:
    """Bins, the LP and rounded machine counts, and the dispatch proportions.

    ``bins[j]``: (B_j, K) counts N_ijk. ``x_lp[j]``/``x[j]``: machines of
    configuration j per bin, LP and rounded. ``slots_lp``/``slots`` (M, K):
    sum_i N_ijk x_ij, jobs of class k that configuration j runs at once in
    the plan (Delta_jkl = slots_jk r_kl). ``lambda_lp``, ``lambda_rounded``:
    jobs per second. ``rho`` (M, K): the share of class-k arrivals sent to
    configuration j.
    """

    bins: tuple[IntArray, ...]
    x_lp: tuple[FloatArray, ...]
    x: tuple[IntArray, ...]
    lambda_lp: float
    lambda_rounded: float
    slots_lp: FloatArray
    slots: FloatArray
    rho: FloatArray


@dataclass(frozen=True)
class OfflinePlan:
    """Everything stages 1 and 2 computed, as the dispatcher and the dashboard need it."""

    classes: ClassTable
    stage1: Stage1
    classes_of: tuple[tuple[int, ...], ...]
    assignment: Assignment
    timings_s: dict[str, float] = field(default_factory=dict)


def round_assignment(x: FloatArray, n: int) -> IntArray:
    """The paper's rounding of one configuration's LP solution ``x`` (sums to ``n``).

    Values within INT_TOL of an integer are snapped first so LP noise does
    not count as fractionality.
    """
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    near = np.abs(x - np.rint(x)) < INT_TOL
    x = np.where(near, np.rint(x), x)
    fl = np.floor(x)
    frac = x - fl
    out = fl.astype(np.int64)
    q = int(n - out.sum())  # = sum of fractionalities, an integer when sum x = n
    if q < 0 or q > int((frac > 0).sum()):
        raise ParameterError(f"machine assignment LP solution does not sum to {n} machines (sum {x.sum():.9g})")
    if q:
        order = np.argsort(-frac, kind="stable")
        out[order[:q]] += 1
    return out


def _lambda_of(slots: FloatArray, mu: FloatArray, alpha: FloatArray) -> float:
    """Largest lambda satisfying (7) for fixed slots (M, K); mu is (M, K)."""
    served = (slots * mu).sum(axis=0)
    pos = alpha > 0
    return float(np.min(served[pos] / alpha[pos])) if pos.any() else 0.0


def _rho(slots: FloatArray, mu: FloatArray, weighting: str) -> FloatArray:
    w = slots * mu if weighting == "throughput" else slots
    tot = w.sum(axis=0)
    return np.divide(w, tot[None, :], out=np.zeros_like(w), where=tot[None, :] > 0)  # type: ignore[no-any-return]


def assignment_lp(
    cluster: Cluster,
    classes: ClassTable,
    bins: list[IntArray],
    *,
    rho_weighting: str = "paper",
) -> Assignment:
    """Solve the machine assignment LP (eq. 6-10) over ``bins`` and round it.

    ``rho_weighting``: "paper" gives rho_jk = Delta_jkl / sum_m Delta_mkl
    (section 4.3.1); "throughput" weights by mu_jk as well (differs only when
    processing rates depend on the configuration).
    """
    mu = fit_classes(classes, cluster).rates.T  # (M, K)
    alpha = classes.proportions
    n = cluster.counts
    M, K = mu.shape
    sizes = np.array([len(b) for b in bins])
    offsets = 1 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    nv = 1 + int(sizes.sum())
    rows, cols, vals = [np.arange(K)], [np.zeros(K, dtype=np.int64)], [alpha.astype(np.float64)]
    eq_rows, eq_cols = [], []
    for j, b in enumerate(bins):
        i, k = np.nonzero(b)
        rows.append(k)
        cols.append(offsets[j] + i)
        vals.append(-mu[j, k] * b[i, k])
        eq_rows.append(np.full(len(b), j))
        eq_cols.append(offsets[j] + np.arange(len(b)))
    a_ub = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(K, nv)).tocsr()
    a_eq = coo_matrix((np.ones(nv - 1), (np.concatenate(eq_rows), np.concatenate(eq_cols))), shape=(M, nv)).tocsr()
    obj = np.zeros(nv)
    obj[0] = -1.0
    res = linprog(
        obj, A_ub=a_ub, b_ub=np.zeros(K), A_eq=a_eq, b_eq=n.astype(np.float64), bounds=(0, None), method="highs"
    )
    if res.status != 0:
        raise ParameterError(f"the machine assignment LP failed: {res.message}")
    x_all = res.x[1:]
    x_lp = tuple(x_all[offsets[j] - 1 : offsets[j] - 1 + sizes[j]].copy() for j in range(M))
    x = [round_assignment(x_lp[j], int(n[j])) for j in range(M)]
    return assignment_from_counts(
        cluster, classes, bins, x, x_lp=list(x_lp), lambda_lp=float(res.x[0]), rho_weighting=rho_weighting
    )


def assignment_from_counts(
    cluster: Cluster,
    classes: ClassTable,
    bins: list[IntArray],
    x: list[IntArray],
    *,
    x_lp: list[FloatArray] | None = None,
    lambda_lp: float | None = None,
    rho_weighting: str = "paper",
) -> Assignment:
    """An :class:`Assignment` from integer machine counts ``x[j]`` per bin (Delta, lambda, rho recomputed).

    Used after rounding, and to build a plan by hand (tests, or a plan
    computed elsewhere). ``x[j]`` must sum to the machine count of j.
    """
    mu = fit_classes(classes, cluster).rates.T
    M, K = mu.shape
    xi = tuple(np.asarray(v, dtype=np.int64) for v in x)
    for j in range(M):
        if len(xi[j]) != len(bins[j]) or int(xi[j].sum()) != int(cluster.counts[j]):
            raise ParameterError(
                f"configuration {j}: {int(xi[j].sum())} machines assigned to {len(xi[j])} counts for "
                f"{len(bins[j])} bins, expected {int(cluster.counts[j])} machines"
            )
    slots = np.array([xi[j] @ bins[j] for j in range(M)], dtype=np.float64).reshape(M, K)
    xl = tuple(np.asarray(v, dtype=np.float64) for v in (x_lp if x_lp is not None else xi))
    slots_lp = np.array([xl[j] @ bins[j] for j in range(M)]).reshape(M, K)
    lam = _lambda_of(slots, mu, classes.proportions)
    return Assignment(
        bins=tuple(bins),
        x_lp=xl,
        x=xi,
        lambda_lp=lam if lambda_lp is None else lambda_lp,
        lambda_rounded=lam,
        slots_lp=slots_lp,
        slots=slots,
        rho=_rho(slots, mu, rho_weighting),
    )


def _cover_all_classes(
    cluster: Cluster, classes: ClassTable, ks: tuple[tuple[int, ...], ...]
) -> tuple[tuple[int, ...], ...]:
    """K^j, widened so that every class with alpha_k > 0 can appear in some bin.

    The allocation LP is a fluid model: it may give a class only to
    configurations whose single machine cannot hold one job of it. Such a
    class would be in no bin, the assignment LP's lambda would be 0 and its
    jobs could never leave their queue. We then add the class to K^j of every
    configuration (with machines and a positive rate) where it fits.
    """
    cap, req, mu = cluster.capacity, classes.requests, fit_classes(classes, cluster).rates.T
    fits = (cap[:, None, :] >= (req - EPS)[None, :, :]).all(axis=2) & (cluster.counts[:, None] > 0) & (mu > 0)
    sets = [set(k) for k in ks]
    for k in range(classes.n_classes):
        if classes.proportions[k] <= 0 or any(fits[j, k] and k in sets[j] for j in range(cluster.n_configs)):
            continue
        where = np.flatnonzero(fits[:, k])
        if len(where) == 0:
            raise ParameterError(
                f"the expected request of job class {classes.names[k]!r} ({req[k].tolist()}) fits on no machine "
                f"of cluster {cluster.name!r}"
            )
        for j in where:
            sets[j].add(int(k))
    return tuple(tuple(sorted(s)) for s in sets)


def plan_offline(
    cluster: Cluster,
    classes: ClassTable,
    *,
    max_bins: int = DEFAULT_MAX_BINS,
    rho_weighting: str = "paper",
    k_sets: str = "vertex",
) -> OfflinePlan:
    """Stages 1 and 2: allocation LP, K^j, bins, assignment LP, rounding, rho.

    ``k_sets``: which optimum of the allocation LP K^j is read from, "vertex"
    or "interior" (largest support; more classes per configuration, hence
    more bins), see :mod:`simcore.schedulers.lotes.stage1`.
    """
    classes = fit_classes(classes, cluster)
    t0 = time.perf_counter()
    s1 = solve_stage1(cluster, classes, k_sets=k_sets)
    t1 = time.perf_counter()
    ks = _cover_all_classes(cluster, classes, s1.classes_of)
    try:
        bins = config_bins(cluster, classes, ks, max_bins=max_bins)
    except ParameterError as e:
        if k_sets == "vertex":
            raise
        sizes = ", ".join(str(len(k)) for k in ks)
        raise ParameterError(
            f"{e} (k_sets={k_sets!r} gives K^j sizes {sizes}; k_sets='vertex' gives fewer classes per configuration)"
        ) from None
    t2 = time.perf_counter()
    asg = assignment_lp(cluster, classes, bins, rho_weighting=rho_weighting)
    t3 = time.perf_counter()
    return OfflinePlan(
        classes=classes,
        stage1=s1,
        classes_of=ks,
        assignment=asg,
        timings_s={"stage1": t1 - t0, "bins": t2 - t1, "assignment": t3 - t2},
    )


def plan_to_dict(plan: OfflinePlan, cluster: Cluster, max_listed_bins: int = 200) -> dict[str, Any]:
    """JSON-ready description of the plan (Scheduler.offline_solution).

    Per configuration, only the bins that machines emulate (rounded x > 0)
    or that the LP uses (x_lp > 0) are listed, at most ``max_listed_bins``,
    most machines first; ``n_bins`` is the number enumerated.
    """
    a, cls = plan.assignment, plan.classes
    configs = []
    for j in range(cluster.n_configs):
        b, xl, x = a.bins[j], a.x_lp[j], a.x[j]
        used = np.flatnonzero((x > 0) | (xl > INT_TOL))
        used = used[np.lexsort((-xl[used], -x[used]))][:max_listed_bins]
        configs.append(
            {
                "name": cluster.config_names[j],
                "machines": int(cluster.counts[j]),
                "capacity": cluster.capacity[j].tolist(),
                "K": [cls.names[k] for k in plan.stage1.classes_of[j]],
                "K_used": [cls.names[k] for k in plan.classes_of[j]],
                "n_bins": int(len(b)),
                "bins": [
                    {
                        "counts": {cls.names[k]: int(b[i, k]) for k in np.flatnonzero(b[i])},
                        "machines": int(x[i]),
                        "machines_lp": float(xl[i]),
                    }
                    for i in used
                ],
                "rho": a.rho[j].tolist(),
            }
        )
    return {
        "scheduler": "lotes",
        "classes": list(cls.names),
        "class_requests": cls.requests.tolist(),
        "class_proportions": cls.proportions.tolist(),
        "lambda_stage1": plan.stage1.lambda_star,
        "lambda_assignment_lp": a.lambda_lp,
        "lambda_rounded": a.lambda_rounded,
        "k_sets": plan.stage1.k_sets,
        "K_sizes": [len(k) for k in plan.stage1.classes_of],
        "K_sizes_vertex": [len(k) for k in plan.stage1.vertex_classes_of],
        "stage1_face_lps": plan.stage1.face_lps,
        "bins_per_config": [int(len(b)) for b in a.bins],
        "delta_stage1": plan.stage1.allocation.delta.tolist(),
        "slots_lp": a.slots_lp.tolist(),
        "slots_rounded": a.slots.tolist(),
        "rho": a.rho.tolist(),
        "configs": configs,
        "timings_s": dict(plan.timings_s),
    }
