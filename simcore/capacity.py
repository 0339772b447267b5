"""The LoTES allocation LP (Stage 1, equations 1-5): the cluster's capacity bound.

The LP pools every configuration into one super-machine of capacity
``c_jl * n_j`` and treats the work of each job class as a fluid. Its optimum
lambda* is the largest total arrival rate (jobs per second) the relaxed system
sustains; workload generators set their arrival rate as a fraction of it.

We solve an equivalent, smaller LP. Constraint (3) ties the resources of a
class on a configuration together: ``delta_jkl c_jl / r_kl`` is the same for
every resource l. Writing that common value times ``n_j mu_jk`` as
``y_jk`` (the rate, in jobs per second, at which configuration j serves class
k) turns (2) into ``sum_j y_jk >= lambda alpha_k`` and (4) into
``sum_k y_jk r_kl / (c_jl n_j mu_jk) <= 1``. Every feasible delta gives a
feasible y and back, so lambda* is the same; delta is recovered as
``delta_jkl = y_jk r_kl / (c_jl n_j mu_jk)``. The LP is solved with HiGHS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, csr_matrix

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FloatArray, IntArray

#: Allocations below this share of a configuration are treated as zero when
#: deciding which classes a configuration serves (the sets K^j).
TOL = 1e-9


@dataclass(frozen=True)
class Allocation:
    """Solution of the allocation LP.

    ``lambda_star``: jobs per second. ``delta[j, k, l]``: fraction of resource
    l of configuration j devoted to class k. ``throughput[j, k]``: jobs per
    second of class k served by configuration j at lambda*.
    """

    lambda_star: float
    delta: FloatArray
    throughput: FloatArray

    def classes_of(self, config: int) -> list[int]:
        """The paper's K^j: classes with positive allocation on configuration j."""
        return [int(k) for k in np.flatnonzero(self.delta[config].max(axis=1) > TOL)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lambda_star": self.lambda_star,
            "delta": self.delta.tolist(),
            "throughput": self.throughput.tolist(),
            "K_sizes": [len(self.classes_of(j)) for j in range(self.delta.shape[0])],
        }


@dataclass(frozen=True)
class AllocationProblem:
    """The reduced allocation LP in HiGHS form, ready to solve (or to re-solve with other objectives).

    Variables: ``x[0]`` = lambda, ``x[1 + v]`` = y_jk for the usable pair
    ``pairs[v] = (j, k)``. ``a_ub x <= b_ub`` holds the rows (2) and (4).
    ``coef[j, k, l]`` = r_kl / (c_jl n_j mu_jk): the share of resource l of
    configuration j that one job per second of class k takes (0 if unusable).
    """

    shape: tuple[int, int]
    pairs: IntArray
    coef: FloatArray
    a_ub: csr_matrix
    b_ub: FloatArray

    @property
    def n_vars(self) -> int:
        return 1 + len(self.pairs)

    def solve(self, objective: FloatArray, lambda_min: float = 0.0) -> FloatArray:
        """Minimise ``objective @ x`` over the LP with lambda >= ``lambda_min``; returns x."""
        bounds = [(lambda_min, None)] + [(0, None)] * len(self.pairs)
        res = linprog(objective, A_ub=self.a_ub, b_ub=self.b_ub, bounds=bounds, method="highs")
        if res.status == 3:
            raise ParameterError("the allocation LP is unbounded: some class needs no resource any machine has")
        if res.status != 0:
            raise ParameterError(f"the allocation LP failed: {res.message}")
        return np.asarray(res.x, dtype=np.float64)

    def throughput(self, x: FloatArray) -> FloatArray:
        """y_jk (jobs per second), shape (M, K), from a solution vector ``x``."""
        y = np.zeros(self.shape)
        y[self.pairs[:, 0], self.pairs[:, 1]] = x[1:]
        return y

    def allocation(self, lambda_star: float, throughput: FloatArray) -> Allocation:
        """The :class:`Allocation` of throughputs y (M, K), delta recovered from y."""
        return Allocation(
            lambda_star=float(lambda_star), delta=throughput[:, :, None] * self.coef, throughput=throughput
        )


