"""k-means job classes (LoTES section 5.3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.core.errors import ParameterError
from simcore.core.model import Workload
from simcore.workloads.classify import kmeans_classes, lloyd

CENTRES = np.array([[0.10, 0.10], [0.50, 0.20], [0.20, 0.60]])


def _blobs(n: int, seed: int, durations: tuple[float, ...] = (100.0, 200.0, 300.0)) -> tuple[Workload, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    req = CENTRES[truth] + rng.normal(0, 0.01, (n, 2))
    work = np.array(durations)[truth] * rng.uniform(0.9, 1.1, n)
    submit = np.arange(n, dtype=float)  # one job per second
    wl = Workload("blobs", ("cpu", "mem"), submit, req, work, np.full(n, -1), horizon_s=float(n))
    return wl, truth


def test_it_recovers_well_separated_classes_in_a_fixed_order() -> None:
    wl, truth = _blobs(3000, 1)
    labels, table = kmeans_classes(wl, 3, 1000.0, np.random.default_rng(0))
    # Classes are ordered by total mean request: (0.1,0.1) < (0.5,0.2) < (0.2,0.6) -> truth order.
    assert np.array_equal(labels, truth)
    assert np.allclose(table.requests, CENTRES, atol=0.003)
    assert table.names == ("k1", "k2", "k3")
    # Proportions are those of the training window (the first 1000 s = 1000 jobs).
    assert np.allclose(table.proportions, np.bincount(truth[:1000], minlength=3) / 1000)
    # Rates: one over the mean duration of the window's members, machine-independent.
    assert np.allclose(1.0 / table.rates[:, 0], [100, 200, 300], rtol=0.02)
    assert table.rates.shape == (3, 1)


def test_jobs_after_the_window_get_the_nearest_centroid() -> None:
    wl, _ = _blobs(2000, 2)
    labels, table = kmeans_classes(wl, 3, 500.0, np.random.default_rng(5))
    later = wl.request[500:]
    d = ((later[:, None, :] - table.requests[None, :, :]) ** 2).sum(axis=2)
    assert np.array_equal(labels[500:], d.argmin(axis=1))


def test_it_is_deterministic_under_a_seed() -> None:
    rng = np.random.default_rng(3)
    req = rng.uniform(0, 1, (5000, 2))  # no cluster structure: the seed decides
    wl = Workload("u", ("cpu", "mem"), np.arange(5000.0), req, np.ones(5000), np.full(5000, -1), 5000.0)
    a = kmeans_classes(wl, 6, 5000.0, np.random.default_rng(42))
    b = kmeans_classes(wl, 6, 5000.0, np.random.default_rng(42))
    assert np.array_equal(a[0], b[0])
    assert np.array_equal(a[1].requests, b[1].requests)


def test_duration_can_be_a_feature() -> None:
    # Same requests, durations 10 s or 1000 s: only the duration separates the classes.
    n = 1000
    rng = np.random.default_rng(4)
    long = rng.random(n) < 0.3
    req = np.full((n, 2), 0.1) + rng.normal(0, 0.001, (n, 2))
    work = np.where(long, 1000.0, 10.0)
    wl = Workload("d", ("cpu", "mem"), np.arange(float(n)), req, work, np.full(n, -1), float(n))
    labels, table = kmeans_classes(wl, 2, float(n), np.random.default_rng(0), use_duration=True, n_configs=3)
    groups = {tuple(sorted(set(labels[long]))), tuple(sorted(set(labels[~long])))}
    assert groups == {(0,), (1,)}
    assert sorted(np.round(1.0 / table.rates[:, 0]).tolist()) == [10.0, 1000.0]
    assert table.rates.shape == (2, 3)


def test_lloyd_never_returns_an_empty_cluster() -> None:
    x = np.array([[0.0, 0.0]] * 50 + [[1.0, 1.0]] * 50 + [[5.0, 5.0]])
    c, lab, inertia = lloyd(x, 3, np.random.default_rng(0))
    assert sorted(np.bincount(lab, minlength=3).tolist()) == [1, 50, 50]
    assert inertia == pytest.approx(0.0)


def test_fewer_distinct_requests_than_k_gives_fewer_classes() -> None:
    req = np.array([[0.1, 0.1], [0.2, 0.2]] * 10)
    wl = Workload("two", ("cpu", "mem"), np.arange(20.0), req, np.ones(20), np.full(20, -1), 20.0)
    labels, table = kmeans_classes(wl, 4, 20.0, np.random.default_rng(0))
    assert table.n_classes == 2
    assert labels.tolist() == [0, 1] * 10


def test_it_rejects_more_classes_than_jobs() -> None:
    wl, _ = _blobs(5, 0)
    with pytest.raises(ParameterError, match="5 jobs, fewer than the 6"):
        kmeans_classes(wl, 6, 10.0, np.random.default_rng(0))
