"""Reusable pieces of synthetic workloads: arrivals, classes, requests, work.

Every function takes an injected :class:`numpy.random.Generator` and is
vectorised: it draws whole arrays at once, so a ten-million-job workload is
generated in seconds with memory proportional to the number of jobs. Under a
given generator state the output is deterministic.

Units: times in seconds unless a name says otherwise; rates in events per
second; resource amounts in the cluster's unit (the Google presets normalise
to the largest machine, so requests lie in [0, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

from simcore.core.errors import ParameterError
from simcore.core.model import FloatArray, IntArray

#: Poisson arrivals are drawn in blocks of this many inter-arrival times at
#: most (8 bytes each), so an overestimated block never costs more than 64 MB.
ARRIVAL_BLOCK = 8_000_000

#: Jobs per block when drawing requests: the inverse-CDF draw makes about ten
#: temporaries of this many rows (2^20 rows x 2 resources x 8 bytes = 16 MB each).
REQUEST_CHUNK = 1 << 20


def poisson_arrivals(rate: float, horizon_s: float, rng: np.random.Generator) -> FloatArray:
    """Arrival times (s) of a Poisson process of ``rate`` jobs/s on ``[0, horizon_s)``.

    Drawn as cumulative sums of exponential inter-arrival times (mean
    ``1 / rate`` seconds), so the result is sorted without a sort. Blocks are
    sized from the expected count plus six standard deviations; a second
    block is needed only with negligible probability.
    """
    if not (rate >= 0 and math.isfinite(rate)):
        raise ParameterError(f"arrival rate must be a finite non-negative number of jobs/s, got {rate}")
    if not (horizon_s >= 0 and math.isfinite(horizon_s)):
        raise ParameterError(f"horizon must be a finite non-negative number of seconds, got {horizon_s}")
    if rate == 0 or horizon_s == 0:
        return np.zeros(0)
    expected = rate * horizon_s
    parts: list[FloatArray] = []
    t0 = 0.0
    while True:
        need = expected - (rate * t0)
        block = int(min(ARRIVAL_BLOCK, max(16.0, need + 6.0 * math.sqrt(max(need, 1.0)) + 16.0)))
        gaps = rng.exponential(1.0 / rate, size=block)
        times = t0 + np.cumsum(gaps)
        if times[-1] >= horizon_s:
            parts.append(times[: int(np.searchsorted(times, horizon_s, side="left"))])
            break
        parts.append(times)
        t0 = float(times[-1])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def choose_classes(proportions: ArrayLike, size: int, rng: np.random.Generator) -> IntArray:
    """Class index of each of ``size`` jobs, class ``k`` with probability ``proportions[k]``.

    Proportions are normalised to sum to one; a class of proportion zero is
    never chosen.
    """
    p = np.asarray(proportions, dtype=np.float64)
    if p.ndim != 1 or len(p) == 0 or np.any(p < 0) or not np.isfinite(p).all() or p.sum() <= 0:
        raise ParameterError(f"class proportions must be non-negative, finite and not all zero, got {p.tolist()}")
    cdf = np.cumsum(p / p.sum())
    cdf[-1] = 1.0
    # side="right": u in [cdf[k-1], cdf[k]) selects k, so empty intervals are never hit.
    out = np.searchsorted(cdf, rng.random(size), side="right").astype(np.int64)
    return np.minimum(out, len(p) - 1)


def truncated_gaussian(
    mean: ArrayLike,
    cv: float,
    low: ArrayLike,
    high: ArrayLike,
    size: int | tuple[int, ...] | None,
    rng: np.random.Generator,
) -> FloatArray:
    """Draws of a Gaussian of mean ``mean`` and standard deviation ``cv * mean``, truncated to ``[low, high]``.

    Proper truncation (the conditional distribution given the bounds), not
    clipping: drawn by inverting the CDF, ``x = mean + sd * Phi^-1(U)`` with
    ``U`` uniform on ``[Phi(a), Phi(b)]`` for the standardised bounds ``a, b``.
    Where both bounds lie above the mean the mirror image is inverted
    instead, which keeps the lower-tail precision of ``Phi``.

    ``mean`` is the mean of the Gaussian *before* truncation (the reading of
    the LoTES paper's "truncated Gaussian with mean r_kl, coefficient of
    variation 0.5"). Truncation shifts the actual mean: with CV 0.5 and
    ``low = 0`` the lower bound is two standard deviations below, and the
    truncated mean is ``mean * (1 + 0.5 * phi(2) / Phi(2)) = 1.0276 * mean``.
    :func:`truncated_gaussian_mean` gives the exact value.

    ``mean``, ``low`` and ``high`` broadcast against ``size`` (``None``: the
    broadcast shape). A zero standard deviation returns ``mean`` clipped to the
    bounds.
    """
    m, lo, hi = (np.asarray(x, dtype=np.float64) for x in (mean, low, high))
    shape = np.broadcast_shapes(m.shape, lo.shape, hi.shape) if size is None else size
    m, lo, hi = (np.broadcast_to(x, shape) for x in (m, lo, hi))
    setup = _TruncSetup(m, cv, lo, hi)
    return setup.draw(rng.random(shape))


class _TruncSetup:
    """Per-parameter constants of the inverse-CDF truncated Gaussian draw.

    Computed once per distinct (mean, bounds), e.g. once per class and
    resource, so drawing a job only costs one ``ndtri``.
    """

    def __init__(self, m: FloatArray, cv: float, lo: FloatArray, hi: FloatArray) -> None:
        if not (cv >= 0 and math.isfinite(cv)):
            raise ParameterError(f"coefficient of variation must be finite and non-negative, got {cv}")
        if np.any(lo > hi):
            raise ParameterError("truncation bounds must satisfy low <= high")
        sd = cv * np.abs(m)
        # A tiny (subnormal) sd overflows the standardised bounds to +-inf, which ndtr maps to 0 or 1.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            a = (lo - m) / sd
            b = (hi - m) / sd
            # Mirror where the whole interval lies above the mean: invert in the lower tail.
            self.flip = a > 0
            fa = ndtr(np.where(self.flip, -b, a))
            fb = ndtr(np.where(self.flip, -a, b))
        # sd = 0, or bounds so far in a tail that Phi underflows to an empty
        # interval: the mass sits at the mean clipped into the bounds.
        self.degenerate = (sd == 0) | ~(fb > fa)
        self.fa = np.where(self.degenerate, 0.5, fa)
        self.width = np.where(self.degenerate, 0.0, fb - fa)
        # Signed scale: the mirrored draws come back with a minus sign.
        self.scale = np.where(self.degenerate, 0.0, np.where(self.flip, -sd, sd))
        self.m = np.where(self.degenerate, np.clip(m, lo, hi), m)
        self.lo = lo
        self.hi = hi

    def draw(self, u: FloatArray, index: IntArray | None = None) -> FloatArray:
        """Values for uniforms ``u``; ``index`` picks the parameter row of each draw (per-class tables)."""
        if index is None:
            fa, width, m, scale = self.fa, self.width, self.m, self.scale
        else:
            fa, width, m, scale = (x[index] for x in (self.fa, self.width, self.m, self.scale))
        lo, hi = self.lo, self.hi
        x = m + scale * ndtri(fa + u * width)
        bad = ~np.isfinite(x)
        if np.any(bad):  # u at the very edge of [Phi(a), Phi(b)] with an infinite bound
            x = np.where(bad, np.clip(m, lo, hi), x)
        out: FloatArray = np.clip(x, lo, hi)  # rounding only; the draw is already inside
        return out


def truncated_gaussian_mean(mean: ArrayLike, cv: float, low: ArrayLike, high: ArrayLike) -> FloatArray:
    """Exact mean of :func:`truncated_gaussian` (same parameters), for tests and documentation."""
    from scipy.stats import truncnorm

    m, lo, hi = (np.asarray(x, dtype=np.float64) for x in (mean, low, high))
    sd = cv * np.abs(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = truncnorm.mean((lo - m) / sd, (hi - m) / sd, loc=m, scale=sd)
    return np.where(sd == 0, np.clip(m, lo, hi), res)


def exponential(mean: ArrayLike, size: int | None, rng: np.random.Generator) -> FloatArray:
    """Exponential draws with the given mean (same unit as ``mean``), broadcast over ``size``."""
    m = np.asarray(mean, dtype=np.float64)
    if np.any(m < 0) or not np.isfinite(m).all():
        raise ParameterError("exponential means must be finite and non-negative")
    return rng.exponential(1.0, size=size if size is not None else m.shape) * m


def uniform_open_low(low: float, high: float, size: int | tuple[int, ...], rng: np.random.Generator) -> FloatArray:
    """Uniform draws on ``(low, high]``: never exactly ``low``.

    Used for the LoTES u_k (a rate of 1/u_k must never be infinite) and
    omega_jk (a rate multiplier of zero would make a job run forever).
    """
    return high - (high - low) * rng.random(size)


def class_requests(
    means: NDArray[np.float64],
    job_class: IntArray,
    cv: float,
    low: ArrayLike,
    high: ArrayLike,
    rng: np.random.Generator,
    *,
    chunk: int = REQUEST_CHUNK,
) -> FloatArray:
    """Per-job requests, shape ``(n, R)``: job ``z`` draws :func:`truncated_gaussian` around ``means[job_class[z]]``.

    ``low``/``high`` broadcast against one row of ``R`` resources. Jobs are
    processed ``chunk`` at a time so the temporaries of the inverse-CDF draw
    stay small; the uniforms are consumed in job order, so the result does not
    depend on ``chunk``.
    """
    means = np.asarray(means, dtype=np.float64)
    job_class = np.asarray(job_class, dtype=np.int64)
    n = len(job_class)
    K, R = means.shape
    lo = np.broadcast_to(np.asarray(low, dtype=np.float64), (R,))
    hi = np.broadcast_to(np.asarray(high, dtype=np.float64), (R,))
    setup = _TruncSetup(means, cv, np.broadcast_to(lo, (K, R)), np.broadcast_to(hi, (K, R)))
    # Bounds are per resource, the same for every class: draws clip against one row.
    setup.lo, setup.hi = lo, hi
    out = np.empty((n, R))
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        out[a:b] = setup.draw(rng.random((b - a, R)), job_class[a:b])
    return out


def per_job(table: NDArray[np.float64], job_class: Sequence[int] | IntArray) -> FloatArray:
    """Row ``job_class[z]`` of ``table`` for every job: class parameters spread to jobs."""
    return np.asarray(table, dtype=np.float64)[np.asarray(job_class, dtype=np.int64)]


__all__ = [
    "choose_classes",
    "class_requests",
    "exponential",
    "per_job",
    "poisson_arrivals",
    "truncated_gaussian",
    "truncated_gaussian_mean",
    "uniform_open_low",
]
