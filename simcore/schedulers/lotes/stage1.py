"""LoTES Stage 1 (section 4.1): the allocation LP and the sets K^j.

The LP itself lives in :func:`simcore.capacity.allocation_problem` (the
workload presets use it for their arrival rates); this module adapts a class
table to the cluster, solves the LP and reads off K^j, the classes with
positive allocation delta*_jkl on each configuration.

Which optimum. The allocation LP usually has a large optimal face (on Table 1
with Table 2's classes, many class/configuration pairs can carry work at
lambda* or not), and K^j depends on the optimal solution taken:

* ``k_sets="vertex"`` (default): the optimal vertex HiGHS returns, as the
  paper takes the solution its solver (CPLEX) returned. A vertex has at most
  as many positive y_jk as the LP has rows, so K^j are small.
* ``k_sets="interior"``: an optimal solution of largest support, i.e. a
  point in the relative interior of the optimal face. Every pair (j, k) that
  is positive in *some* solution with lambda = lambda* is positive in it,
  so K^j is the union of the K^j of all optimal solutions (and contains the
  vertex's). See :func:`max_support_allocation` for how it is found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.capacity import TOL, Allocation, AllocationProblem, allocation_problem
from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FloatArray

#: The choices of the ``k_sets`` option.
K_SETS = ("vertex", "interior")

#: A pair joins K^j in the interior option when some optimal solution gives it
#: at least this share of a resource of configuration j. Far above LP noise
#: (observed shares of pairs that cannot carry work: < 1e-9) and far below
#: shares of pairs that can (observed: > 1e-3 on the Table 1 and section 5.4 instances).
FACE_TOL = 1e-6


@dataclass(frozen=True)
class Stage1:
    """The allocation LP's solution and, per configuration j, the sorted list K^j.

    ``k_sets``: which optimal solution K^j was read from ("vertex" or
    "interior"). ``vertex_classes_of``: K^j of the optimal vertex (equal to
    ``classes_of`` for "vertex"). ``face_lps``: LPs solved beyond the first to
    find the interior solution (0 for "vertex").
    """

    allocation: Allocation
    classes_of: tuple[tuple[int, ...], ...]
    k_sets: str = "vertex"
    vertex_classes_of: tuple[tuple[int, ...], ...] = ()
    face_lps: int = 0

    @property
    def lambda_star(self) -> float:
        """lambda* of the allocation LP, jobs per second."""
        return self.allocation.lambda_star


def fit_classes(classes: ClassTable, cluster: Cluster) -> ClassTable:
    """``classes`` with rates of shape (K, M) for ``cluster``.

    A table whose rates have a single column (machine-independent processing,
    e.g. from :func:`simcore.workloads.classify.kmeans_classes`) is broadcast to every
    configuration.
    """
    rates = classes.rates
    if rates.ndim == 1:
        rates = rates[:, None]
    if rates.shape[1] == 1 and cluster.n_configs != 1:
        rates = np.repeat(rates, cluster.n_configs, axis=1)
    if rates.shape != (classes.n_classes, cluster.n_configs):
        raise ParameterError(
            f"class rates have shape {classes.rates.shape}, expected ({classes.n_classes} classes, "
            f"{cluster.n_configs} configurations of cluster {cluster.name!r})"
        )
    if rates is classes.rates:
        return classes
    return ClassTable(classes.names, classes.requests, rates, classes.proportions)


def _sets(support: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(k) for k in np.flatnonzero(row)) for row in support)


def max_support_allocation(lp: AllocationProblem, vertex: FloatArray) -> tuple[Allocation, np.ndarray, int]:
    """An optimal solution of largest support, from the optimal vertex ``vertex`` (HiGHS's x).

    The optimal face is the allocation LP with lambda fixed at lambda*
    (``vertex[0]``, as a lower bound on lambda: nothing larger is feasible).
    It is convex, so the average of optimal solutions is optimal and is
    positive wherever any of them is. We therefore collect solutions until
    no further pair can be made positive: starting from the vertex, solve
    "maximise the summed shares max_l delta_jkl of the pairs not yet
    positive" over the face; the optimum is a vertex, and if it makes no new
    pair's share exceed FACE_TOL then no remaining pair can carry more than
    (their number) x FACE_TOL, i.e. none can be positive beyond noise. Each
    round covers at least one new pair, so at most (pairs) LPs are solved,
    typically two to four. The result is the average of the collected
    solutions, with pairs that were never covered set to exactly zero (they
    hold LP noise only).

    Why lambda is fixed exactly rather than at lambda*(1 - eps): a relative
    slack eps in lambda lets a configuration with few machines take a share
    of order eps x lambda* / (its capacity) of anything, e.g. 1e-4 on the
    5-machine configurations of Table 1 for eps = 1e-9, which no threshold
    separates from real allocations. At lambda = lambda* exactly the pairs
    off the optimal face get shares below 1e-9.

    Returns the allocation (its ``lambda_star`` is the vertex's), the
    support (M, K) bool, and the number of LPs solved. Deterministic: the
    LPs and their order depend only on the problem.
    """
    lam = float(vertex[0])
    weight = lp.coef.max(axis=2)[lp.pairs[:, 0], lp.pairs[:, 1]]  # share per job/s, per pair
    covered = vertex[1:] * weight > TOL  # the vertex's K^j, by the same rule as Allocation.classes_of
    solutions = [vertex]
    n_lps = 0
    while not covered.all():
        obj = np.zeros(lp.n_vars)
        obj[1:] = np.where(covered, 0.0, -weight)
        x = lp.solve(obj, lambda_min=lam)
        n_lps += 1
        new = ~covered & (x[1:] * weight > FACE_TOL)
        if not new.any():
            break
        solutions.append(x)
        covered |= new
    mean = np.mean(solutions, axis=0)
    mean[1:] = np.where(covered, mean[1:], 0.0)
    y = lp.throughput(mean)
    support = np.zeros(lp.shape, dtype=bool)
    support[lp.pairs[covered, 0], lp.pairs[covered, 1]] = True
    return lp.allocation(lam, y), support, n_lps


def solve_stage1(cluster: Cluster, classes: ClassTable, k_sets: str = "vertex") -> Stage1:
    """Solve the allocation LP (eq. 1-5) and collect K^j for every configuration.

    ``k_sets``: "vertex" (K^j of HiGHS's optimal vertex) or "interior" (K^j
    of a largest-support optimal solution, see :func:`max_support_allocation`).
    lambda* is the same either way.
    """
    if k_sets not in K_SETS:
        raise ParameterError(f"k_sets must be one of {', '.join(K_SETS)}; got {k_sets!r}")
    lp = allocation_problem(cluster, fit_classes(classes, cluster))
    obj = np.zeros(lp.n_vars)
    obj[0] = -1.0
    x = lp.solve(obj)
    vertex = lp.allocation(float(x[0]), lp.throughput(x))
    vks = tuple(tuple(vertex.classes_of(j)) for j in range(cluster.n_configs))
    if k_sets == "vertex":
        return Stage1(allocation=vertex, classes_of=vks, k_sets=k_sets, vertex_classes_of=vks)
    alloc, support, n_lps = max_support_allocation(lp, x)
    return Stage1(allocation=alloc, classes_of=_sets(support), k_sets=k_sets, vertex_classes_of=vks, face_lps=n_lps)
