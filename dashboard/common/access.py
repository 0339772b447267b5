"""Who may do what: the one place the visibility model is applied.

Pages, downloads, progress endpoints and the REST API all go through
:func:`visible` and :func:`get_visible` (each feature's ``access`` module names
them for its rows: ``visible_experiments``, ``get_search_for_user``...); nothing
else filters shared rows by user.

* An experiment is seen by its owner; by every member of its team (any role)
  when its visibility is ``team`` or ``public``; and, read-only, by anyone
  holding its public link (:func:`get_shared`) while the owner
  keeps it public.
* ``cancel``: the owner, or an owner of the experiment's team when the team
  can see it.
* ``share`` (team, visibility, public link) and ``change`` (extend a sweep, retry a cell): the owner only.
* Packing analyses and design-space searches follow the same rules.
* Uploaded files are private to their uploader (dashboard.traces.access); an experiment that uses one
  makes it readable to whoever sees the experiment, only through that
  experiment (its archive), and a fork of the experiment may reuse it.

A lookup that finds nothing the user may see raises Http404 (the object's
existence is not revealed); one the user may see but not change raises
PermissionDenied (403).

Lookups only read. Work of a dead worker is marked failed by the workers'
periodic repair (:mod:`dashboard.common.repair`), within a third of
``SIMCORE_WORKER_TIMEOUT_S`` after it counts as lost.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import Http404

from dashboard.common.models import RUN_ROLES, Membership, Role, Team, Visibility

#: ``change``: the owner only (extending a sweep, retrying a cell).
Need = Literal["view", "cancel", "share", "change"]

SHARED = (Visibility.TEAM, Visibility.PUBLIC)

M = TypeVar("M", bound=Model)


def signed_in(request: Any) -> User:
    """The signed-in user of a request behind login_required (pages) or IsAuthenticated (API).

    Typed ``User``: the views pass it where only a real account makes sense.
    """
    user = request.user
    if not isinstance(user, User):  # an anonymous visitor got past the guard: refuse, never crash
        raise PermissionDenied("sign in first")
    return user


def is_signed_in(user: Any) -> bool:
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


def visible(qs: QuerySet[M], user: Any) -> QuerySet[M]:
    """The rows of ``qs`` (experiments, searches, packing analyses) ``user`` may read."""
    if not is_signed_in(user):
        return qs.none()
    return qs.filter(_readable(user))


def can(user: Any, row: Any, need: Need) -> bool:
    """Whether ``user`` (who can already see ``row``: an experiment, a packing analysis or a search) may ``need`` it."""
    if not is_signed_in(user):
        return False
    if row.owner_id == user.pk:
        return True
    if need == "cancel" and row.team_id is not None and row.visibility in SHARED:
        return Membership.objects.filter(team_id=row.team_id, user=user, role=Role.OWNER).exists()
    return need == "view" and type(row)._default_manager.filter(_readable(user), pk=row.pk).exists()


def get_visible(qs: QuerySet[M], user: Any, pk: int, need: Need, what: str) -> M:
    """Row ``pk`` of ``qs`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it.

    ``what`` names the row in the messages ("experiment", "packing analysis").
    """
    row = visible(qs, user).filter(pk=pk).first()
    if row is None:
        raise Http404(f"no such {what}")
    if need != "view" and not can(user, row, need):
        raise PermissionDenied(f"you cannot {need} this {what}")
    return row


def get_shared(qs: QuerySet[M], token: str) -> M:
    """The row of ``qs`` behind a public read-only link; 404 once the owner revoked it."""
    if not token or len(token) > 64:
        raise Http404("no such link")
    row = qs.filter(share_token=token, visibility=Visibility.PUBLIC).first()
    if row is None:
        raise Http404("no such link")
    return row


# ---------------------------------------------------------------------------- teams


def teams_of(user: Any) -> QuerySet[Team]:
    if not is_signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids(user))


def run_teams(user: Any) -> QuerySet[Team]:
    """Teams ``user`` may start experiments in (owner or member)."""
    if not is_signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids(user, RUN_ROLES))


def role_in(user: Any, team: Team) -> str | None:
    if not is_signed_in(user):
        return None
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def get_team_for_user(user: Any, pk: int, need: Literal["view", "manage"] = "view") -> tuple[Team, str]:
    """Team ``pk`` and ``user``'s role in it: 404 for non-members, 403 when ``manage`` needs an owner."""
    team = Team.objects.filter(pk=pk, pk__in=team_ids(user)).first() if is_signed_in(user) else None
    if team is None:
        raise Http404("no such team")
    role = role_in(user, team) or ""
    if need == "manage" and role != Role.OWNER:
        raise PermissionDenied("only the team's owners can do this")
    return team, role