def allocation_problem(cluster: Cluster, classes: ClassTable) -> AllocationProblem:
    """Validate ``cluster`` and ``classes`` and build the allocation LP (LoTES eq. 1-5), unsolved."""
    c = cluster.capacity  # (M, R)
    n = cluster.counts.astype(np.float64)  # (M,)
    r = classes.requests  # (K, R)
    mu = classes.rates.T  # (M, K): the paper indexes mu_jk
    alpha = classes.proportions  # (K,)
    M, R = c.shape
    K = r.shape[0]
    if r.shape[1] != R:
        raise ParameterError(f"classes request {r.shape[1]} resources, cluster has {R}")
    if mu.shape != (M, K):
        raise ParameterError(f"rates must have shape (classes={K}, configurations={M}), got {classes.rates.shape}")
    if np.any(r < 0) or np.any(~np.isfinite(r)):
        raise ParameterError("class requests must be finite and non-negative")
    if np.any(r.max(axis=1) <= 0):
        raise ParameterError("every class must request a positive amount of some resource")
    if np.any(alpha < 0) or alpha.sum() <= 0:
        raise ParameterError("class proportions must be non-negative and not all zero")

    # usable[j, k]: configuration j can serve class k at all.
    with np.errstate(divide="ignore", invalid="ignore"):
        # As in the paper, jobs are a divisible fluid here: a class may be
        # allocated to a configuration whose single machine it would not fit.
        # Stage 2 (bins) is where discreteness enters.
        usable = (mu > 0) & (n[:, None] > 0)
        # coef[j, k, l] = r_kl / (c_jl n_j mu_jk): share of resource l of configuration j
        # that serving one job per second of class k takes.
        coef = r[None, :, :] / (c[:, None, :] * n[:, None, None] * mu[:, :, None])
    # A resource the configuration lacks (c_jl = 0) that the class needs makes the pair unusable.
    usable &= ~np.any(np.isinf(coef) | (np.isnan(coef) & (r[None, :, :] > 0)), axis=2)
    coef = np.where(usable[:, :, None], coef, 0.0)
    coef = np.nan_to_num(coef, nan=0.0, posinf=0.0)

    jk = np.argwhere(usable)  # variables y_jk for usable pairs only
    nv = 1 + len(jk)
    if len(jk) == 0:
        raise ParameterError(f"no class fits on any machine of cluster {cluster.name!r}")
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    b: list[float] = []
    row = 0
    # (2): lambda alpha_k - sum_j y_jk <= 0
    for k in range(K):
        rows.append(row)
        cols.append(0)
        vals.append(float(alpha[k]))
        for v, (_j, kk) in enumerate(jk):
            if kk == k:
                rows.append(row)
                cols.append(1 + v)
                vals.append(-1.0)
        b.append(0.0)
        row += 1
    # (4): sum_k coef_jkl y_jk <= 1
    for j in range(M):
        for l in range(R):
            any_entry = False
            for v, (jj, k) in enumerate(jk):
                if jj == j and coef[j, k, l] > 0:
                    rows.append(row)
                    cols.append(1 + v)
                    vals.append(float(coef[j, k, l]))
                    any_entry = True
            if any_entry:
                b.append(1.0)
                row += 1
    a_ub = coo_matrix((vals, (rows, cols)), shape=(row, nv)).tocsr()
    return AllocationProblem(shape=(M, K), pairs=jk, coef=coef, a_ub=a_ub, b_ub=np.array(b))


def allocation_lp(cluster: Cluster, classes: ClassTable) -> Allocation:
    """Solve the allocation LP for ``cluster`` and ``classes`` (LoTES eq. 1-5).

    HiGHS returns one optimal vertex; its support (the sets K^j) is one of
    possibly many (see :func:`simcore.schedulers.lotes.stage1.max_support_allocation`).
    """
    lp = allocation_problem(cluster, classes)
    obj = np.zeros(lp.n_vars)
    obj[0] = -1.0
    x = lp.solve(obj)
    return lp.allocation(float(x[0]), lp.throughput(x))
