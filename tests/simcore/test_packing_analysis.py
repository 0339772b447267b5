"""simcore.packing.analysis and .policy: the platform's analysis, schedulers as packing policies, snapshot sources."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.core.errors import ParameterError, UnknownNameError
from simcore.core.model import Cluster, Workload
from simcore.packing import Snapshot, compact
from simcore.packing.analysis import AnalysisSpec, analyse, band, series_tables
from simcore.packing.placement import FirstFit
from simcore.packing.policy import cluster_of, compact_by, place_by_scheduler
from simcore.packing.sources import from_records, from_trace

RES = ("cpu", "mem")


def snapshot(cap: list[list[float]], req: list[list[float]], placement: list[int] | None = None) -> Snapshot:
    n = len(req)
    return Snapshot(RES, np.array(cap, float), np.array(req, float), np.array(placement or [-1] * n), np.arange(n))


def cluster(caps: list[list[float]], counts: list[int]) -> Cluster:
    return Cluster("c", RES, tuple(f"m{i}" for i in range(len(caps))), np.array(counts), np.array(caps, float))


SMALL = AnalysisSpec(units=(0.5, 1.0), factors=(1.0, 2.0), taus=(0.0, 0.25), trials=3, orderings=("arrival", "cpu"))


# ---------------------------------------------------------------------------- the spec


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"techniques": ("holes", "speed")}, "unknown technique 'speed'; valid techniques: utilisation"),
        ({"orderings": ("arrival", "size")}, "unknown ordering 'size'; valid orderings: arrival, cpu, mem, sum"),
        ({"taus": (0.0, 1.0)}, "tau (fraction of tasks allowed to pend) must be in [0, 1), got 1.0"),
        ({"taus": (-0.1,)}, "must be in [0, 1), got -0.1"),
        ({"units": (0.05, 0.0)}, "unit size U must be a positive fraction of the median machine, got 0.0"),
        ({"factors": (0.5,)}, "scale factors must be >= 1, got 0.5"),
        ({"trials": 0}, "trials must be an integer from 1 to 100, got 0"),
        ({"placed_by": "biggest"}, "placed_by 'biggest' is neither as-is, an ordering"),
        ({"repack_with": "as-is"}, "repack_with 'as-is' is neither an ordering"),
    ],
)
def test_a_bad_spec_names_the_field_and_what_to_fix(change: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        AnalysisSpec(**{**SMALL.to_dict(), **change}).checked()  # type: ignore[arg-type]


def test_a_scheduler_that_needs_a_profile_cannot_place_a_snapshot() -> None:
    with pytest.raises(ParameterError, match="scheduler 'affinity' needs profile.*choose one of"):
        AnalysisSpec(schedulers=("affinity",)).checked()


def test_an_unknown_scheduler_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownNameError, match="greedy"):
        AnalysisSpec(schedulers=("nosuch",)).checked()


def test_a_spec_from_json_refuses_unknown_keys() -> None:
    with pytest.raises(ParameterError, match="unknown key 'tau'; valid keys:"):
        AnalysisSpec.from_dict({"tau": [0.1]})


def test_scheduler_params_follow_the_rule_of_experiments_and_name_an_unknown_key() -> None:
    # The message an experiment's scenario gives for the same parameters (simcore.scenario.validate_scenario).
    with pytest.raises(ParameterError) as e:
        AnalysisSpec.from_dict({"schedulers": ["mris"], "scheduler_params": {"mris": {"window": 8}}})
    assert str(e.value) == "scheduler 'mris' has no parameter 'window'; valid parameters: mris_window"
    with pytest.raises(ParameterError, match="scheduler 'mris' has no parameter 'window'"):
        AnalysisSpec(scheduler_params={"mris": {"window": 8}}).checked()


def test_scheduler_params_are_kept_as_given_with_their_values_converted() -> None:
    spec = AnalysisSpec.from_dict({"scheduler_params": {"mris": {"mris_window": "8"}}})
    assert spec.scheduler_params == {"mris": {"mris_window": 8}}


def test_a_spec_round_trips_through_json() -> None:
    assert AnalysisSpec.from_dict(SMALL.to_dict()) == SMALL


# ---------------------------------------------------------------------------- statistics


def test_a_band_is_the_median_and_full_range_over_trials_and_p90_for_compaction() -> None:
    trials = [[1, 10], [2, 30], [9, 20]]
    assert band(trials) == {"p": [2.0, 20.0], "lo": [1.0, 10.0], "hi": [9.0, 30.0]}
    assert band(trials, "p90")["p"] == pytest.approx([7.6, 28.0])  # numpy's linear interpolation


# ---------------------------------------------------------------------------- the analysis


def test_hand_computed_utilisation_holes_and_compaction_of_a_two_machine_snapshot() -> None:
    # Two unit machines; the run placed 0.5 on each. Median machine (1, 1).
    s = snapshot([[1, 1], [1, 1]], [[0.5, 0.5], [0.5, 0.5]], [0, 1])
    out = analyse(s, SMALL)
    assert out["utilisation"]["utilisation"]["cpu"] == {"p": 0.5, "lo": 0.5, "hi": 0.5}
    # U = 0.5: one unit per machine -> full; U = 1.0: none fits -> unchanged.
    assert out["holes"]["utilisation"]["cpu"]["p"] == [1.0, 0.5]
    assert out["holes"]["units"]["p"] == [2.0, 0.0]
    # First fit packs both tasks on one machine: tau 0 needs 1 machine; tau 0.25 too (1 of 2 would be 50%).
    assert out["compaction"]["machines"] == {"p": [1.0, 1.0], "lo": [1.0, 1.0], "hi": [1.0, 1.0]}
    assert out["compaction"]["fraction"]["p"] == [0.5, 0.5]
    # Vertical inflation x2: each task becomes (1, 1), one per machine, nothing pending.
    assert out["inflation"]["schemes"]["vertical-all"]["pending"]["p"] == [0.0, 0.0]
    # Horizontal x2: four tasks of 0.5 on two machines, nothing pending, cpu 100%.
    hz = out["inflation"]["schemes"]["horizontal-all"]
    assert hz["pending"]["p"] == [0.0, 0.0] and hz["utilisation"]["cpu"]["p"] == [0.5, 1.0]
    assert hz["knee"]["p"] == 2.0


def test_the_analysis_gives_pinned_numbers_on_a_seeded_snapshot() -> None:
    """Seeded golden values, recorded from the analysis (issue 27: the test used to recompute them
    with the techniques and the analysis's private seed layout, so it could not disagree).

    30 machines of (0.5 or 1.0)^2, 120 tasks of up to 0.3 each, placed by the sum rule; hole filling
    with units 0.05 and 0.3, compaction over tau 0 .. 0.01 in 5 trials. A change to a technique,
    to the placement or to how the analysis seeds its trials changes these numbers.
    """
    rng = np.random.default_rng(4)
    s = Snapshot(RES, rng.choice([0.5, 1.0], (30, 2)), rng.uniform(0, 0.3, (120, 2)), np.full(120, -1), np.arange(120))
    spec = AnalysisSpec(techniques=("holes", "compaction"), placed_by="sum", units=(0.05, 0.3), trials=5)
    out = analyse(s, spec)
    # Larger units fill fewer holes: utilisation falls from unit 0.05 to 0.3 in both resources.
    assert out["holes"]["utilisation"]["mem"]["p"] == pytest.approx([0.8867488540422231, 0.8575821873755566], abs=1e-12)
    assert out["holes"]["utilisation"]["cpu"]["p"] == pytest.approx([0.8730648043020208, 0.8426300216933251], abs=1e-12)
    assert spec.taus == tuple(i / 1000 for i in range(11))
    # Compaction's machine counts, five trials per tau: a third trial reaches 29 from tau = 0.009 on.
    assert out["compaction"]["trials"] == [[29, 29, 30, 30, 30]] * 9 + [[29, 29, 29, 30, 30]] * 2
    assert out["compaction"]["machines"]["lo"] == [29.0] * 11 and out["compaction"]["machines"]["hi"] == [30.0] * 11


def test_the_same_spec_gives_the_same_numbers_and_techniques_do_not_disturb_each_other() -> None:
    rng = np.random.default_rng(5)
    s = Snapshot(RES, rng.choice([0.5, 1.0], (20, 2)), rng.uniform(0, 0.3, (80, 2)), np.full(80, -1), np.arange(80))
    a = analyse(s, SMALL)
    assert analyse(s, SMALL) == a
    only = analyse(s, AnalysisSpec(**{**SMALL.__dict__, "techniques": ("compaction",)}))
    assert only["compaction"] == a["compaction"]


def test_compare_puts_each_ordering_and_scheduler_side_by_side() -> None:
    rng = np.random.default_rng(6)
    s = Snapshot(RES, rng.choice([0.5, 1.0], (12, 2)), rng.uniform(0, 0.3, (40, 2)), np.full(40, -1), np.arange(40))
    out = analyse(s, AnalysisSpec(**{**SMALL.__dict__, "techniques": ("compare",), "schedulers": ("greedy",)}))
    cmp_ = out["compare"]
    assert [p["name"] for p in cmp_["policies"]] == ["arrival", "cpu", "greedy"]
    assert set(cmp_["results"]) == {"arrival", "cpu", "greedy"}
    for r in cmp_["results"].values():
        assert len(r["holes"]["cpu"]["p"]) == 2 and len(r["compaction"]["fraction"]["p"]) == 2
        assert r["horizontal"]["knee"]["lo"] <= r["horizontal"]["knee"]["p"] <= r["horizontal"]["knee"]["hi"]


def test_progress_reaches_one_and_never_goes_back() -> None:
    s = snapshot([[1, 1], [1, 1]], [[0.5, 0.5], [0.5, 0.5]])
    seen: list[float] = []
    analyse(s, SMALL, progress=lambda stage, f: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_series_tables_flatten_every_plotted_value() -> None:
    s = snapshot([[1, 1], [1, 1]], [[0.5, 0.5], [0.5, 0.5]], [0, 1])
    t = series_tables(analyse(s, SMALL))
    assert set(t) == {"utilisation", "holes", "inflation", "compaction", "compaction_trials", "compare"}
    holes_cpu = [r for r in t["holes"] if r["metric"] == "utilisation_cpu"]
    assert [(r["x"], r["point"], r["min"], r["max"]) for r in holes_cpu] == [(0.5, 1.0, 1.0, 1.0), (1.0, 0.5, 0.5, 0.5)]
    assert len(t["compaction_trials"]) == 2 * 3  # taus x trials
    # 4 schemes x (pending, pending fraction, cpu, mem) x 2 factors + 4 knees
    assert len(t["inflation"]) == 4 * 4 * 2 + 4


# ---------------------------------------------------------------------------- schedulers as policies


def test_machines_become_configurations_in_order_of_first_appearance() -> None:
    cap = np.array([[1.0, 1.0], [0.5, 0.5], [1.0, 1.0], [0.5, 0.5]])
    cl, row_of = cluster_of(RES, cap)
    assert cl.capacity.tolist() == [[1.0, 1.0], [0.5, 0.5]] and cl.counts.tolist() == [2, 2]
    assert row_of.tolist() == [0, 2, 1, 3]


def test_a_scheduler_placement_maps_back_to_the_given_rows_and_leaves_misfits_pending() -> None:
    cap = np.array([[0.5, 0.5], [1.0, 1.0], [0.5, 0.5], [1.0, 1.0]])
    req = np.array([[0.8, 0.8], [2.0, 2.0], [0.8, 0.8], [0.8, 0.8]])
    rows = place_by_scheduler(RES, cap, req, "greedy", seed=0)
    assert sorted(rows.tolist()) == [-1, -1, 1, 3]  # two big machines take one each; 2.0 fits nowhere
    assert rows[1] == -1


def test_compaction_by_a_first_fit_placer_matches_the_one_pack_shortcut_on_identical_machines() -> None:
    rng = np.random.default_rng(7)
    s = Snapshot(RES, np.ones((15, 2)), rng.uniform(0, 0.4, (60, 2)), np.full(60, -1), np.arange(60))

    def ff(capacity: np.ndarray, request: np.ndarray, seed: int) -> np.ndarray:
        return FirstFit(capacity.copy()).place(request)

    taus = (0.0, 0.05, 0.2)
    got = compact_by(s, ff, taus, trials=3, rng=np.random.default_rng(0))
    want = compact(s, taus, trials=3, rng=np.random.default_rng(0))
    assert got.sizes == want.sizes


# ---------------------------------------------------------------------------- sources


def test_a_snapshot_from_records_has_running_jobs_placed_and_queued_ones_pending() -> None:
    nan = np.nan
    submit = np.array([0.0, 1.0, 2.0, 3.0, 9.0])
    start = np.array([0.0, 1.0, nan, 3.0, nan])
    finish = np.array([4.0, 10.0, nan, 5.0, nan])
    machine = np.array([0, 1, -1, 0, -1])
    req = np.arange(10, dtype=float).reshape(5, 2) / 10
    s = from_records(submit, start, finish, machine, req, cluster([[1, 1]], [2]), 4.0)
    # At t = 4: job 0 finished, job 1 runs on machine 1, job 2 queued, job 3 runs, job 4 not submitted.
    assert s.job.tolist() == [1, 2, 3] and s.placement.tolist() == [1, -1, 0]
    np.testing.assert_array_equal(s.request, req[[1, 2, 3]])


def test_a_trace_snapshot_takes_each_task_to_start_when_submitted() -> None:
    wl = Workload(
        "t",
        RES,
        submit=np.array([0.0, 5.0, 10.0]),
        request=np.array([[0.1, 0.1], [0.2, 0.2], [0.3, 0.3]]),
        work=np.array([6.0, 5.0, 1.0]),
        job_class=np.full(3, -1),
        horizon_s=20.0,
    )
    s = from_trace(wl, cluster([[1, 1]], [1]), 5.0)
    assert s.job.tolist() == [0, 1] and s.n_pending == 2  # [0, 6) and [5, 10) hold 5; [10, 11) does not
    with pytest.raises(ParameterError, match=r"snapshot time must be in \[0, 20\] s"):
        from_trace(wl, cluster([[1, 1]], [1]), 25.0)
