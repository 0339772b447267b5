"""Who may see and change experiments and runs (the rules: :mod:`dashboard.common.access`)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from dashboard.common.access import Need, can, get_shared, get_visible, visible
from dashboard.experiments.models import Experiment, Run


def visible_experiments(user: Any) -> QuerySet[Experiment]:
    """Every experiment ``user`` may read (none for an anonymous visitor)."""
    return visible(Experiment.objects.all(), user)


def visible_runs(user: Any) -> QuerySet[Run]:
    return Run.objects.filter(experiment__in=visible_experiments(user))


def _with_uploads(qs: QuerySet[Experiment]) -> QuerySet[Experiment]:
    return qs.select_related("owner", "team", "cluster_upload", "trace_upload").defer(
        "cluster_upload__content_gz", "trace_upload__content_gz"
    )


def get_experiment_for_user(user: Any, pk: int, need: Need = "view") -> Experiment:
    """Experiment ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    return get_visible(_with_uploads(Experiment.objects.all()), user, pk, need, "experiment")


def get_run_for_user(user: Any, pk: int, need: Need = "view", experiment: Experiment | None = None) -> Run:
    """Run ``pk`` through its experiment's permissions (and within ``experiment`` when given)."""
    run = Run.objects.select_related("result").filter(pk=pk).first()
    if run is None or (experiment is not None and run.experiment_id != experiment.pk):
        raise Http404("no such run")
    run.experiment = experiment or get_experiment_for_user(user, run.experiment_id, need)
    if experiment is not None and need != "view" and not can(user, experiment, need):
        raise PermissionDenied(f"you cannot {need} this run")
    return run


def get_shared_experiment(token: str) -> Experiment:
    """The experiment behind a public read-only link; 404 once the owner revoked it."""
    return get_shared(_with_uploads(Experiment.objects.all()), token)
