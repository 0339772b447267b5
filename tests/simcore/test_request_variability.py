"""request_cv, load_basis and google-2011's scale: the knobs the paper reproductions turn.

The default request_cv (the paper's 0.5) must leave every generated workload,
hence every golden value, exactly as before; CV 0 gives every job its class
mean. The Phi sweep's two findings (Tetris ahead with CV 0.5, LoTES ahead
with CV 0) are checked on a seeded small grid.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcore import api
from simcore.capacity import allocation_lp
from simcore.core.model import Cluster
from simcore.presets.google import TABLE1
from simcore.schedulers.lotes.assignment import plan_offline
from simcore.sweep import Sweep, execute
from simcore.sweep.grammar import Axis
from simcore.sweep.report import aggregate


@pytest.fixture(scope="module")
def balanced() -> Cluster:
    return api.resolve_cluster("google-balanced", {"machines_per_config": 5})


@pytest.mark.parametrize("workload", ["google-like", "lotes-phi", "lotes-omega"])
def test_the_default_cv_draws_exactly_the_jobs_it_always_drew(balanced: Cluster, workload: str) -> None:
    implicit = api.resolve_workload(workload, balanced, 3, 0.9, 0.5, {})
    explicit = api.resolve_workload(workload, balanced, 3, 0.9, 0.5, {"request_cv": 0.5})
    assert np.array_equal(implicit.request, explicit.request) and np.array_equal(implicit.submit, explicit.submit)
    assert implicit.params["request_cv"] == 0.5


def test_cv_zero_gives_every_job_its_class_mean(balanced: Cluster) -> None:
    wl = api.resolve_workload("lotes-phi", balanced, 3, 0.9, 0.5, {"request_cv": 0.0, "phi": 0.015})
    assert wl.classes is not None
    assert np.array_equal(wl.request, wl.classes.requests[wl.job_class])


def test_cv_is_the_spread_of_requests_around_the_class_mean(balanced: Cluster) -> None:
    # With CV 0.1 the truncation at 0 and 1 is 10 standard deviations away: a plain Gaussian.
    wl = api.resolve_workload("google-like", balanced, 1, 0.9, 0.5, {"request_cv": 0.1})
    assert wl.classes is not None
    k = wl.job_class == 1
    mean = wl.classes.requests[1]
    ratio = wl.request[k] / mean
    assert ratio.mean(axis=0) == pytest.approx([1.0, 1.0], abs=0.01)
    assert ratio.std(axis=0) == pytest.approx([0.1, 0.1], rel=0.05)


def test_a_negative_cv_is_refused_naming_the_parameter(balanced: Cluster) -> None:
    with pytest.raises(Exception, match="request_cv' must be at least 0"):
        api.resolve_workload("lotes-phi", balanced, 0, 0.9, 0.5, {"request_cv": -0.1})


def test_the_assignment_basis_is_the_stage_2_lp_lambda(balanced: Cluster) -> None:
    wl = api.resolve_workload("lotes-phi", balanced, 2, 0.97, 0.5, {"phi": 0.012, "load_basis": "assignment"})
    assert wl.classes is not None
    stage2 = plan_offline(balanced, wl.classes).assignment.lambda_lp
    stage1 = allocation_lp(balanced, wl.classes).lambda_star
    assert wl.params["lambda_basis"] == pytest.approx(stage2) and wl.params["lambda_star"] == pytest.approx(stage1)
    assert stage2 <= stage1
    assert wl.params["arrival_rate"] == pytest.approx(0.97 * stage2)


def test_google_2011_scales_every_configuration_and_keeps_one_machine_each() -> None:
    full = api.resolve_cluster("google-2011", {})
    assert full.counts.tolist() == [n for n, *_ in TABLE1]
    small = api.resolve_cluster("google-2011", {"scale": 0.01})
    assert small.counts.tolist() == [67, 39, 10, 8, 1, 1, 1, 1, 1, 1]


def _phi_means(cv: float) -> dict[str, float]:
    plan = Sweep(
        cluster="google-balanced",
        workload="lotes-phi",
        schedulers=["lotes", "tetris"],
        seeds=[0, 1, 2, 3, 4],
        axes=[Axis("phi", (0.015,))],
        load=0.97,
        hours=10.0,
        params={"machines_per_config": 10, "load_basis": "assignment", "request_cv": cv},
    )
    summaries = [{**r.summary, "point": t.point} for t, r in execute(plan.tasks()) if r.summary]
    return {row.scheduler: float(row.mean or 0.0) for row in aggregate(summaries, "mean_response_s")}


@pytest.mark.slow
def test_the_phi_sweep_ordering_turns_on_request_variability() -> None:
    # Phi 0.015, 0.97 of the stage-2 LP, 10 machines per configuration, 10 h, seeds 0-4 (seeded golden values).
    with_cv = _phi_means(0.5)
    assert with_cv["tetris"] < with_cv["lotes"]  # the paper's request model: Tetris ahead (0.28 s vs 1.63 s)
    without = _phi_means(0.0)
    assert without["lotes"] < without["tetris"]  # every job at its class mean: LoTES ahead (8.5 s vs 11.3 s)
    assert with_cv == {"lotes": pytest.approx(1.6256, rel=1e-4), "tetris": pytest.approx(0.280615, rel=1e-4)}
    assert without == {"lotes": pytest.approx(8.52616, rel=1e-4), "tetris": pytest.approx(11.3094, rel=1e-4)}
