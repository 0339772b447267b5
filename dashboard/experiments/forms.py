"""Forms generated from the simcore registries, so new presets and schedulers appear by themselves.

Every preset and scheduler parameter (a :class:`simcore.schedulers.base.Param`)
becomes a field named ``<kind>__<name>__<param>``; the page shows only the
fields of the chosen cluster, workload and schedulers, and validation looks
only at those. Errors from simcore's own checks land next to the field they
name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib.auth.models import User

from dashboard.common.access import run_teams
from dashboard.common.models import Team, Visibility
from dashboard.common.names import validate_name
from dashboard.common.sharing import check_team_choice
from dashboard.experiments.results import load_note
from dashboard.experiments.services import MAX_SEEDS, SERVER_PATH_PARAMS, check_scenario, fork_uploads
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import upload_specs, usable_traces
from simcore import records, sweep
from simcore.core.errors import SimcoreError
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param
from simcore.sweep import grammar as sweep_grammar

SEP = "__"
MAX_SEEDS = MAX_SEEDS


def _coerce(t: type) -> Callable[[Any], Any]:
    return lambda v: t(v)


def param_field(p: Param) -> forms.Field:
    """A form field for one registry parameter, with its default, range and help."""
    common: dict[str, Any] = {"required": False, "help_text": p.help, "label": p.name.replace("_", " ")}
    if p.choices is not None:
        return forms.TypedChoiceField(
            choices=[(c, str(c)) for c in p.choices], coerce=_coerce(p.type), initial=p.default, **common
        )
    if p.type is bool:
        return forms.BooleanField(initial=bool(p.default), **common)
    if p.type is int:
        return forms.IntegerField(
            initial=p.default,
            min_value=None if p.min is None else int(p.min),
            max_value=None if p.max is None else int(p.max),
            **common,
        )
    if p.type is float:
        return forms.FloatField(
            initial=p.default,
            min_value=p.min,
            max_value=p.max,
            widget=forms.NumberInput(attrs={"step": "any"}),
            **common,
        )
    return forms.CharField(initial=p.default, **common)


def parse_seeds(text: str) -> list[int]:
    """'0', '0,1,5' or '0-4' -> list of seeds (simcore's rules, as `simcore sweep --seeds`); ValidationError says
    what is wrong."""
    try:
        return sweep.parse_seeds(text)  # at most MAX_SEEDS seeds, each below 2^32 (simcore.core.limits)
    except SimcoreError as e:
        raise forms.ValidationError(str(e).removeprefix("--seeds: ")) from None


seeds_text = sweep.seeds_text

#: The new-experiment form's defaults: the LoTES paper's section 5.4.2 comparison (Greedy, Tetris, LoTES) at
#: its load, 0.97 of the machine-assignment LP's lambda, on a 200-machine cluster of the Table 1
#: configurations, for 25 hours: about 155,000 jobs a run, the three runs take about 20 s on this project's
#: busy 2-core machine. Every job asks its class's mean (request_cv 0): there Greedy's queue grows without
#: bound, Tetris waits 13.7 s on average and LoTES 2.2 s (seed 0). With the paper's per-job variability
#: (request_cv 0.5) Tetris leads LoTES instead, the difference docs/notes/defaults.md records; the form shows
#: the field, so one change runs it. (google-like at load 0.9, the former default, started almost every
#: job at once: mean waits of 0, 0.07 and 0.08 s and every percentile 0.)
QUICK_START: dict[str, Any] = {
    "cluster": "preset:google-balanced",
    "cluster__google-balanced__machines_per_config": 20,
    "workload": "preset:lotes-phi",
    "workload__lotes-phi__load_basis": "assignment",
    "workload__lotes-phi__request_cv": 0.0,
    "load": 0.97,
    "hours": 25.0,
    "schedulers": ["greedy", "tetris", "lotes"],
}
#: The load a scenario records when its workload does not use one (the field is then disabled).
DEFAULT_LOAD = 0.9


def vary_lines(text: str) -> list[str]:
    """The non-empty lines of the form's ``vary`` box: one ``NAME=VALUES`` axis each (simcore sweep --vary)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class ExtendForm(forms.Form):
    """More seeds or more values of a sweep's axes; only missing cells run."""

    seeds = forms.CharField(required=False, max_length=200, help_text="more seeds, e.g. 5-9")
    vary = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50, "placeholder": "phi=0.018,0.021"}),
        help_text="more values of an axis the sweep has, one axis a line (NAME=VALUES, ranges allowed)",
    )

    def clean_vary(self) -> list[str]:
        return vary_lines(self.cleaned_data.get("vary", ""))


