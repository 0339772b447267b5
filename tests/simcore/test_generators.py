"""Generators: distributions checked against scipy, bounds, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from simcore.core.errors import ParameterError
from simcore.workloads import generators as g


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


class TestPoissonArrivals:
    def test_arrivals_are_sorted_inside_the_window_with_the_poisson_count(self) -> None:
        t = g.poisson_arrivals(50.0, 2000.0, rng(1))
        assert np.all(np.diff(t) >= 0)
        assert t[0] >= 0 and t[-1] < 2000.0
        # 100,000 expected, standard deviation 316.
        assert abs(len(t) - 100_000) < 5 * 316

    def test_gaps_are_exponential_with_mean_one_over_rate(self) -> None:
        t = g.poisson_arrivals(4.0, 5000.0, rng(2))
        gaps = np.diff(t)
        assert gaps.mean() == pytest.approx(0.25, rel=0.02)
        assert stats.kstest(gaps, "expon", args=(0, 0.25)).pvalue > 1e-3

    def test_counts_over_many_windows_have_poisson_variance(self) -> None:
        counts = np.array([len(g.poisson_arrivals(3.0, 10.0, r)) for r in (rng(s) for s in range(400))])
        assert counts.mean() == pytest.approx(30.0, abs=1.0)
        assert counts.var() == pytest.approx(30.0, rel=0.25)

    def test_a_window_longer_than_one_block_continues_the_process(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(g, "ARRIVAL_BLOCK", 1000)
        t = g.poisson_arrivals(10.0, 1000.0, rng(3))
        assert abs(len(t) - 10_000) < 5 * 100
        assert np.all(np.diff(t) > 0) and t[-1] < 1000.0

    def test_zero_rate_or_window_gives_no_jobs(self) -> None:
        assert len(g.poisson_arrivals(0.0, 100.0, rng())) == 0
        assert len(g.poisson_arrivals(5.0, 0.0, rng())) == 0

    @pytest.mark.parametrize("rate,horizon", [(-1.0, 10.0), (float("nan"), 10.0), (1.0, float("inf"))])
    def test_it_rejects_bad_rates_and_windows(self, rate: float, horizon: float) -> None:
        with pytest.raises(ParameterError):
            g.poisson_arrivals(rate, horizon, rng())

    def test_same_seed_same_arrivals(self) -> None:
        assert np.array_equal(g.poisson_arrivals(7.0, 100.0, rng(9)), g.poisson_arrivals(7.0, 100.0, rng(9)))


class TestChooseClasses:
    def test_proportions_are_respected_and_empty_classes_never_chosen(self) -> None:
        k = g.choose_classes([0.2, 0.0, 0.5, 0.3], 200_000, rng(4))
        counts = np.bincount(k, minlength=4) / 200_000
        assert counts[1] == 0
        assert counts == pytest.approx([0.2, 0.0, 0.5, 0.3], abs=0.005)

    def test_unnormalised_proportions_are_normalised(self) -> None:
        k = g.choose_classes([1, 3], 100_000, rng(5))
        assert (k == 1).mean() == pytest.approx(0.75, abs=0.01)

    @pytest.mark.parametrize("p", [[], [0, 0], [-0.1, 1.1], [float("nan"), 1]])
    def test_it_rejects_bad_proportions(self, p: list[float]) -> None:
        with pytest.raises(ParameterError):
            g.choose_classes(p, 10, rng())


class TestTruncatedGaussian:
    def test_it_matches_scipy_truncnorm(self) -> None:
        # LoTES 5.4: mean 0.025, CV 0.5, truncated to [0, 1].
        x = g.truncated_gaussian(0.025, 0.5, 0.0, 1.0, 50_000, rng(6))
        a, b = (0 - 0.025) / 0.0125, (1 - 0.025) / 0.0125
        assert stats.kstest(x, stats.truncnorm(a, b, loc=0.025, scale=0.0125).cdf).pvalue > 1e-3
        assert x.mean() == pytest.approx(float(g.truncated_gaussian_mean(0.025, 0.5, 0, 1)), rel=0.01)

    def test_truncation_at_zero_raises_the_mean_by_2_8_percent(self) -> None:
        # The documented bias: mean (1 + 0.5 phi(2) / Phi(2)) for CV 0.5 and a bound at 0.
        expected = 1 + 0.5 * stats.norm.pdf(2) / stats.norm.cdf(2)
        assert float(g.truncated_gaussian_mean(0.02, 0.5, 0, 1)) / 0.02 == pytest.approx(expected, rel=1e-9)
        assert expected == pytest.approx(1.0276, abs=1e-4)

    def test_an_interval_entirely_above_the_mean_uses_the_mirrored_tail(self) -> None:
        # [0.3, 0.5] for a Gaussian of mean 0.1, sd 0.05: four to eight sd out.
        x = g.truncated_gaussian(0.1, 0.5, 0.3, 0.5, 20_000, rng(7))
        assert x.min() >= 0.3 and x.max() <= 0.5
        a, b = (0.3 - 0.1) / 0.05, (0.5 - 0.1) / 0.05
        assert stats.kstest(x, stats.truncnorm(a, b, loc=0.1, scale=0.05).cdf).pvalue > 1e-3

    def test_zero_spread_gives_the_mean_clipped_to_the_bounds(self) -> None:
        assert np.all(g.truncated_gaussian(0.0, 0.5, 0.0, 1.0, 5, rng()) == 0.0)
        assert np.all(g.truncated_gaussian(0.4, 0.0, 0.0, 0.3, 5, rng()) == 0.3)

    def test_it_broadcasts_per_element_means(self) -> None:
        x = g.truncated_gaussian(np.array([[0.02, 0.5]]), 0.5, 0.0, 1.0, (100_000, 2), rng(8))
        assert x.mean(axis=0) == pytest.approx(g.truncated_gaussian_mean([0.02, 0.5], 0.5, 0, 1), rel=0.01)

    def test_it_rejects_bad_parameters(self) -> None:
        with pytest.raises(ParameterError):
            g.truncated_gaussian(0.1, -1.0, 0, 1, 3, rng())
        with pytest.raises(ParameterError):
            g.truncated_gaussian(0.1, 0.5, 1, 0, 3, rng())

    @settings(max_examples=60, deadline=None)
    @given(
        mean=st.floats(-5, 5),
        cv=st.floats(0, 3),
        low=st.floats(-6, 6),
        width=st.floats(0, 4),
        seed=st.integers(0, 2**32 - 1),
    )
    def test_draws_always_lie_within_the_bounds(
        self, mean: float, cv: float, low: float, width: float, seed: int
    ) -> None:
        x = g.truncated_gaussian(mean, cv, low, low + width, 200, rng(seed))
        assert np.isfinite(x).all()
        assert x.min() >= low and x.max() <= low + width


class TestClassRequests:
    def test_it_equals_per_job_truncated_gaussians_and_ignores_the_chunk_size(self) -> None:
        means = np.array([[0.02, 0.01], [0.2, 0.06], [0.07, 0.03]])
        k = g.choose_classes([1, 1, 1], 5000, rng(10))
        whole = g.truncated_gaussian(means[k], 0.5, 0.0, 1.0, None, rng(11))
        assert np.array_equal(g.class_requests(means, k, 0.5, 0.0, 1.0, rng(11)), whole)
        assert np.array_equal(g.class_requests(means, k, 0.5, 0.0, 1.0, rng(11), chunk=333), whole)

    def test_per_resource_upper_bounds_apply(self) -> None:
        x = g.class_requests(np.array([[0.5, 0.5]]), np.zeros(10_000, dtype=np.int64), 0.5, 0.0, [1.0, 0.4], rng(12))
        assert x[:, 0].max() > 0.9 and x[:, 1].max() <= 0.4


def test_uniform_open_low_never_returns_the_low_end() -> None:
    u = g.uniform_open_low(0.0, 1.0, 1_000_000, rng(13))
    assert u.min() > 0.0 and u.max() <= 1.0
    assert u.mean() == pytest.approx(0.5, abs=0.002)


def test_exponential_has_the_given_mean_per_element() -> None:
    m = np.repeat([10.0, 1000.0], 100_000)
    x = g.exponential(m, None, rng(14))
    assert x[:100_000].mean() == pytest.approx(10.0, rel=0.02)
    assert x[100_000:].mean() == pytest.approx(1000.0, rel=0.02)
