"""Who may do what: the one place the visibility model is applied.

Pages, downloads, progress endpoints and the REST API all go through
:func:`visible_experiments` and :func:`get_experiment_for_user`; nothing else
filters experiments by user. Design-space searches follow the same rules
(:func:`visible_searches`, :func:`get_search_for_user`, :func:`get_shared_search`).

* An experiment is seen by its owner; by every member of its team (any role)
  when its visibility is ``team`` or ``public``; and, read-only, by anyone
  holding its public link (:func:`get_shared_experiment`) while the owner
  keeps it public.
* ``cancel``: the owner, or an owner of the experiment's team when the team
  can see it.
* ``share`` (team, visibility, public link) and ``change`` (extend a sweep, retry a cell): the owner only.
* Packing analyses follow the same rules (:func:`visible_analyses`,
  :func:`get_analysis_for_user`, :func:`get_shared_analysis`).
* Uploaded files are private to their uploader (:func:`get_upload_for_user`); an experiment that uses one
  makes it readable to whoever sees the experiment, only through that
  experiment (its archive), and a fork of the experiment may reuse it.

A lookup that finds nothing the user may see raises Http404 (the object's
existence is not revealed); one the user may see but not change raises
PermissionDenied (403).

Lookups only read. Work of a dead worker is marked failed by the workers'
periodic repair (:mod:`dashboard.repair`), within a third of
``SIMCORE_WORKER_TIMEOUT_S`` after it counts as lost.
"""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from dashboard.models import (
    RUN_ROLES,
    ClusterUpload,
    Experiment,
    Membership,
    PackingAnalysis,
    Role,
    Run,
    Search,
    Team,
    TraceUpload,
    Visibility,
)

#: ``change``: the owner only (extending a sweep, retrying a cell).
Need = Literal["view", "cancel", "share", "change"]

SHARED = (Visibility.TEAM, Visibility.PUBLIC)


def signed_in(request: Any) -> User:
    """The signed-in user of a request behind login_required (pages) or IsAuthenticated (API).

    Typed ``User``: the views pass it where only a real account makes sense.
    """
    user = request.user
    if not isinstance(user, User):  # an anonymous visitor got past the guard: refuse, never crash
        raise PermissionDenied("sign in first")
    return user


def _signed_in(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated)


def team_ids(user: Any, roles: tuple[str, ...] | None = None) -> QuerySet[Membership]:
    """A subquery of the ids of ``user``'s teams (optionally only those where they hold ``roles``)."""
    qs = Membership.objects.filter(user=user)
    if roles is not None:
        qs = qs.filter(role__in=roles)
    return qs.values("team_id")  # type: ignore[return-value]  # a values() subquery of team ids


def _readable(user: Any) -> Q:
    """The visibility rule as a filter: one's own, or shared with one of one's teams."""
    return Q(owner=user) | Q(team_id__in=team_ids(user), visibility__in=SHARED)


def _visible(qs: QuerySet[Any], user: Any) -> QuerySet[Any]:
    """The rows of ``qs`` (experiments, searches, packing analyses) ``user`` may read."""
    if not _signed_in(user):
        return qs.none()
    return qs.filter(_readable(user))


def visible_experiments(user: Any) -> QuerySet[Experiment]:
    """Every experiment ``user`` may read (none for an anonymous visitor)."""
    return _visible(Experiment.objects.all(), user)


def visible_searches(user: Any) -> QuerySet[Search]:
    """Every design-space search ``user`` may read: the same rules as experiments."""
    return _visible(Search.objects.all(), user)


def visible_runs(user: Any) -> QuerySet[Run]:
    return Run.objects.filter(experiment__in=visible_experiments(user))


def can(user: Any, experiment: Experiment | PackingAnalysis | Search, need: Need) -> bool:
    """Whether ``user`` (who can already see ``experiment``, a packing analysis or a search) may ``need`` it."""
    if not _signed_in(user):
        return False
    if experiment.owner_id == user.pk:
        return True
    if need == "cancel" and experiment.team_id is not None and experiment.visibility in SHARED:
        return Membership.objects.filter(team_id=experiment.team_id, user=user, role=Role.OWNER).exists()
    return need == "view" and type(experiment)._default_manager.filter(_readable(user), pk=experiment.pk).exists()


