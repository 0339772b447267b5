"""Job classes from k-means on job requests (LoTES section 5.3.2).

Traces such as Google's define no job classes; the LoTES paper follows
Mishra et al. and clusters the jobs of the first day with k-means (Lloyd's
algorithm), keeps those classes fixed, and so every later job belongs to the
class of its nearest centroid. :func:`kmeans_classes` does exactly that and
returns the per-job labels and the :class:`~simcore.core.model.ClassTable` the
LoTES offline stages need (expected requests, rates, proportions).

Everything is vectorised numpy; randomness comes only from the injected
generator (k-means++ seeding), so a seed fixes the result.
"""

from __future__ import annotations

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, FloatArray, IntArray, Workload

#: Rows per block when computing point-to-centroid distances (bounds memory
#: at about this many times k floats).
CHUNK_ROWS = 65_536


def _sq_dist(x: FloatArray, c: FloatArray, xx: FloatArray | None = None) -> FloatArray:
    """Squared Euclidean distances, shape (len(x), len(c)); ``xx`` = row norms of ``x`` if known.

    With few features (requests of 2-3 resources, maybe a duration) the
    direct per-feature sum is several times faster than the matrix-product
    expansion, whose inner dimension is too small for BLAS to pay off.
    """
    if x.shape[1] <= 4:
        d = np.zeros((len(x), len(c)))
        for f in range(x.shape[1]):
            diff = x[:, f, None] - c[None, :, f]
            diff *= diff
            d += diff
        return d
    if xx is None:
        xx = np.einsum("ij,ij->i", x, x)
    d = xx[:, None] - 2.0 * (x @ c.T) + np.einsum("ij,ij->i", c, c)[None, :]
    return np.maximum(d, 0.0)  # type: ignore[no-any-return]


def nearest(x: FloatArray, centroids: FloatArray, xx: FloatArray | None = None) -> tuple[IntArray, FloatArray]:
    """Index of the nearest centroid of every row of ``x`` and the squared distance to it."""
    n = len(x)
    if xx is None:
        xx = np.einsum("ij,ij->i", x, x)
    lab = np.empty(n, dtype=np.int64)
    dist = np.empty(n)
    for lo in range(0, n, CHUNK_ROWS):
        d = _sq_dist(x[lo : lo + CHUNK_ROWS], centroids, xx[lo : lo + CHUNK_ROWS])
        i = d.argmin(axis=1)
        lab[lo : lo + CHUNK_ROWS] = i
        dist[lo : lo + CHUNK_ROWS] = d[np.arange(len(i)), i]
    return lab, dist


def _kmeans_pp(x: FloatArray, k: int, rng: np.random.Generator) -> FloatArray:
    """k-means++ seeding: each next centre drawn with probability proportional to D^2."""
    c = np.empty((k, x.shape[1]))
    c[0] = x[rng.integers(len(x))]
    d2 = _sq_dist(x, c[:1])[:, 0]
    for i in range(1, k):
        tot = d2.sum()
        idx = (
            int(rng.integers(len(x)))
            if tot <= 0
            else int(min(np.searchsorted(np.cumsum(d2), rng.random() * tot, side="right"), len(x) - 1))
        )
        c[i] = x[idx]
        d2 = np.minimum(d2, _sq_dist(x, c[i : i + 1])[:, 0])
    return c


def lloyd(
    x: FloatArray, k: int, rng: np.random.Generator, *, max_iter: int = 100, tol: float = 1e-10
) -> tuple[FloatArray, IntArray, float]:
    """Lloyd's algorithm from a k-means++ start: (centroids (k, F), labels (n,), inertia).

    An empty cluster is re-seeded with the point farthest from its centroid,
    so exactly ``k`` clusters come back (``x`` must hold at least ``k``
    distinct points).
    """
    c = _kmeans_pp(x, k, rng)
    xx = np.einsum("ij,ij->i", x, x)  # row norms, reused every iteration
    lab, dist = nearest(x, c, xx)
    new: FloatArray
    for _ in range(max_iter):
        cnt = np.bincount(lab, minlength=k)
        new = np.stack([np.bincount(lab, weights=x[:, f], minlength=k) for f in range(x.shape[1])], axis=1)
        empty = cnt == 0
        new[~empty] /= cnt[~empty, None]
        for e in np.flatnonzero(empty):
            far = int(dist.argmax())
            new[e] = x[far]
            dist[far] = 0.0
        shift = float(((new - c) ** 2).sum())
        c = new
        new_lab, dist = nearest(x, c, xx)
        # Converged: no job changes class (the centroids are then a fixed point),
        # or the centroids no longer move.
        if np.array_equal(new_lab, lab) or shift <= tol:
            lab = new_lab
            break
        lab = new_lab
    return c, lab, float(dist.sum())