def job_records_field() -> forms.CharField:
    """The per-job records choice of every form that starts runs (an experiment, a sweep, a reproduction)."""
    return forms.CharField(
        required=False,
        initial=records.DEFAULT,
        max_length=40,
        label="per-job records",
        help_text=f"which jobs' records each run keeps for jobs.csv / jobs.parquet: auto (all up to "
        f"{records.AUTO_ALL_UP_TO:,} jobs, a seeded sample of {records.AUTO_SAMPLE:,} above), all, none, or "
        "sample:N (a sample of N jobs drawn from the run's seed). Summaries, statistics and charts always "
        "use every job",
    )


def clean_job_records(value: str | None) -> str:
    """The records policy a form field holds, checked (blank: the default), or the error that names it."""
    try:
        return records.parse_policy(value or records.DEFAULT, "per-job records")
    except SimcoreError as e:
        raise forms.ValidationError(str(e)) from None


class ReproductionForm(forms.Form):
    """The scale knobs of one paper reproduction (simcore.reproductions), generated from its parameters."""

    def __init__(self, rep: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", rep.name)
        super().__init__(*args, **kwargs)
        self.rep = rep
        for p in rep.scale:
            self.fields[p.name] = param_field(p)
        # Not a scale knob: what each run keeps of its jobs (a paper-scale cell has tens of millions).
        self.fields["job_records"] = job_records_field()

    def clean_job_records(self) -> str:
        return clean_job_records(self.cleaned_data.get("job_records"))

    def clean(self) -> dict[str, Any]:
        super().clean()
        if not self.errors:
            given = {k: v for k, v in self.cleaned_data.items() if k != "job_records" and v is not None and v != ""}
            try:
                self.scale = self.rep.scale_values(given)
                self.rep.sweep(self.scale)
            except SimcoreError as e:
                self.add_error(None, str(e))
        return self.cleaned_data


class ExperimentForm(forms.Form):
    name = forms.CharField(
        max_length=200, required=False, help_text="optional, for the list", validators=[validate_name]
    )
    cluster = forms.ChoiceField(help_text="a preset or one of your uploaded cluster files")
    workload = forms.ChoiceField(help_text="a preset (generated) or one of your uploaded traces")
    load = forms.FloatField(
        initial=DEFAULT_LOAD,
        required=False,
        min_value=0.01,
        max_value=10.0,
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text="preset: arrival rate as a fraction of the allocation-LP bound lambda*; uploaded trace: "
        "replay rate (inter-arrival times divided by it; 1 = as recorded, 1.2 = the same trace at 1.2x)",
    )
    hours = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=24 * 365,
        widget=forms.NumberInput(attrs={"step": "any"}),
        help_text="arrival window; blank: the preset's default (whole trace for uploads)",
    )
    drain = forms.BooleanField(required=False, help_text="keep simulating after the window until all jobs finish")
    schedulers = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, help_text="the schedulers to compare")
    seeds = forms.CharField(initial="0", max_length=200, help_text="e.g. 0 or 0,1,2 or 0-4")
    vary = forms.CharField(
        required=False,
        max_length=2000,
        label="sweep: vary",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60, "placeholder": "phi=0:0.015:0.003"}),
        help_text="optional, one parameter a line, as simcore sweep --vary: NAME=V1,V2 or a range "
        "START:STOP:STEP or START:STOP:xFACTOR; NAME is load, hours, cluster, workload or any parameter of the "
        "chosen presets and schedulers. Every value x scheduler x seed is one run; a varied parameter's "
        "field above is ignored",
    )
    engine = forms.ChoiceField(
        choices=(
            ("compiled", "compiled (default)"),
            ("python", "Python reference"),
        ),
        initial="compiled",
        required=False,
        help_text="compiled: a built-in scheduler runs its numba kernel (same schedule, many times faster; "
        "schedulers without one, and plugins, run in Python and the run says so); Python: the readable "
        "reference loop, to check a result against the specification",
    )
    job_records = job_records_field()
    reuse = forms.BooleanField(
        required=False,
        initial=True,
        label="reuse cached results",
        help_text="a run whose scenario, parameters, seed, scheduler and code version equal one you can "
        "see takes its result instead of running again",
    )
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="no team (my space)",
        help_text="a team you run experiments in",
    )
    visibility = forms.ChoiceField(
        choices=Visibility.choices,
        initial=Visibility.PRIVATE,
        required=False,
        help_text="who can read it; a public link can be revoked later",
    )

    def __init__(self, *args: Any, owner: User, source: Any = None, **kwargs: Any) -> None:
        """``source``: the experiment being forked; its uploads are offered besides the owner's."""
        super().__init__(*args, **kwargs)
        self.owner = owner
        cast(forms.ModelChoiceField, self.fields["team"]).queryset = run_teams(owner)
        self.cluster_uploads = {str(u.pk): u for u in ClusterUpload.objects.filter(owner=owner).defer("content_gz")}
        # Only traces whose import finished: a pending or failed one has no trace to run.
        self.trace_uploads = {str(u.pk): u for u in usable_traces(owner)}
        if source is not None:
            # Readable through the experiment being forked, and only for this fork.
            cu, tu = fork_uploads(source)
            if cu is not None:
                self.cluster_uploads.setdefault(str(cu.pk), cu)
            if tu is not None:
                self.trace_uploads.setdefault(str(tu.pk), tu)
        cluster_choices: list[Any] = [
            ("Presets", [(f"preset:{n}", f"{n} - {p.description}") for n, p in CLUSTERS.items()])
        ]
        if self.cluster_uploads:
            cluster_choices.append(("Uploaded", [(f"upload:{k}", str(u)) for k, u in self.cluster_uploads.items()]))
        workload_choices: list[Any] = [
            ("Presets", [(f"preset:{n}", f"{n} - {p.description}") for n, p in WORKLOADS.items()])
        ]
        if self.trace_uploads:
            workload_choices.append(("Uploaded", [(f"upload:{k}", str(u)) for k, u in self.trace_uploads.items()]))
        cast(forms.ChoiceField, self.fields["cluster"]).choices = cluster_choices
        cast(forms.ChoiceField, self.fields["workload"]).choices = workload_choices
        names = SCHEDULERS.names()
        # A scheduler's declared needs (Scheduler.requires) show beside it; an incompatible
        # choice is refused by validation with the reason.
        cast(forms.ChoiceField, self.fields["schedulers"]).choices = [(n, _scheduler_label(n)) for n in names]
        # Defaults that work together and finish quickly (QUICK_START), as far as the registries have them.
        self.fields["schedulers"].initial = [n for n in QUICK_START["schedulers"] if n in names] or names[:1]
        for key in ("cluster", "workload"):
            kind, _, name = QUICK_START[key].partition(":")
            if name in (CLUSTERS if key == "cluster" else WORKLOADS):
                self.fields[key].initial = QUICK_START[key]
        # The quick start's load and hours go with its workload, not with a trace a link preselects.
        if str(self.initial.get("workload", self.fields["workload"].initial)) == QUICK_START["workload"]:
            self.fields["load"].initial = QUICK_START["load"]
            self.fields["hours"].initial = QUICK_START["hours"]
        # One field per parameter of every preset and scheduler; the template groups them.
        self.param_groups: list[tuple[str, str, list[str]]] = []
        for kind, items in (
            ("cluster", CLUSTERS.items()),
            ("workload", WORKLOADS.items()),
            ("scheduler", SCHEDULERS.items()),
        ):
            for name, obj in items:
                keys = []
                for p in obj.params:
                    if p.name in SERVER_PATH_PARAMS:
                        continue  # names a file on the server: the web never sets it
                    key = SEP.join((kind, name, p.name))
                    self.fields[key] = param_field(p)
                    if key in QUICK_START:
                        self.fields[key].initial = QUICK_START[key]
                    keys.append(key)
                self.param_groups.append((kind, name, keys))

    # -- what the page's script needs to disable what does not apply -----------------
    def capabilities(self) -> dict[str, Any]:
        """Per workload choice: what it offers schedulers and whether ``load`` applies; per scheduler: its needs."""
        from simcore.presets import workload_provides
        from simcore.schedulers.base import REQUIREMENTS

        workloads: dict[str, Any] = {}
        for group in cast(list[Any], cast(forms.ChoiceField, self.fields["workload"]).choices):
            for value, _ in group[1]:
                src, _, ref = str(value).partition(":")
                if src == "preset":
                    preset = WORKLOADS.get(ref)
                    provides, uses_load = sorted(workload_provides({"preset": ref})[0]), preset.uses_load
                else:
                    provides, uses_load = [], True
                workloads[str(value)] = {
                    "provides": provides,
                    "uses_load": uses_load,
                    # An uploaded trace's load is a replay rate: 1 replays it as recorded.
                    "default_load": (QUICK_START["load"] if value == QUICK_START["workload"] else DEFAULT_LOAD)
                    if src == "preset"
                    else 1.0,
                    # The hours box follows the workload too: the quick start's, else blank (the preset's own).
                    "default_hours": QUICK_START["hours"] if value == QUICK_START["workload"] else "",
                    "load_note": "" if uses_load else load_note(ref),
                }
        schedulers = {
            n: {
                "requires": sorted(c.requires),
                "why": "needs " + "; ".join(REQUIREMENTS.get(r, r) for r in sorted(c.requires)),
            }
            for n, c in SCHEDULERS.items()
        }
        return {"workloads": workloads, "schedulers": schedulers}

    # -- the groups the template shows -------------------------------------------
    def groups(self, kind: str) -> list[tuple[str, list[forms.BoundField]]]:
        return [(name, [self[k] for k in keys]) for k_, name, keys in self.param_groups if k_ == kind and keys]

    def cluster_param_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        return self.groups("cluster")

    def workload_param_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        return self.groups("workload")

    def scheduler_param_groups(self) -> list[tuple[str, list[forms.BoundField]]]:
        return self.groups("scheduler")

    # -- validation ---------------------------------------------------------------
    def _selected(self) -> set[tuple[str, str]]:
        data = self.data
        out = set()
        for kind in ("cluster", "workload"):
            v = str(data.get(kind, ""))
            if v.startswith("preset:"):
                out.add((kind, v[len("preset:") :]))
        for s in data.getlist("schedulers") if hasattr(data, "getlist") else data.get("schedulers", []):
            out.add(("scheduler", s))
        return out

    def _clean_fields(self) -> None:
        super()._clean_fields()  # type: ignore[misc]  # Django's hook, absent from the stubs
        # Parameters of presets and schedulers that were not chosen do not matter.
        chosen = self._selected()
        for kind, name, keys in self.param_groups:
            if (kind, name) not in chosen:
                for key in keys:
                    self.errors.pop(key, None)
                    self.cleaned_data.pop(key, None)

    def clean_visibility(self) -> str:
        return self.cleaned_data.get("visibility") or Visibility.PRIVATE

    def clean_job_records(self) -> str:
        return clean_job_records(self.cleaned_data.get("job_records"))

    def clean_seeds(self) -> list[int]:
        return parse_seeds(self.cleaned_data.get("seeds", ""))

    def clean_vary(self) -> list[str]:
        return vary_lines(self.cleaned_data.get("vary", ""))

    def _params(self, kind: str, name: str) -> dict[str, Any]:
        out = {}
        for k_, n, keys in self.param_groups:
            if (k_, n) == (kind, name):
                for key in keys:
                    v = self.cleaned_data.get(key)
                    if v is not None and v != "":
                        out[key.split(SEP)[2]] = v
        return out

    def clean(self) -> dict[str, Any]:
        super().clean()
        cd = self.cleaned_data
        if self.errors:
            return cd
        load = cd.get("load")
        if load is None:
            src, _, ref = str(cd["workload"]).partition(":")
            if src == "preset" and ref in WORKLOADS and not WORKLOADS.get(ref).uses_load:
                load = DEFAULT_LOAD  # recorded, not used: the workload sets its own arrival rate
            else:
                self.add_error("load", "This field is required: the arrival rate as a fraction of lambda*")
                return cd
        scenario: dict[str, Any] = {
            "load": load,
            "hours": cd.get("hours"),
            "drain": cd.get("drain", False),
            "schedulers": cd["schedulers"],
            "seeds": cd["seeds"],
        }
        if cd.get("engine") == "python":
            scenario["engine"] = "python"  # the default is left out, as check_scenario does (same cache keys)
        if cd.get("job_records", records.DEFAULT) != records.DEFAULT:
            scenario["job_records"] = cd["job_records"]
        self.cluster_upload: ClusterUpload | None = None
        self.trace_upload: TraceUpload | None = None
        for kind in ("cluster", "workload"):
            src, _, ref = cd[kind].partition(":")
            if src == "preset":
                scenario[kind] = {"preset": ref, "params": self._params(kind, ref)}
            elif kind == "cluster":
                self.cluster_upload = self.cluster_uploads[ref]
            else:
                self.trace_upload = self.trace_uploads[ref]
        scenario.update(upload_specs(self.cluster_upload, self.trace_upload))
        if "preset" in scenario["workload"] and "file" in scenario["cluster"]:
            pass  # a generated workload on an uploaded cluster: fine, the LP sizes the arrival rate
        scenario["scheduler_params"] = {s: self._params("scheduler", s) for s in cd["schedulers"]}
        try:
            if cd.get("vary"):
                axes = sweep_grammar.parse_axes(
                    cd["vary"],
                    scenario["cluster"].get("preset") or "file",
                    scenario["workload"].get("preset") or "file",
                    cd["schedulers"],
                    seeds=len(cd["seeds"]),
                    max_runs=settings.SIMCORE_MAX_RUNS,
                )
                # The form always sends every shown parameter: a varied one's field is overridden, not a conflict.
                varied = {ax.name for ax in axes}
                for part in ("cluster", "workload"):
                    for k in varied & set(scenario[part].get("params") or {}):
                        del scenario[part]["params"][k]
                for params in scenario["scheduler_params"].values():
                    for k in varied & set(params):
                        del params[k]
                scenario["axes"] = [{"name": ax.name, "values": list(ax.values)} for ax in axes]
            self.scenario = check_scenario(scenario)
            check_team_choice(self.owner, cd.get("team"), cd["visibility"])
        except SimcoreError as e:
            self.add_error(self._field_for(str(e)), str(e))
        return cd

    def _field_for(self, message: str) -> str | None:
        """The field a simcore error message is about (it names the parameter), else the form."""
        m = re.search(r"(cluster|workload|scheduler) '([^']+)' (?:parameter|has no parameter) '([^']+)'", message)
        if m:
            key = SEP.join(m.groups())
            if key in self.fields:
                return key
        if message.startswith("--vary") or message.startswith("scenario axes"):
            return "vary"
        if message.startswith("the grid has"):  # simcore.sweep.grammar.check_grid_size: the axes or the seeds
            return "vary" if self.cleaned_data.get("vary") else "seeds"
        for name in ("load", "hours", "seeds", "team", "visibility"):
            if message.startswith(name):
                return name
        if "team" in message:
            return "team"
        if message.startswith("unknown scheduler") or re.match(r"scheduler '[^']+' needs ", message):
            return "schedulers"
        if "cluster" in message.split(" ", 2)[:2]:
            return "cluster"
        return None


