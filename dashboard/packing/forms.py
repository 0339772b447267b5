"""The new-packing-analysis form: a snapshot source and time, the techniques and policies, trials and seed.

Fields are parsed here; everything else is checked by
:func:`dashboard.packing.services.create_analysis` (simcore's own checks),
whose messages land next to the field they name (:func:`field_for`).
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.models import User

from dashboard.common.access import run_teams
from dashboard.common.models import Status, Team, Visibility
from dashboard.common.names import validate_name
from dashboard.experiments.access import visible_runs
from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.packing.services import DERIVED, SourceChoice
from dashboard.traces.models import ClusterUpload
from dashboard.traces.uploads import scenario_file_names, usable_traces
from simcore.core.errors import SimcoreError
from simcore.core.limits import MAX_SEED, MAX_TRIALS
from simcore.packing.analysis import AS_IS, TECHNIQUES, AnalysisSpec
from simcore.packing.placement import ORDERINGS
from simcore.packing.policy import check_scheduler_params, placing_schedulers
from simcore.presets import CLUSTERS, WORKLOADS

#: Finished runs offered in the run list (newest first); a run's page links here with it chosen.
MAX_RUN_CHOICES = 300

_DEFAULTS = AnalysisSpec()
#: The form's defaults: every technique, at a scale that finishes in minutes. The paper's (Figure 2's 21
#: factors, 11 trials: simcore's AnalysisSpec defaults) took 22 minutes on the shared Google sample (part
#: 00000, 142,923 tasks on 12,583 machines); inflation and the Figure 4 comparison cost factors x trials
#: packs of the whole snapshot, so 5 factors and 3 trials do about a tenth of the work (docs/notes/defaults.md).
QUICK_FACTORS: tuple[float, ...] = (1.0, 1.25, 1.5, 1.75, 2.0)
QUICK_TRIALS = 3


def _csv(values: tuple[float, ...]) -> str:
    return ",".join(f"{v:g}" for v in values)


def _parse_floats(text: str, what: str) -> list[float]:
    out = []
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise forms.ValidationError(f"{what}: {part.strip()!r} is not a number") from None
    if not out:
        raise forms.ValidationError(f"{what}: give at least one number")
    return out


def _number() -> forms.NumberInput:
    return forms.NumberInput(attrs={"step": "any"})


class PackingForm(forms.Form):
    name = forms.CharField(
        max_length=200, required=False, help_text="optional, for the list", validators=[validate_name]
    )
    source = forms.ChoiceField(
        choices=PackingSource.choices, initial=PackingSource.RUN, widget=forms.RadioSelect, label="snapshot of"
    )
    run = forms.ChoiceField(required=False, help_text="a finished run you can see")
    trace = forms.ChoiceField(required=False, help_text="one of your imported traces")
    trace_cluster = forms.ChoiceField(
        required=False,
        label="machines",
        help_text="the machines of its import (derived, or the preset it was read against), a preset or your upload",
    )
    min_priority = forms.IntegerField(
        required=False,
        min_value=0,
        label="minimum priority",
        help_text="keep only tasks of at least this priority: 9 keeps production work (priorities 9-11), as the "
        "paper's snapshots did; empty keeps every task (Google 2011 imports)",
    )
    cluster = forms.ChoiceField(required=False, help_text="a preset (default size) or your uploaded cluster")
    workload = forms.ChoiceField(required=False, help_text="a generated workload preset")
    load = forms.FloatField(required=False, initial=0.9, min_value=0.01, max_value=10.0, widget=_number())
    hours = forms.FloatField(
        required=False, initial=0.1, min_value=0.001, max_value=24 * 365, widget=_number(), help_text="arrival window"
    )
    scheduler = forms.ChoiceField(required=False, help_text="the scheduler of the simulation")
    scenario_seed = forms.IntegerField(required=False, initial=0, min_value=0, max_value=MAX_SEED, label="seed")
    time_s = forms.FloatField(
        min_value=0,
        widget=_number(),
        label="snapshot time (s)",
        help_text="seconds into the run, trace window or simulation",
    )
    techniques = forms.MultipleChoiceField(
        choices=list(TECHNIQUES.items()),
        initial=list(TECHNIQUES),
        widget=forms.CheckboxSelectMultiple,
    )
    placed_by = forms.ChoiceField(
        required=False,
        help_text="how the snapshot is placed for utilisation and hole filling (a trace has no placement: "
        "choose an ordering or a scheduler)",
    )
    repack_with = forms.ChoiceField(
        required=False, help_text="the policy inflation and compaction reschedule with (Figures 2 and 3)"
    )
    orderings = forms.MultipleChoiceField(
        choices=list(ORDERINGS.items()),
        initial=list(ORDERINGS),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Figure 4: first fit in these orders",
    )
    schedulers = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Figure 4: these schedulers' own rules (each probe is a simulation: slower)",
    )
    units = forms.CharField(
        initial=_csv(_DEFAULTS.units), max_length=2000, help_text="hole unit sizes U, fractions of the median machine"
    )
    factors = forms.CharField(
        initial=_csv(QUICK_FACTORS),
        max_length=2000,
        help_text=f"inflation scale factors f (Figure 2: {_csv(_DEFAULTS.factors[:3])}, ... {_DEFAULTS.factors[-1]:g})",
    )
    taus = forms.CharField(
        initial=_csv(_DEFAULTS.taus), max_length=2000, help_text="fractions of tasks allowed to go pending, in [0, 1)"
    )
    scheduler_params = forms.CharField(
        required=False,
        max_length=2000,
        label="scheduler parameters",
        help_text="optional, scheduler.parameter=value separated by commas, e.g. tetris.work_weight=0.5 "
        "(the parameters an experiment takes)",
    )
    trials = forms.IntegerField(
        initial=QUICK_TRIALS, min_value=1, max_value=MAX_TRIALS, help_text="the paper ran 11 (slower in proportion)"
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=MAX_SEED)
    team = forms.ModelChoiceField(queryset=Team.objects.none(), required=False, empty_label="no team (my space)")
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.PRIVATE, required=False)

    def __init__(self, *args: Any, owner: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        cast(forms.ModelChoiceField, self.fields["team"]).queryset = run_teams(owner)
        runs = (
            visible_runs(owner)
            .filter(status=Status.FINISHED)
            .select_related("experiment")
            .order_by("-experiment__created", "experiment_id", "seed", "id")[:MAX_RUN_CHOICES]
        )
        self.runs = {str(r.pk): r for r in runs}
        self.traces = {str(t.pk): t for t in usable_traces(owner).select_related("cluster_upload")}
        self.clusters = {str(c.pk): c for c in ClusterUpload.objects.filter(owner=owner).defer("content_gz")}
        uploads = [(f"upload:{k}", f"upload: {c.name}") for k, c in self.clusters.items()]
        presets = [(f"preset:{n}", n) for n in CLUSTERS.names()]
        self._set("run", [("", "---")] + [(k, _run_label(r)) for k, r in self.runs.items()])
        self._set("trace", [("", "---")] + [(k, t.name) for k, t in self.traces.items()])
        self._set("trace_cluster", [(DERIVED, "the machines of its import")] + presets + uploads)
        self._set("cluster", presets + uploads)
        self._set("workload", [(n, n) for n in WORKLOADS.names()])
        scheds = placing_schedulers()
        self._set("scheduler", [(s, s) for s in scheds])
        self._set("schedulers", [(s, s) for s in scheds])
        policies = [(o, f"{o} (first fit)") for o in ORDERINGS] + [(s, f"{s} (scheduler)") for s in scheds]
        self._set("placed_by", [(AS_IS, "as-is (the run's own placement)"), *policies])
        self._set("repack_with", policies)

    def _set(self, name: str, choices: list[tuple[str, str]]) -> None:
        cast(forms.ChoiceField, self.fields[name]).choices = choices

    def clean_units(self) -> list[float]:
        return _parse_floats(self.cleaned_data["units"], "unit sizes")

    def clean_factors(self) -> list[float]:
        return _parse_floats(self.cleaned_data["factors"], "scale factors")

    def clean_taus(self) -> list[float]:
        return _parse_floats(self.cleaned_data["taus"], "taus")

    def clean_scheduler_params(self) -> dict[str, dict[str, str]]:
        """``tetris.work_weight=0.5,...`` as {scheduler: {parameter: text}}; simcore checks names and values."""
        out: dict[str, dict[str, str]] = {}
        for item in (i.strip() for i in self.cleaned_data["scheduler_params"].split(",")):
            if not item:
                continue
            key, eq, value = item.partition("=")
            scheduler, dot, param = key.strip().partition(".")
            if not (eq and dot and scheduler and param.strip() and value.strip()):
                raise forms.ValidationError(
                    f"{item!r}: expected scheduler.parameter=value, e.g. tetris.work_weight=0.5"
                )
            params = out.setdefault(scheduler, {})
            if param.strip() in params:
                raise forms.ValidationError(f"{item!r}: {scheduler}.{param.strip()} is given twice")
            params[param.strip()] = value.strip()
        try:
            check_scheduler_params(out)  # the rule experiments follow: an unknown scheduler or key named
        except SimcoreError as e:
            raise forms.ValidationError(str(e)) from None
        return out

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        src = data.get("source")
        if src == PackingSource.RUN and not data.get("run"):
            self.add_error("run", "choose a run")
        if src == PackingSource.TRACE and not data.get("trace"):
            self.add_error("trace", "choose a trace")
        if src == PackingSource.SCENARIO:
            for f in ("cluster", "workload", "scheduler"):
                if not data.get(f):
                    self.add_error(f, f"choose a {f}")
        return data

    def choice(self) -> SourceChoice:
        """The source as the service takes it (after is_valid)."""
        d = self.cleaned_data
        src = d["source"]
        if src == PackingSource.RUN:
            return SourceChoice(src, run=self.runs[d["run"]])
        if src == PackingSource.TRACE:
            tc = d.get("trace_cluster") or DERIVED
            up = self.clusters[tc.split(":", 1)[1]] if tc.startswith("upload:") else None
            preset = tc.split(":", 1)[1] if tc.startswith("preset:") else (DERIVED if tc == DERIVED else None)
            return SourceChoice(
                src,
                trace=self.traces[d["trace"]],
                cluster_preset=preset,
                cluster_upload=up,
                min_priority=d.get("min_priority"),
            )
        cl = d["cluster"]
        cup = self.clusters[cl.split(":", 1)[1]] if cl.startswith("upload:") else None
        cluster = (
            {"file": scenario_file_names(cup, None)["cluster"], "name": cup.name}
            if cup is not None
            else {"preset": cl.split(":", 1)[1], "params": {}}
        )
        scenario = {
            "cluster": cluster,
            "workload": {"preset": d["workload"], "params": {}},
            "load": d.get("load") or 0.9,
            "hours": d.get("hours"),
            "schedulers": [d["scheduler"]],
            "seeds": [d.get("scenario_seed") or 0],
        }
        return SourceChoice(src, scenario=scenario, cluster_upload=cup)

    def spec(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "techniques": list(d["techniques"]),
            "placed_by": d.get("placed_by") or AS_IS,
            "repack_with": d.get("repack_with") or "arrival",
            "orderings": list(d.get("orderings") or []),
            "schedulers": list(d.get("schedulers") or []),
            "units": d["units"],
            "factors": d["factors"],
            "taus": d["taus"],
            "trials": d["trials"],
            "seed": d["seed"],
            "scheduler_params": d.get("scheduler_params") or {},
        }

    def field_for(self, message: str) -> str | None:
        """The field a service error is about (None: the form as a whole)."""
        m = message.lower()
        rules = (
            ("min_priority", "min_priority"),
            ("snapshot", "time_s"),
            ("scheduler_params", "scheduler_params"),
            ("' parameter '", "scheduler_params"),  # the platform's bounds on a scheduler's parameter
            ("tau", "taus"),
            ("unit size", "units"),
            ("scale factor", "factors"),
            ("trials", "trials"),
            ("seed", "seed"),
            ("placed_by", "placed_by"),
            ("place its snapshot", "placed_by"),
            ("repack_with", "repack_with"),
            ("ordering", "orderings"),
            ("team", "team"),
            ("visibility", "visibility"),
            ("machines", "trace_cluster"),
            ("resources", "trace_cluster"),
            ("scheduler", "schedulers"),
        )
        for key, field in rules:
            if key in m and field in self.fields:
                return field
        return None


def _run_label(r: Any) -> str:
    # A sweep's cells differ by their point: "greedy seed 0" three times for three loads told nothing apart.
    return f"#{r.experiment_id} {r.experiment.title}: {r}"


def initial_from(a: PackingAnalysis) -> dict[str, Any]:
    """The form's initial values to start an analysis again with the same settings."""
    s = a.spec
    init: dict[str, Any] = {
        "name": a.name,
        "source": a.source,
        "time_s": a.time_s,
        "techniques": s["techniques"],
        "placed_by": s["placed_by"],
        "repack_with": s["repack_with"],
        "orderings": s["orderings"],
        "schedulers": s["schedulers"],
        "units": _csv(tuple(s["units"])),
        "factors": _csv(tuple(s["factors"])),
        "taus": _csv(tuple(s["taus"])),
        "trials": s["trials"],
        "seed": s["seed"],
        "scheduler_params": ",".join(
            f"{n}.{k}={v}" for n, params in (s.get("scheduler_params") or {}).items() for k, v in params.items()
        ),
        "visibility": Visibility.PRIVATE,
    }
    if a.run_id:
        init["run"] = str(a.run_id)
    if a.trace_upload_id:
        init["trace"] = str(a.trace_upload_id)
        init["min_priority"] = a.source_spec.get("min_priority")
        c = a.source_spec.get("cluster", {})
        init["trace_cluster"] = (
            f"upload:{c['upload']}"
            if "upload" in c
            else f"preset:{c['preset']}"
            if "preset" in c and not c.get("from_import")
            else DERIVED
        )
    sc = a.source_spec.get("scenario")
    if sc:
        init["cluster"] = (
            f"upload:{a.cluster_upload_id}" if a.cluster_upload_id else f"preset:{sc['cluster'].get('preset', '')}"
        )
        init.update(
            workload=sc["workload"].get("preset", ""),
            load=sc["load"],
            hours=sc["hours"],
            scheduler=sc["schedulers"][0],
            scenario_seed=sc["seeds"][0],
        )
    return init
