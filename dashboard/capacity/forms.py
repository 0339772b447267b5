"""The new-plan form: the experiment form's presets, parameters, schedulers and seeds, and the plan's target."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth.models import User

from dashboard.capacity import files
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import check_request, field_of
from dashboard.common.models import Visibility
from dashboard.experiments.forms import SEP, ExperimentForm
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import upload_specs
from simcore.core.errors import SimcoreError
from simcore.planning.plan import MAX_CURVE_POINTS
from simcore.planning.target import FIXED_STATISTICS

#: What a new plan starts from: a small cluster and an hour of the Google-like workload (seconds per probe).
DEFAULT_CLUSTER = "google-balanced"
DEFAULT_WORKLOAD = "google-like"
DEFAULT_TARGET = "p99_wait_s<=60"
DEFAULT_LOAD = 0.9
DEFAULT_HOURS = 1.0


class CapacityForm(ExperimentForm):
    """A plan: a cluster shape and a workload (presets or uploads), schedulers, seeds, the target and search limits."""

    target = forms.CharField(
        max_length=200,
        initial=DEFAULT_TARGET,
        help_text="STATISTIC<=VALUE on the exact statistics, e.g. p99_wait_s<=60, mean_wait_s<=0.1, "
        f"unstarted_fraction<=0; statistics: pNN_wait_s, {', '.join(sorted(FIXED_STATISTICS))}",
    )
    resize = forms.CharField(
        max_length=200,
        initial="all",
        help_text="all: every configuration keeps its share as the cluster shrinks or grows; or the name of one "
        "configuration: only its count changes",
    )
    max_machines = forms.IntegerField(
        required=False,
        min_value=1,
        help_text="largest size the search may probe; blank: four times the given cluster (within "
        "SIMCORE_MAX_MACHINES)",
    )
    curve_points = forms.IntegerField(
        initial=0,
        min_value=0,
        max_value=MAX_CURVE_POINTS,
        required=False,
        help_text="extra sizes per scheduler for the curve, evenly spaced from lambda*'s size to the given one",
    )

    def __init__(self, *args: Any, owner: User, source: CapacityPlan | None = None, **kwargs: Any) -> None:
        """``source``: the plan being forked; its uploads are offered besides the owner's."""
        super().__init__(*args, owner=owner, source=None, **kwargs)
        for name in ("vary", "engine", "job_records", "reuse", "drain"):
            del self.fields[name]
        for kind, _, keys in self.param_groups:
            if kind == "scheduler":
                for key in keys:
                    del self.fields[key]
        self.param_groups = [g for g in self.param_groups if g[0] != "scheduler"]
        # The owner's uploads (the experiment form's) and, in a fork, the source plan's: what the owner can see.
        if source is not None:
            cu, tu = files.uploads_of(source)
            if cu is not None:
                self.cluster_uploads.setdefault(str(cu.pk), cu)
            if tu is not None:
                self.trace_uploads.setdefault(str(tu.pk), tu)
            for kind, ups in (("cluster", self.cluster_uploads), ("workload", self.trace_uploads)):
                field = cast(forms.ChoiceField, self.fields[kind])
                presets = [g for g in cast(list[Any], field.choices) if g[0] == "Presets"]
                uploaded = [("Uploaded", [(f"upload:{k}", str(u)) for k, u in ups.items()])] if ups else []
                field.choices = presets + uploaded
        self.fields["cluster"].help_text = "a preset or one of your uploaded cluster files (its shape is resized)"
        self.fields["workload"].help_text = (
            "a preset (generated at load x lambda* of the given cluster) or one of your uploaded traces (replayed "
            "as recorded, or at the load's rate)"
        )
        if not self.is_bound and not self.initial.get("workload"):
            self.fields["cluster"].initial = f"preset:{DEFAULT_CLUSTER}"
            self.fields["workload"].initial = f"preset:{DEFAULT_WORKLOAD}"
            # Not the experiment form's quick start (lotes-phi's 25 h at 0.97): every probe runs it again, and
            # a plan's first run should take seconds. 25 h at 0.97 took 163 s on `make run`; this, about 10.
            self.fields["load"].initial = DEFAULT_LOAD
            self.fields["hours"].initial = DEFAULT_HOURS
        self.fields["seeds"].help_text = "a size meets the target when every seed's run does, e.g. 0 or 0,1,2"
        self.fields["schedulers"].help_text = "one plan (machines needed) per scheduler"
        self.order_fields(["name", "cluster", "workload", "load", "hours", "schedulers", "seeds", "target"])

    def clean(self) -> dict[str, Any]:
        forms.Form.clean(self)
        cd = self.cleaned_data
        if self.errors:
            return cd
        scenario: dict[str, Any] = {
            "load": cd.get("load"),
            "hours": cd.get("hours"),
            "schedulers": cd["schedulers"],
            "seeds": cd["seeds"],
        }
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
        try:
            self.spec, _ = check_request(
                scenario,
                target=cd["target"],
                resize=cd.get("resize") or "all",
                max_machines=cd.get("max_machines"),
                curve_points=cd.get("curve_points") or 0,
                cluster_upload=self.cluster_upload,
                trace_upload=self.trace_upload,
            )
            from dashboard.common.sharing import check_team_choice

            check_team_choice(self.owner, cd.get("team"), cd["visibility"])
        except SimcoreError as e:
            self.add_error(field_of(str(e)) or self._field_for(str(e)), str(e))
        return cd


def initial_from_plan(plan: CapacityPlan, name: str = "") -> dict[str, Any]:
    """Form data that reproduces ``plan`` (a fork starts from it)."""
    spec = plan.spec
    data: dict[str, Any] = {
        "name": name,
        "cluster": f"upload:{plan.cluster_upload_id}" if plan.cluster_upload_id else f"preset:{spec['cluster']}",
        "workload": f"upload:{plan.trace_upload_id}" if plan.trace_upload_id else f"preset:{spec['workload']}",
        "load": spec.get("load"),
        "hours": spec.get("hours"),
        "schedulers": list(spec["schedulers"]),
        "seeds": ",".join(str(s) for s in spec["seeds"]),
        "target": spec["target"],
        "resize": spec.get("resize") or "all",
        "max_machines": spec.get("max_machines"),
        "curve_points": spec.get("curve_points") or 0,
        "visibility": Visibility.PRIVATE,
    }
    for kind in ("cluster", "workload"):
        for k, v in (spec.get(f"{kind}_params") or {}).items():
            data[SEP.join((kind, spec[kind], k))] = v
    return data