def _scheduler_label(name: str) -> str:
    needs = sorted(SCHEDULERS.get(name).requires)
    return f"{name} (needs a run-time {', '.join(needs)})" if needs else name


class CompareForm(forms.Form):
    run = forms.TypedMultipleChoiceField(coerce=int, required=False)


def initial_from_scenario(
    scenario: dict[str, Any], cluster_upload: Any, trace_upload: Any, name: str = ""
) -> dict[str, Any]:
    """Form data that reproduces ``scenario`` (a fork starts from it)."""
    data: dict[str, Any] = {
        "name": name,
        "load": scenario["load"],
        "hours": scenario.get("hours"),
        "drain": scenario.get("drain", False),
        "schedulers": list(scenario["schedulers"]),
        "seeds": seeds_text(scenario["seeds"]),
        "vary": "\n".join(sweep_grammar.Axis(a["name"], tuple(a["values"])).text() for a in scenario.get("axes") or []),
        "engine": scenario.get("engine", "compiled"),
        "job_records": scenario.get("job_records", records.DEFAULT),
        "reuse": True,
        "visibility": Visibility.PRIVATE,
    }
    for kind, up in (("cluster", cluster_upload), ("workload", trace_upload)):
        spec = scenario[kind]
        if "preset" in spec:
            data[kind] = f"preset:{spec['preset']}"
            for k, v in spec.get("params", {}).items():
                data[SEP.join((kind, spec["preset"], k))] = v
        elif up is not None:
            data[kind] = f"upload:{up.pk}"
    for sched, params in (scenario.get("scheduler_params") or {}).items():
        for k, v in params.items():
            data[SEP.join(("scheduler", sched, k))] = v
    return data