def get_experiment_for_user(user: Any, pk: int, need: Need = "view") -> Experiment:
    """Experiment ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    exp = (
        visible_experiments(user)
        .select_related("owner", "team", "cluster_upload", "trace_upload")
        .defer("cluster_upload__content_gz", "trace_upload__content_gz")
        .filter(pk=pk)
        .first()
    )
    if exp is None:
        raise Http404("no such experiment")
    if need != "view" and not can(user, exp, need):
        raise PermissionDenied(f"you cannot {need} this experiment")
    return exp


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
    if not token or len(token) > 64:
        raise Http404("no such link")
    exp = (
        Experiment.objects.select_related("owner", "team", "cluster_upload", "trace_upload")
        .defer("cluster_upload__content_gz", "trace_upload__content_gz")
        .filter(share_token=token, visibility=Visibility.PUBLIC)
        .first()
    )
    if exp is None:
        raise Http404("no such link")
    return exp


# ---------------------------------------------------------------------------- packing analyses
# The same rules as experiments: owner; team members when shared; anyone with the public link.


def visible_analyses(user: Any) -> QuerySet[PackingAnalysis]:
    """Every packing analysis ``user`` may read (none for an anonymous visitor)."""
    return _visible(PackingAnalysis.objects.all(), user)


def get_analysis_for_user(user: Any, pk: int, need: Need = "view") -> PackingAnalysis:
    """Analysis ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    a = visible_analyses(user).select_related("owner", "team").filter(pk=pk).first()
    if a is None:
        raise Http404("no such packing analysis")
    if need != "view" and not can(user, a, need):
        raise PermissionDenied(f"you cannot {need} this packing analysis")
    return a


def get_shared_analysis(token: str) -> PackingAnalysis:
    """The analysis behind a public read-only link; 404 once the owner revoked it."""
    if not token or len(token) > 64:
        raise Http404("no such link")
    a = (
        PackingAnalysis.objects.select_related("owner", "team")
        .filter(share_token=token, visibility=Visibility.PUBLIC)
        .first()
    )
    if a is None:
        raise Http404("no such link")
    return a


def get_search_for_user(user: Any, pk: int, need: Need = "view") -> Search:
    """Search ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    search = visible_searches(user).select_related("owner", "team").filter(pk=pk).first()
    if search is None:
        raise Http404("no such search")
    if need != "view" and not can(user, search, need):
        raise PermissionDenied(f"you cannot {need} this search")
    return search


def get_shared_search(token: str) -> Search:
    """The search behind a public read-only link; 404 once the owner revoked it."""
    if not token or len(token) > 64:
        raise Http404("no such link")
    search = (
        Search.objects.select_related("owner", "team").filter(share_token=token, visibility=Visibility.PUBLIC).first()
    )
    if search is None:
        raise Http404("no such link")
    return search


# ---------------------------------------------------------------------------- uploads

UPLOAD_MODELS: dict[str, type[ClusterUpload] | type[TraceUpload]] = {"cluster": ClusterUpload, "trace": TraceUpload}


def own_uploads(user: Any, kind: str) -> QuerySet[Any]:
    """``user``'s uploads of ``kind`` (uploads are private to their uploader); 404 for an unknown kind."""
    model = UPLOAD_MODELS.get(kind)
    if model is None:
        raise Http404(f"unknown upload kind {kind!r}")
    if not _signed_in(user):
        return model.objects.none()
    return model.objects.filter(owner=user).defer("content_gz")


def get_upload_for_user(user: Any, kind: str, pk: int) -> Any:
    """Upload ``pk`` of ``kind`` if it is ``user``'s own, else 404 (the existence of others' is not revealed)."""
    up = own_uploads(user, kind).filter(pk=pk).first()
    if up is None:
        raise Http404("no such upload")
    return up


# ---------------------------------------------------------------------------- teams


def teams_of(user: Any) -> QuerySet[Team]:
    if not _signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids(user))


def run_teams(user: Any) -> QuerySet[Team]:
    """Teams ``user`` may start experiments in (owner or member)."""
    if not _signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids(user, RUN_ROLES))


def role_in(user: Any, team: Team) -> str | None:
    if not _signed_in(user):
        return None
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def get_team_for_user(user: Any, pk: int, need: Literal["view", "manage"] = "view") -> tuple[Team, str]:
    """Team ``pk`` and ``user``'s role in it: 404 for non-members, 403 when ``manage`` needs an owner."""
    team = Team.objects.filter(pk=pk, pk__in=team_ids(user)).first() if _signed_in(user) else None
    if team is None:
        raise Http404("no such team")
    role = role_in(user, team) or ""
    if need == "manage" and role != Role.OWNER:
        raise PermissionDenied("only the team's owners can do this")
    return team, role
