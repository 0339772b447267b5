"""The new-search form: the experiment form's scenario part (presets, uploads, parameters) and the search's settings."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User

from dashboard.common.models import Visibility
from dashboard.experiments.forms import DEFAULT_LOAD, SEP, ExperimentForm
from dashboard.searches.models import Search
from dashboard.searches.services import MAX_WEB_GENERATIONS, MAX_WEB_POPULATION, check_search
from dashboard.traces.uploads import upload_specs
from simcore.core.errors import SimcoreError
from simcore.core.limits import MAX_SEED
from simcore.dse.explore.fitness import METRIC_NAMES
from simcore.dse.explore.search import DEFAULT_GENERATIONS, DEFAULT_POPULATION, SearchSettings
from simcore.presets import CLUSTERS, WORKLOADS

METRIC_CHOICES = [
    ("trt", "TRT: mean task response time (submission to completion)"),
    ("jms", "JMS: mean job makespan"),
    ("njsl", "NJSL: mean normalised job-schedule length (makespan over critical path)"),
    ("jwt", "JWT: mean job waiting time (submission to first task start)"),
]
assert [m for m, _ in METRIC_CHOICES] == list(METRIC_NAMES)

#: The form's cap on generations. Searches of the crafted workload converge after 34-68 generations (the
#: design-space tutorial's five seeds; 37 at the form's defaults, 54 s), so the paper's cap of 500 only bounded
#: a search that never converges: 16,000 simulations, where 100 bounds it at 3,200.
QUICK_GENERATIONS = 100

#: What a new search starts from: the design-space paper's environment and the crafted workload.
DEFAULT_CLUSTER = "dse-2020"
DEFAULT_WORKLOAD = "workflows-short-long"


class SearchForm(ExperimentForm):
    """A search: where to simulate (the experiment form's scenario), what to optimise, how to search."""

    metric = forms.ChoiceField(choices=METRIC_CHOICES, initial="trt", help_text="the objective, minimised")
    population = forms.IntegerField(
        initial=DEFAULT_POPULATION,
        min_value=2,
        max_value=MAX_WEB_POPULATION,
        help_text="individuals (schedulers) per generation",
    )
    generations = forms.IntegerField(
        initial=QUICK_GENERATIONS,
        min_value=1,
        max_value=MAX_WEB_GENERATIONS,
        help_text=f"most generations (the paper's cap: {DEFAULT_GENERATIONS}); the search stops earlier once the "
        "elite's fitness converges",
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=MAX_SEED, help_text="seed of the genetic search")
    sim_seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_SEED,
        help_text="seed of the simulations (generated workload, Random atoms); blank: the search's seed",
    )

    def __init__(self, *args: Any, owner: User, source: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, owner=owner, source=source, **kwargs)
        for name in ("schedulers", "seeds", "drain"):
            del self.fields[name]
        for kind, _, keys in self.param_groups:
            if kind == "scheduler":
                for key in keys:
                    del self.fields[key]
        self.param_groups = [g for g in self.param_groups if g[0] != "scheduler"]
        self.fields["load"].help_text = "generated workloads: offered load (the preset says of what)"
        if not self.is_bound and not self.initial.get("workload"):
            if DEFAULT_WORKLOAD in WORKLOADS:
                self.fields["workload"].initial = f"preset:{DEFAULT_WORKLOAD}"
            if DEFAULT_CLUSTER in CLUSTERS:
                self.fields["cluster"].initial = f"preset:{DEFAULT_CLUSTER}"
            # The experiment form's quick-start load and hours belong to its workload, not to this one.
            self.fields["load"].initial = DEFAULT_LOAD
            self.fields["hours"].initial = None
        # The form's own fields first, the sharing ones last (the template lays them out by name anyway).
        self.order_fields(["name", "cluster", "workload", "load", "hours", "metric", "population", "generations"])

    def clean(self) -> dict[str, Any]:
        forms.Form.clean(self)
        cd = self.cleaned_data
        if self.errors:
            return cd
        scenario: dict[str, Any] = {"load": cd["load"], "hours": cd.get("hours")}
        self.cluster_upload = None
        self.trace_upload = None
        for kind in ("cluster", "workload"):
            src, _, ref = cd[kind].partition(":")
            if src == "preset":
                scenario[kind] = {"preset": ref, "params": self._params(kind, ref)}
            elif kind == "cluster":
                self.cluster_upload = self.cluster_uploads[ref]
            else:
                self.trace_upload = self.trace_uploads[ref]
        scenario.update(upload_specs(self.cluster_upload, self.trace_upload))
        scenario["workload"].pop("classes", None)  # job classes are LoTES's; a search has no use for them
        self.settings = SearchSettings(cd["metric"], cd["population"], cd["generations"], cd["seed"])
        self.simulation_seed: int = cd["seed"] if cd.get("sim_seed") is None else cd["sim_seed"]
        try:
            self.scenario = check_search(scenario, self.settings, self.simulation_seed)
            from dashboard.common.sharing import check_team_choice

            check_team_choice(self.owner, cd.get("team"), cd["visibility"])
        except SimcoreError as e:
            self.add_error(self._search_field_for(str(e)), str(e))
        return cd

    def _search_field_for(self, message: str) -> str | None:
        for name in ("population", "generations", "sim_seed", "seed", "metric"):
            if message.startswith(name):
                return name
        return self._field_for(message)


def initial_from_search(search: Search, name: str = "") -> dict[str, Any]:
    """Form data that reproduces ``search`` (a fork starts from it)."""
    data: dict[str, Any] = {
        "name": name,
        "load": search.scenario.get("load", 0.9),
        "hours": search.scenario.get("hours"),
        "metric": search.metric,
        "population": search.population,
        "generations": search.max_generations,
        "seed": search.seed,
        "sim_seed": search.sim_seed,
        "visibility": Visibility.PRIVATE,
    }
    for kind, up in (("cluster", search.cluster_upload), ("workload", search.trace_upload)):
        spec = search.scenario[kind]
        if "preset" in spec:
            data[kind] = f"preset:{spec['preset']}"
            for k, v in (spec.get("params") or {}).items():
                data[SEP.join((kind, spec["preset"], k))] = v
        elif up is not None:
            data[kind] = f"upload:{up.pk}"
    return data
