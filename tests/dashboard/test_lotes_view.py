"""LoTES's offline plan as the page shows it (dashboard.experiments.lotes_view): one numbering, no phantom bins."""

from __future__ import annotations

from dashboard.experiments.lotes_view import plan_view

OFFLINE = {
    "classes": ["class 1", "class 2"],
    "lambda_stage1": 0.3549,
    "lambda_assignment_lp": 0.35,
    "lambda_rounded": 0.34,
    "class_source": {"source": "kmeans", "k": 2, "window_hours": 24.0},
    "configs": [
        {
            "name": "G1",
            "machines": 5,
            "K_used": ["class 2"],
            "n_bins": 3,
            "bins": [
                {"counts": {"class 2": 3}, "machines": 4, "machines_lp": 4.2},
                {"counts": {"class 1": 1, "class 2": 1}, "machines": 0, "machines_lp": 0.3},
                {"counts": {}, "machines": 1, "machines_lp": 0.5},
            ],
        },
        {"name": "G2", "machines": 2, "K_used": ["class 1"], "n_bins": 1, "bins": []},
    ],
}


def test_classes_and_configurations_carry_the_jobs_csv_number_and_their_name():
    v = plan_view(OFFLINE, 0.2948)
    assert v["classes"] == ["0 (class 1)", "1 (class 2)"]
    assert [r["config"] for r in v["rows"]] == ["0 (G1)", "1 (G2)"]
    assert v["rows"][0]["classes"] == "1 (class 2)"


def test_only_bins_with_machines_are_listed_as_emulated_and_the_rest_are_said_in_words():
    row = plan_view(OFFLINE, 0.2948)["rows"][0]
    assert row["bins"] == [{"jobs": "1\u00d73", "machines": 4}]
    assert row["empty_machines"] == 1 and row["lp_only_bins"] == 1


def test_a_lambda_different_from_the_summarys_is_explained():
    v = plan_view(OFFLINE, 0.2948)
    assert "k-means" in v["class_origin"]
    assert "differs from the summary's" in v["why_lambda_differs"] and "0.2948" in v["why_lambda_differs"]
    same = plan_view({**OFFLINE, "class_source": {"source": "workload"}}, 0.3549)
    assert "equals the summary's" in same["why_lambda_differs"]
