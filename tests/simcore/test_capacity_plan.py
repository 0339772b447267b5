"""Capacity planning (simcore.planning, ``simcore capacity``): targets, resizing, bisection and its fidelity.

Cheap by construction: tens of machines, minutes of arrivals, a few seeds. The two fidelity checks of
issue 30 run the real engine: M/M/c against Erlang C (one resource, identical machines, FCFS) and the
no-queueing answer against compaction on a snapshot.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from simcore.cli import main
from simcore.core.errors import ParameterError
from simcore.planning import PlanSpec, ProbeResult, Unreachable, bisect_smallest, make_plan, parse_target, violations
from simcore.planning.local import LocalProbes
from simcore.planning.plan import ProbeRequest
from simcore.planning.shape import counts_at, resize
from simcore.presets import resolve_cluster

# -- targets ---------------------------------------------------------------------------------------------------


def test_it_parses_a_percentile_target() -> None:
    t = parse_target("p99.9_wait_s <= 60")
    assert (t.statistic, t.op, t.bound) == ("p99.9_wait_s", "<=", 60.0)
    assert t.met(60.0) and not t.met(60.01) and not t.met(None)


def test_it_refuses_a_target_on_an_unknown_statistic_listing_the_valid_ones() -> None:
    with pytest.raises(ParameterError, match=r"unknown statistic 'mean_sojourn_s'.*mean_wait_s.*pNN_wait_s"):
        parse_target("mean_sojourn_s<=3")


def test_it_refuses_a_lower_bound_target() -> None:
    with pytest.raises(ParameterError, match="upper bound"):
        parse_target("p99_wait_s>=60")


def test_it_refuses_a_target_without_a_number() -> None:
    with pytest.raises(ParameterError, match="not a number"):
        parse_target("p99_wait_s<=soon")


def test_it_refuses_a_percentile_above_100() -> None:
    with pytest.raises(ParameterError, match=r"\(0, 100\]"):
        parse_target("p101_wait_s<=1")


# -- resizing --------------------------------------------------------------------------------------------------


def test_proportional_resizing_is_house_monotone_and_gives_back_the_given_cluster() -> None:
    c = resolve_cluster("google-2011")
    prev = counts_at(c, 10, "all")
    for n in range(11, 400):
        cur = counts_at(c, n, "all")
        assert cur.sum() == n and (cur >= prev).all()
        prev = cur
    assert counts_at(c, c.n_machines, "all").tolist() == c.counts.tolist()


def test_resizing_one_configuration_keeps_the_others() -> None:
    c = resolve_cluster("google-balanced", {"machines_per_config": 3})
    r = resize(c, 40, "G4")
    assert r.counts.tolist() == [3, 3, 3, 13, 3, 3, 3, 3, 3, 3]


# -- bisection -------------------------------------------------------------------------------------------------


def test_bisection_finds_the_smallest_size_of_a_monotone_function_and_probes_one_below() -> None:
    s = bisect_smallest(lambda m: m >= 37, floor=1, ceiling=1000, low=20, high=50)
    assert s.answer == 37
    assert s.results[37] is True and s.results[36] is False


def test_bisection_widens_past_starts_on_the_wrong_side() -> None:
    s = bisect_smallest(lambda m: m >= 300, floor=1, ceiling=1000, low=10, high=40)
    assert s.answer == 300
    s = bisect_smallest(lambda m: m >= 3, floor=1, ceiling=1000, low=10, high=40)
    assert s.answer == 3


def test_below_a_lower_start_that_met_the_steps_start_at_a_fraction_of_it() -> None:
    # The 10,000-machine plan's shape (notes): lambda*'s size 3,000, compaction's 3,372, answers 5-12% below
    # 3,000. Steps of 1, 2, 4, ... machines took 26 probes to find 2,700; steps from 2% (60 machines) took 20
    # when the lower start was reached by bisecting down from the upper; both starts in the first round, 13.
    s = bisect_smallest(lambda m: m >= 2700, floor=10, ceiling=40000, low=3000, high=3372)
    assert s.answer == 2700 and s.results[2700] is True and s.results[2699] is False
    assert list(s.results)[:2] == [3000, 3372]  # both starts first
    assert len(s.results) == 13
    below = [m for m in s.results if m < 3000]  # in the order probed
    assert below[:3] == [2940, 2820, 2580]  # 60, 180, 420 below the start: the steps double
    # An answer just below the start: 9 probes (16 when bisecting down to the start first).
    s = bisect_smallest(lambda m: m >= 2998, floor=10, ceiling=40000, low=3000, high=3372)
    assert s.answer == 2998 and s.results[2997] is False and len(s.results) == 9
    # The price: an answer above the lower start costs the probe at it (11 probes for 3,200: 3,000 failed).
    s = bisect_smallest(lambda m: m >= 3200, floor=10, ceiling=40000, low=3000, high=3372)
    assert s.answer == 3200 and s.results[3000] is False and len(s.results) == 11


def test_the_bisection_answer_is_the_smallest_met_size_for_every_answer_around_the_starts() -> None:
    # Every answer from the floor to above the upper start, starts of a small and a tiny cluster
    # (where the first step is one machine): the smallest size that meets, and the size below it failed.
    for low, high in ((300, 340), (20, 50), (1, 5)):
        for a in range(1, 400):
            s = bisect_smallest(lambda m, a=a: m >= a, floor=1, ceiling=399, low=low, high=high)
            assert s.answer == a and (a == 1 or s.results[a - 1] is False)
            assert not violations(s.results)


def test_bisection_says_unreachable_when_the_ceiling_fails() -> None:
    s = bisect_smallest(lambda m: m >= 2000, floor=1, ceiling=1000, low=10, high=40)
    assert s.unreachable and s.answer is None and s.results[1000] is False


def test_violations_name_a_larger_size_that_failed_after_a_smaller_one_met() -> None:
    assert violations({10: False, 20: True, 30: False, 40: True}) == [{"met": 20, "failed": 30}]
    assert violations({10: False, 20: True, 30: True}) == []


# -- the driver, with a hand-made probe ------------------------------------------------------------------------

_SMALL = {"cluster_params": {"machines_per_config": 2}, "load": 0.5, "hours": 0.02}


def _fake_runs(stat: dict[int, float]) -> object:
    """``run_probes`` whose statistic at each size is ``stat[size]`` (default: 100 / size)."""

    def run(requests: list[ProbeRequest]) -> list[ProbeResult]:
        out = []
        for r in requests:
            v = stat.get(r.machines, 100.0 / r.machines)
            out.append(
                ProbeResult(
                    r.machines, r.seed, [], dict.fromkeys(r.schedulers, v),
                    {n: v <= 5.0 for n in r.schedulers}, {}, {}, 0.0, "test",
                )
            )  # fmt: skip
        return out

    return run


def test_the_plan_verifies_the_answer_and_the_size_one_below() -> None:
    spec = PlanSpec("google-balanced", "google-like", ["greedy"], "mean_wait_s<=5", **_SMALL)  # type: ignore[arg-type]
    plan = make_plan(spec, _fake_runs({}), None)  # type: ignore[arg-type]
    p = plan["plans"][0]
    assert p["machines"] == 20 and p["saving_machines"] == 0
    assert p["verification"]["at_answer"]["met"] is True
    assert p["verification"]["one_below"]["machines"] == 19 and p["verification"]["one_below"]["met"] is False
    assert p["monotone"] is True


def test_the_plan_flags_a_non_monotone_curve() -> None:
    # 100 / m meets from 20 machines, but 24 to 28 are made to fail: a scheduler worse with more machines.
    spec = PlanSpec(
        "google-balanced", "google-like", ["greedy"], "mean_wait_s<=5", curve_points=21, max_machines=60,
        cluster_params={"machines_per_config": 3}, load=0.5, hours=0.02,
    )  # fmt: skip
    plan = make_plan(spec, _fake_runs({m: 9.0 for m in range(24, 29)}), None)  # type: ignore[arg-type]
    p = plan["plans"][0]
    assert p["monotone"] is False
    assert p["not_monotone"] and all(v["met"] < v["failed"] for v in p["not_monotone"])
    assert "not monotone" in p["note_monotone"]


# -- fidelity: Erlang C ----------------------------------------------------------------------------------------

MU = 1 / 10.0  # service rate, 1/s (mean 10 s)
LAM = 0.8  # arrivals per s: offered load a = 8 Erlangs
HOURS = 2.0


def erlang_c_wait(c: int, lam: float, mu: float) -> float:
    """Mean wait in queue (s) of M/M/c (Erlang C); infinite when c <= a."""
    a = lam / mu
    if c <= a:
        return math.inf
    term = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (term + top) / (c * mu - lam)


def erlang_c_size(w: float, lam: float, mu: float) -> int:
    c = 1
    while erlang_c_wait(c, lam, mu) > w:
        c += 1
    return c


def _mmc_files(tmp: Path, seed: int) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    horizon = HOURS * 3600
    submit = np.cumsum(rng.exponential(1 / LAM, int(LAM * horizon * 1.2)))
    submit = submit[submit < horizon]
    dur = rng.exponential(1 / MU, len(submit))
    trace = tmp / f"mmc{seed}.csv"
    rows = "\n".join(f"{s!r},{d!r},1" for s, d in zip(submit.tolist(), dur.tolist(), strict=True))
    trace.write_text(f"# horizon_s: {horizon}\nsubmit_s,duration_s,cpu\n{rows}\n")
    cluster = tmp / "servers.json"
    cluster.write_text(
        json.dumps(
            {"name": "servers", "resources": ["cpu"], "configurations": [{"name": "s", "count": 12,
             "capacity": {"cpu": 1.0}}]}
        )
    )  # fmt: skip
    return str(cluster), str(trace)


def test_fcfs_on_identical_single_resource_machines_matches_erlang_c_sizing(tmp_path: Path) -> None:
    # The target sits between the Erlang C waits of c* - 1 and c* (geometric middle), so a run of
    # ~5,800 jobs resolves it; each seed is its own M/M/c sample path (a trace replays as recorded).
    c_star = erlang_c_size(1.0, LAM, MU)
    w = math.sqrt(erlang_c_wait(c_star, LAM, MU) * erlang_c_wait(c_star - 1, LAM, MU))
    answers, at_answer = [], []
    for seed in (0, 1, 2):
        cluster, trace = _mmc_files(tmp_path, seed)
        spec = PlanSpec(cluster, trace, ["fcfs"], f"mean_wait_s<={w}", seeds=[0], max_machines=40)
        plan = make_plan(spec, LocalProbes(spec, 1), None)
        answers.append(plan["plans"][0]["machines"])
        at_answer.append(plan["plans"][0]["verification"]["at_answer"]["mean"])
    assert min(answers) - 1 <= c_star <= max(answers) + 1
    assert sorted(answers)[1] == c_star


# -- fidelity: no queueing against compaction ------------------------------------------------------------------


def test_the_no_queueing_answer_on_a_snapshot_is_at_or_above_compactions(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 120
    cpu = np.clip(rng.normal(0.1, 0.06, n), 0.01, 0.5)
    mem = np.clip(rng.normal(0.08, 0.05, n), 0.01, 0.5)
    trace = tmp_path / "snapshot.csv"
    trace.write_text(
        "submit_s,duration_s,cpu,mem\n"
        + "\n".join(f"0,100,{c!r},{m!r}" for c, m in zip(cpu.tolist(), mem.tolist(), strict=True))
    )
    spec = PlanSpec(
        "google-balanced",
        str(trace),
        ["greedy"],
        "max_wait_s<=0",
        cluster_params={"machines_per_config": 3},
        max_machines=200,
    )
    plan = make_plan(spec, LocalProbes(spec, 1), None)
    compaction = plan["bounds"]["compaction"]["machines"]
    assert plan["plans"][0]["machines"] >= compaction


# -- the command -----------------------------------------------------------------------------------------------

_CMD = [
    "capacity",
    "--cluster",
    "google-balanced",
    "--machines-per-config",
    "2",
    "--workload",
    "google-like",
    "--load",
    "0.6",
    "--hours",
    "0.05",
    "--schedulers",
    "greedy",
    "--quiet",
]


def test_the_command_prints_one_plan_per_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_CMD, "--target", "p99_wait_s<=60"]) == 0
    out = json.loads(capsys.readouterr().out)
    (p,) = out["plans"]
    assert p["scheduler"] == "greedy" and isinstance(p["machines"], int)
    assert p["saving_machines"] == out["given_machines"] - p["machines"]
    assert p["verification"]["at_answer"]["met"] is True
    assert out["seeds"] == [0] and out["version"]


def test_an_unreachable_target_says_not_reachable_up_to_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_CMD, "--target", "mean_wait_s<0", "--max-machines", "30"]) == 2
    err = capsys.readouterr().err
    assert "not reachable up to 30 machines" in err and "Traceback" not in err


def test_a_size_limit_above_the_machine_setting_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", "100")
    assert main([*_CMD, "--target", "p99_wait_s<=60", "--max-machines", "500"]) == 2
    assert "SIMCORE_MAX_MACHINES" in capsys.readouterr().err


def test_a_target_on_an_unknown_statistic_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_CMD, "--target", "p99_latency<=60"]) == 2
    assert "unknown statistic 'p99_latency'" in capsys.readouterr().err


def test_unreachable_is_raised_by_the_library() -> None:
    # The hand-made statistic 100 / m meets from 20 machines: not up to 15.
    spec = PlanSpec("google-balanced", "google-like", ["greedy"], "mean_wait_s<=5", max_machines=15, **_SMALL)  # type: ignore[arg-type]
    with pytest.raises(Unreachable, match="not reachable up to 15 machines"):
        make_plan(spec, _fake_runs({}), None)  # type: ignore[arg-type]
