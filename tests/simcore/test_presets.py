"""The LoTES paper's cluster and workload presets: tables, statistics, determinism."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simcore import api
from simcore.capacity import allocation_lp
from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, RateRuntime, Workload
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params
from simcore.presets.google import TABLE1, TABLE2
from simcore.workloads.generators import truncated_gaussian_mean


def cluster(name: str, **params: Any) -> Cluster:
    p = CLUSTERS.get(name)
    return p.build(**coerce_params(name, p.params, params))


def workload(name: str, c: Cluster, seed: int = 0, load: float = 0.9, hours: float = 0.01, **params: Any) -> Workload:
    p = WORKLOADS.get(name)
    return p.build(c, np.random.default_rng(seed), load=load, hours=hours, **coerce_params(name, p.params, params))


@pytest.fixture(scope="module")
def g2011() -> Cluster:
    return cluster("google-2011")


@pytest.fixture(scope="module")
def balanced() -> Cluster:
    return cluster("google-balanced", machines_per_config=50)


# -- clusters -------------------------------------------------------------------------------


def test_google_2011_is_table_1_in_order(g2011: Cluster) -> None:
    assert g2011.resources == ("cpu", "mem")
    assert g2011.counts.tolist() == [6732, 3863, 1001, 795, 126, 52, 5, 5, 3, 1]
    assert g2011.n_machines == 12_583
    assert g2011.capacity.tolist() == [[c, m] for _, c, m, _ in TABLE1]
    assert g2011.capacity.max(axis=0).tolist() == [1.0, 1.0]  # normalised to the largest machine
    assert [a["paper_K_j"] for a in g2011.attributes] == [4, 2, 1, 2, 2, 1, 1, 2, 2, 1]


def test_google_balanced_has_machines_per_config_of_each_configuration() -> None:
    assert cluster("google-balanced").counts.tolist() == [1000] * 10
    c = cluster("google-balanced", machines_per_config=3)
    assert c.counts.tolist() == [3] * 10
    assert c.capacity.tolist() == cluster("google-2011").capacity.tolist()


def test_machines_per_config_must_be_at_least_one() -> None:
    p = CLUSTERS.get("google-balanced")
    assert [(x.name, x.type, x.default, x.min) for x in p.params] == [("machines_per_config", int, 1000, 1)]
    with pytest.raises(ParameterError, match="machines_per_config"):
        coerce_params("cluster 'google-balanced'", p.params, {"machines_per_config": 0})


# -- google-like ---------------------------------------------------------------------------------


def test_google_like_lambda_star_on_google_2011(g2011: Cluster) -> None:
    w = workload("google-like", g2011, load=0.5, hours=0.002)
    assert w.params["lambda_star"] == pytest.approx(1314.11, abs=0.005)
    assert w.params["arrival_rate"] == pytest.approx(0.5 * w.params["lambda_star"])
    assert w.classes is not None
    assert w.classes.rates[:, 0] == pytest.approx(1 / (np.array([0.03, 0.04, 0.04, 0.03]) * 3600))


def test_google_like_statistics_match_table_2(g2011: Cluster) -> None:
    w = workload("google-like", g2011, seed=7, load=0.6, hours=0.02)
    rate = 0.6 * 1314.11
    expected = rate * 72.0
    assert abs(w.n_jobs - expected) < 5 * np.sqrt(expected)
    assert w.submit.min() >= 0 and w.submit.max() < 72.0 and w.horizon_s == 72.0
    assert w.runtime is None  # machine-independent durations, in seconds
    t = np.array(TABLE2)
    share = np.bincount(w.job_class, minlength=4) / w.n_jobs
    assert share == pytest.approx(t[:, 3], abs=0.01)
    for k in range(4):
        mine = w.job_class == k
        if k == 3:
            continue  # 1% of ~57,000 jobs is too few for tight means; checked in aggregate below
        assert w.work[mine].mean() == pytest.approx(t[k, 0] * 3600, rel=0.03)
        assert w.request[mine].mean(axis=0) == pytest.approx(
            truncated_gaussian_mean(t[k, 1:3], 0.5, 0.0, 1.0), rel=0.02
        )
    assert w.request.min() >= 0 and w.request.max() <= 1.0


def test_google_like_needs_cpu_and_mem() -> None:
    c = Cluster("x", ("cpu",), ("a",), np.array([1]), np.array([[1.0]]))
    with pytest.raises(ParameterError, match="cpu"):
        workload("google-like", c)


def test_google_like_records_its_parameters(g2011: Cluster) -> None:
    w = workload("google-like", g2011, hours=0.001)
    p = w.params
    assert {"load", "hours", "arrival_rate", "lambda_star", "jobs", "classes", "request_cv"} <= set(p)
    assert p["hours"] == 0.001 and p["load"] == 0.9 and p["jobs"] == w.n_jobs
    assert [c["proportion"] for c in p["classes"]] == [0.23, 0.46, 0.30, 0.01]


# -- lotes-phi ---------------------------------------------------------------------------------------


def test_lotes_phi_class_parameters_follow_section_5_4_2(balanced: Cluster) -> None:
    w = workload("lotes-phi", balanced, seed=3, phi=0.012)
    r = np.array(w.params["r"])
    u = np.array(w.params["u"])
    assert r.shape == (9, 2) and u.shape == (9,)
    assert np.all(np.abs(r - 0.025) <= 0.012)
    assert np.all((u > 0) & (u <= 1))
    assert isinstance(w.classes, ClassTable)
    assert w.classes.proportions == pytest.approx(np.full(9, 1 / 9))
    # mu_jk = 1 / u_k per hour on every configuration, stored per second.
    assert w.classes.rates == pytest.approx(np.repeat((1 / (u * 3600))[:, None], 10, axis=1))
    assert w.classes.requests.tolist() == r.tolist()


def test_lotes_phi_zero_gives_identical_classes(balanced: Cluster) -> None:
    w = workload("lotes-phi", balanced, phi=0.0)
    assert np.all(np.array(w.params["r"]) == 0.025)


def test_lotes_phi_jobs_have_machine_dependent_processing_time(balanced: Cluster) -> None:
    w = workload("lotes-phi", balanced, seed=5, hours=0.2)
    assert isinstance(w.runtime, RateRuntime)
    u = np.array(w.params["u"])
    z = int(np.flatnonzero(w.job_class == 2)[0])
    assert w.runtime.duration(z, 4, -1) == pytest.approx(w.work[z] * u[2] * 3600)
    assert w.work.mean() == pytest.approx(1.0, rel=0.05)  # Exp(1) work, hours at unit rate
    share = np.bincount(w.job_class, minlength=9) / w.n_jobs
    assert share == pytest.approx(np.full(9, 1 / 9), abs=0.02)
    assert w.request.min() >= 0 and w.request.max() <= 1


def test_lotes_phi_request_means_are_truncated_gaussians_around_r(balanced: Cluster) -> None:
    w = workload("lotes-phi", balanced, seed=11, phi=0.015, hours=0.3)
    r = np.array(w.params["r"])
    for k in range(9):
        mine = w.job_class == k
        assert w.request[mine].mean(axis=0) == pytest.approx(truncated_gaussian_mean(r[k], 0.5, 0, 1), rel=0.05)


def test_lotes_phi_arrival_rate_is_load_times_the_allocation_lp_bound(balanced: Cluster) -> None:
    w = workload("lotes-phi", balanced, seed=2, load=0.97, hours=0.1)
    assert w.classes is not None
    lam = allocation_lp(balanced, w.classes).lambda_star
    assert w.params["lambda_star"] == pytest.approx(lam)
    assert w.params["arrival_rate"] == pytest.approx(0.97 * lam)
    expected = 0.97 * lam * 360
    assert abs(w.n_jobs - expected) < 5 * np.sqrt(expected)


def test_phi_is_bounded_so_mean_requests_stay_non_negative() -> None:
    p = WORKLOADS.get("lotes-phi")
    with pytest.raises(ParameterError, match="phi"):
        coerce_params("workload 'lotes-phi'", p.params, {"phi": 0.03})
    assert coerce_params("w", p.params, {})["phi"] == 0.009


# -- lotes-omega ---------------------------------------------------------------------------------------


def test_lotes_omega_reuses_the_phi_instance_and_draws_omega(balanced: Cluster) -> None:
    phi = workload("lotes-phi", balanced, seed=4, phi=0.006)
    om = workload("lotes-omega", balanced, seed=4, phi=0.006, omega=0.3)
    assert om.params["r"] == phi.params["r"] and om.params["u"] == phi.params["u"]
    omega = np.array(om.params["omega_jk"])
    assert omega.shape == (10, 9)
    assert np.all((omega > 0.7) & (omega <= 1.3))
    u = np.array(om.params["u"])
    assert om.classes is not None
    # mu_jk = u_k omega_jk per hour; ClassTable.rates is (class, configuration) per second.
    assert om.classes.rates == pytest.approx((u[None, :] * omega).T / 3600)
    assert isinstance(om.runtime, RateRuntime)


def test_lotes_omega_other_reading_of_the_rate(balanced: Cluster) -> None:
    om = workload("lotes-omega", balanced, seed=4, mu_form="omega_over_u")
    u = np.array(om.params["u"])
    omega = np.array(om.params["omega_jk"])
    assert om.classes is not None
    assert om.classes.rates == pytest.approx((omega / u[None, :]).T / 3600)


def test_lotes_omega_zero_is_machine_independent(balanced: Cluster) -> None:
    om = workload("lotes-omega", balanced, omega=0.0)
    assert np.all(np.array(om.params["omega_jk"]) == 1.0)


def test_class_seed_fixes_the_classes_while_the_run_seed_varies(balanced: Cluster) -> None:
    a = workload("lotes-omega", balanced, seed=1, class_seed=42, omega=0.2)
    b = workload("lotes-omega", balanced, seed=2, class_seed=42, omega=0.2)
    assert a.params["r"] == b.params["r"] and a.params["u"] == b.params["u"]
    assert a.params["omega_jk"] != b.params["omega_jk"]
    c = workload("lotes-phi", balanced, seed=9, class_seed=42, phi=0.006)
    assert c.params["r"] == a.params["r"]


def test_lotes_omega_defaults_to_phi_0_006() -> None:
    p = WORKLOADS.get("lotes-omega")
    got = coerce_params("w", p.params, {})
    assert got == {
        "omega": 0.1,
        "phi": 0.006,
        "class_seed": None,
        "mu_form": "u_times_omega",
        "request_cv": 0.5,
        "load_basis": "allocation",
    }
    with pytest.raises(ParameterError, match="mu_form"):
        coerce_params("w", p.params, {"mu_form": "other"})


# -- all presets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["google-like", "lotes-phi", "lotes-omega"])
def test_same_seed_same_workload_and_different_seed_different(name: str, balanced: Cluster) -> None:
    a, b, c = (workload(name, balanced, seed=s, hours=0.02) for s in (5, 5, 6))
    for field in ("submit", "request", "work", "job_class"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert a.params == b.params
    assert not np.array_equal(a.submit[:10], c.submit[:10])


@pytest.mark.parametrize("name", ["google-like", "lotes-phi", "lotes-omega"])
def test_presets_default_to_one_hour_and_record_load_and_hours(name: str) -> None:
    p = WORKLOADS.get(name)
    assert p.default_hours == 1.0 and p.uses_load
    assert p.default_cluster == ("google-2011" if name == "google-like" else "google-balanced")


def test_resolve_workload_passes_preset_parameters_and_the_seed(balanced: Cluster) -> None:
    w = api.resolve_workload("lotes-phi", balanced, seed=3, load=0.5, hours=0.01, params={"phi": 0.003})
    assert w.params["phi"] == 0.003 and w.params["load"] == 0.5 and w.horizon_s == 36.0
    again = api.resolve_workload("lotes-phi", balanced, seed=3, load=0.5, hours=0.01, params={"phi": 0.003})
    assert np.array_equal(w.request, again.request)
    with pytest.raises(ParameterError, match="no parameter 'omega'"):
        api.resolve_workload("lotes-phi", balanced, seed=3, params={"omega": 0.1})
