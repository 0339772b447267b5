"""LoTES Stage 2, first step (section 4.2, Algorithm 1): non-dominated bins.

A *bin* is a multiset of job classes whose expected requests fit together on
one machine; it is *non-dominated* when adding one more job of any class of
K^j would exceed the machine's capacity in some resource. For each
configuration we enumerate every non-dominated bin over the classes of K^j.

How, and how it differs from the printed Algorithm 1: the paper's pseudo-code
is a depth-first search that fills greedily class by class and backtracks by
removing the last job added. Taken literally it also emits some dominated
bins (on the Figure 5 example it produces {1x2, 1x3}, which has room for
another job of size 2), although the text defines the output as the
non-dominated bins; we return exactly the non-dominated ones. We enumerate
the same search tree breadth-first with numpy: for every class but one, each
partial mix is expanded into all counts that still fit; the last class is
then filled to the maximum (any smaller count is dominated by construction);
finally the mixes with room for one more job of some class are dropped. The
class allowing the most jobs on its own goes last so that it never
multiplies the work (the paper also suggests ordering classes by size).

Combinatorial explosion is guarded: the number of candidate mixes (one per
feasible mix of all classes but the last, an upper bound on the number of
bins) is checked before every expansion against ``max_bins``, and a
:class:`~simcore.core.errors.ParameterError` names the configuration and the
count. Nothing is allocated beyond the limit, so enumeration never hangs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FloatArray, IntArray

# The engine's one fit rule and tolerance (simcore.core.view): a mix that fits exactly on
# paper must fit in floating point too, and exactly when the engine would take it.
from simcore.core.view import EPS

#: Default cap on candidate bins per configuration (memory: about
#: ``(classes + resources) * 8`` bytes per candidate).
DEFAULT_MAX_BINS = 500_000


def _max_fit(rem: FloatArray, r: FloatArray) -> IntArray:
    """How many jobs of request ``r`` fit into each row of ``rem`` (shape (n, R))."""
    pos = r > 0
    if not pos.any():  # a class requesting nothing would fit without bound
        raise ParameterError("a job class requests nothing of any resource; bins would be unbounded")
    # n jobs fit when n * r <= rem + EPS (the engine's tolerance) in every resource asked for.
    per = (np.maximum(rem[:, pos], 0.0) + EPS) / r[pos]
    return np.floor(per.min(axis=1)).astype(np.int64)  # type: ignore[no-any-return]


def nondominated_bins(
    capacity: FloatArray,
    requests: FloatArray,
    *,
    max_bins: int = DEFAULT_MAX_BINS,
    label: str = "machine",
) -> IntArray:
    """All non-dominated bins of classes with expected ``requests`` on one machine.

    ``capacity``: shape (R,), one machine's capacity. ``requests``: shape
    (d, R), the expected request of each class considered (the paper's
    K^j). Returns an int array of shape (B, d): row i is bin i, column k the
    number of jobs of class k in it (the paper's N_ijk). Rows are in
    lexicographically decreasing order of the counts (greedy-first, as
    Algorithm 1 visits them). With no classes, or none that fits, the only
    bin is the empty one. Raises ParameterError naming ``label`` when more
    than ``max_bins`` candidates would be enumerated.
    """
    cap = np.asarray(capacity, dtype=np.float64)
    req = np.asarray(requests, dtype=np.float64).reshape(-1, len(cap))
    d = len(req)
    if d == 0:
        return np.zeros((1, 0), dtype=np.int64)
    alone = np.array([_max_fit(cap[None, :], r)[0] for r in req])
    # Classes that fit fewest times go first; the one fitting most goes last
    # (its count is forced, so it does not multiply the candidates).
    order = np.argsort(alone, kind="stable")
    counts = np.zeros((1, 0), dtype=np.int64)
    rem = cap[None, :].copy()
    for idx in order[:-1]:
        r = req[idx]
        m = _max_fit(rem, r)
        sizes = m + 1
        total = int(sizes.sum())
        if total > max_bins:
            raise ParameterError(
                f"bin enumeration for {label} would consider at least {total} candidate bins "
                f"({d} classes), above the limit max_bins={max_bins}; raise max_bins or use fewer classes"
            )
        parent = np.repeat(np.arange(len(m)), sizes)
        offset = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        c = m[parent] - offset  # counts from the greedy maximum down to zero
        counts = np.hstack([counts[parent], c[:, None]])
        rem = rem[parent] - c[:, None] * r[None, :]
    r = req[order[-1]]
    c = _max_fit(rem, r)
    counts = np.hstack([counts, c[:, None]])
    rem = rem - c[:, None] * r[None, :]
    room: NDArray[np.bool_] = (rem[:, None, :] >= (req - EPS)[None, :, :]).all(axis=2).any(axis=1)
    out = np.empty_like(counts)
    out[:, order] = counts
    out = out[~room]
    # Lexicographically decreasing rows: deterministic and readable.
    keys = tuple(-out[:, k] for k in range(d - 1, -1, -1))
    return out[np.lexsort(keys)] if len(out) > 1 else out


def config_bins(
    cluster: Cluster,
    classes: ClassTable,
    classes_of: tuple[tuple[int, ...], ...],
    *,
    max_bins: int = DEFAULT_MAX_BINS,
) -> list[IntArray]:
    """Non-dominated bins of every configuration over its K^j.

    Returns one int array per configuration of shape (B_j, K) with the
    counts N_ijk in the columns of all K classes (zero outside K^j).
    """
    out = []
    K = classes.n_classes
    for j in range(cluster.n_configs):
        ks = list(classes_of[j])
        b = nondominated_bins(
            cluster.capacity[j],
            classes.requests[ks],
            max_bins=max_bins,
            label=f"configuration {j} ({cluster.config_names[j]!r})",
        )
        full = np.zeros((len(b), K), dtype=np.int64)
        full[:, ks] = b
        out.append(full)
    return out
