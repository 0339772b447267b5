"""The forms' defaults finish in minutes: a search's cap on generations, a packing analysis' factors and trials."""

from __future__ import annotations

from django.urls import reverse

from simcore.packing.analysis import AnalysisSpec


def test_a_new_search_is_capped_at_100_generations_of_32(owner_client):
    form = owner_client.get(reverse("search-new")).context["form"]
    assert (form["population"].initial, form["generations"].initial) == (32, 100)
    assert "the paper's cap: 500" in form.fields["generations"].help_text


def test_a_new_packing_analysis_starts_at_five_factors_and_three_trials(owner_client):
    form = owner_client.get(reverse("packing-new")).context["form"]
    assert form["factors"].initial == "1,1.25,1.5,1.75,2" and form["trials"].initial == 3
    # Every technique is still on; the paper's scale (simcore's own defaults) stays one edit away.
    assert len(form["techniques"].initial) == 5
    assert (len(AnalysisSpec().factors), AnalysisSpec().trials) == (21, 11)
    assert "Figure 2: 1,1.05,1.1, ... 2" in form.fields["factors"].help_text


def test_a_preselected_trace_opens_without_the_quick_starts_hours(owner_client):
    form = owner_client.get(reverse("experiment-new"), {"workload": "upload:7"}).context["form"]
    assert form["hours"].initial is None and form["load"].initial == 1.0