def _check_kmeans(workload: Workload, k: int, window_s: float, n_configs: int) -> None:
    """:func:`kmeans_classes`'s arguments, each refused with what was asked."""
    if k < 1:
        raise ParameterError(f"the number of k-means classes must be at least 1, got {k}")
    if not window_s >= 0:
        raise ParameterError(f"the k-means training window must be non-negative seconds, got {window_s}")
    n = workload.n_jobs
    if n < k:
        raise ParameterError(f"workload {workload.name!r} has {n} jobs, fewer than the {k} k-means classes asked for")
    if n_configs < 1:
        raise ParameterError(f"n_configs must be at least 1, got {n_configs}")


def _best_lloyd(
    x: FloatArray, k: int, rng: np.random.Generator, n_init: int, max_iter: int
) -> tuple[FloatArray, IntArray]:
    """Lloyd's algorithm ``n_init`` times (at least once) from k-means++ seeds: the centroids and labels of the run
    with the least within-class sum of squares (the first of equal ones)."""
    best: tuple[FloatArray, IntArray, float] | None = None
    for _ in range(max(1, n_init)):
        run = lloyd(x, k, rng, max_iter=max_iter)
        if best is None or run[2] < best[2]:
            best = run
    assert best is not None
    return best[0], best[1]


def kmeans_classes(
    workload: Workload,
    k: int,
    window_s: float,
    rng: np.random.Generator,
    use_duration: bool = False,
    *,
    n_init: int = 4,
    max_iter: int = 100,
    n_configs: int = 1,
) -> tuple[IntArray, ClassTable]:
    """Job classes by k-means on the jobs submitted in ``[0, window_s)`` seconds.

    Features are the jobs' requests (one column per resource, in the
    workload's units; the Google traces are normalised to the largest
    machine, as in the paper). With ``use_duration`` the job's duration
    (``workload.work``, seconds), divided by the longest duration in the
    window so that it weighs like a normalised request, is a further
    feature; note that a job's duration is only known once it has run.

    Lloyd's algorithm runs ``n_init`` times from k-means++ seeds drawn from
    ``rng``; the run with the least within-class sum of squares is kept, so
    the result is a function of the seed. If the window holds fewer than
    ``k`` jobs, the first ``k`` jobs are used; if there are fewer than ``k``
    distinct feature vectors, that many classes are returned.

    Returns ``(labels, classes)``: ``labels[z]`` in ``0..K-1`` for every job
    (jobs after the window get their nearest centroid), and a ClassTable
    named ``k1..kK``, ordered by total mean request, whose ``requests`` are
    the mean request of each class's window jobs, ``rates`` (shape
    ``(K, n_configs)``, machine-independent) one over their mean duration
    (jobs per second), and ``proportions`` their share of the window's jobs.
    """
    _check_kmeans(workload, k, window_s, n_configs)
    n = workload.n_jobs
    n_train = max(int(np.searchsorted(workload.submit, window_s, side="left")), k)
    req = workload.request
    work = workload.work
    feats = [req]
    if use_duration:
        scale = float(work[:n_train].max())
        feats.append((work / (scale if scale > 0 else 1.0))[:, None])
    x_all = np.hstack(feats).astype(np.float64)
    x = x_all[:n_train]
    distinct = len(np.unique(x, axis=0))
    kk = min(k, distinct)

    centroids, lab = _best_lloyd(x, kk, rng, n_init, max_iter)

    # Deterministic class order: by total mean request, then lexicographically.
    cnt = np.bincount(lab, minlength=kk).astype(np.float64)
    mean_req = (
        np.stack([np.bincount(lab, weights=req[:n_train, f], minlength=kk) for f in range(req.shape[1])], axis=1)
        / cnt[:, None]
    )
    order = np.lexsort(tuple(mean_req[:, f] for f in range(req.shape[1] - 1, -1, -1)) + (mean_req.sum(axis=1),))
    rank = np.empty(kk, dtype=np.int64)
    rank[order] = np.arange(kk)
    centroids = centroids[order]
    mean_req = mean_req[order]
    cnt = cnt[order]
    mean_work = np.bincount(rank[lab], weights=work[:n_train], minlength=kk) / cnt

    labels = np.empty(n, dtype=np.int64)
    labels[:n_train] = rank[lab]
    if n > n_train:
        labels[n_train:] = nearest(x_all[n_train:], centroids)[0]
    rates = 1.0 / np.maximum(mean_work, 1e-9)
    table = ClassTable(
        names=tuple(f"k{i + 1}" for i in range(kk)),
        requests=mean_req,
        rates=np.repeat(rates[:, None], n_configs, axis=1),
        proportions=cnt / cnt.sum(),
    )
    return labels, table
