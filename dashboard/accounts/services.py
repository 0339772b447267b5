"""Accounts and teams: sign-in throttling, teams and roles, invitation links, API tokens.

Login throttling counts failed sign-ins per (user name, client address) in
the database, so every web process shares the count. After
``SIMCORE_LOGIN_MAX_FAILURES`` failures within ``SIMCORE_LOGIN_LOCKOUT_MINUTES``
that pair is locked for the same period: the authentication backend refuses
even the right password (it covers the admin's sign-in too) and the sign-in
form says when to try again. A successful sign-in clears the count.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils import timezone

from dashboard.accounts.models import Invitation, LoginFailure, token_hash
from dashboard.common.models import Membership, Role, Team
from simcore.core.errors import ParameterError

# ---------------------------------------------------------------------------- login throttling


def client_ip(request: HttpRequest | None) -> str:
    """The peer address (REMOTE_ADDR). Behind a proxy this is the proxy: the count is then per user name."""
    if request is None:
        return ""
    return str(request.META.get("REMOTE_ADDR", ""))[:45]


def _key(username: str | None) -> str:
    return (username or "").strip().lower()[:150]


def locked_until(username: str | None, ip: str) -> Any:
    """When the (user name, address) lock ends, or None when sign-in is allowed."""
    until = (
        LoginFailure.objects.filter(username=_key(username), ip=ip, locked_until__gt=timezone.now())
        .values_list("locked_until", flat=True)
        .first()
    )
    return until


def reserve_attempt(username: str | None, ip: str) -> bool:
    """Count one sign-in attempt before its password is checked; False when the pair is locked.

    The count is one conditional UPDATE (``failures < limit``), so however many
    attempts race, at most the limit of them ever reach the password check, and
    every one that does is counted. A successful sign-in clears the count
    (:func:`clear_failures`); the failed ones stay counted, and the attempt that
    reaches the limit locks the pair for the lock-out period.
    """
    now = timezone.now()
    window = timedelta(minutes=settings.SIMCORE_LOGIN_LOCKOUT_MINUTES)
    limit = settings.SIMCORE_LOGIN_MAX_FAILURES
    key = _key(username)
    rows = LoginFailure.objects.filter(username=key, ip=ip)
    if not rows.exists():
        try:
            with transaction.atomic():
                LoginFailure.objects.create(username=key, ip=ip, failures=0, first_at=now)
        except IntegrityError:
            pass  # a concurrent attempt created it; the unique (username, ip) constraint keeps one row
    # An expired lock, or failures older than the window, start a new window (idempotent under races).
    rows.filter(locked_until__lte=now).update(failures=0, first_at=now, locked_until=None)
    rows.filter(locked_until__isnull=True, first_at__lt=now - window).update(failures=0, first_at=now)
    if rows.filter(failures__lt=limit).update(failures=F("failures") + 1) == 0:
        return False
    rows.filter(failures__gte=limit, locked_until__isnull=True).update(locked_until=now + window)
    return True


def clear_failures(username: str | None, ip: str) -> None:
    LoginFailure.objects.filter(username=_key(username), ip=ip).delete()


class ThrottledModelBackend(ModelBackend):
    """Django's backend; each attempt is counted before its password is checked, none once the pair is locked."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if not reserve_attempt(username, client_ip(request)):
            raise PermissionDenied("too many failed sign-ins")  # stops authenticate()
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_logged_in)
def _on_logged_in(sender: Any, request: HttpRequest | None, user: Any, **_: Any) -> None:
    if request is not None:
        clear_failures(user.get_username(), client_ip(request))


# ---------------------------------------------------------------------------- teams


def create_team(user: Any, name: str) -> Team:
    """A new team with ``user`` as its owner."""
    name = name.strip()
    if not name:
        raise ParameterError("a team needs a name")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name[:100])
            Membership.objects.create(team=team, user=user, role=Role.OWNER)
    except IntegrityError:
        raise ParameterError(f"a team named {name!r} already exists") from None
    return team


def _owners_left(team: Team, without: Membership) -> int:
    return team.memberships.filter(role=Role.OWNER).exclude(pk=without.pk).count()


def set_role(membership: Membership, role: str) -> None:
    if role not in Role.values:
        raise ParameterError(f"role must be one of {', '.join(Role.values)}, got {role!r}")
    if membership.role == Role.OWNER and role != Role.OWNER and not _owners_left(membership.team, membership):
        raise ParameterError("a team needs at least one owner: make someone else owner first")
    membership.role = role
    membership.save(update_fields=["role"])


def remove_member(membership: Membership) -> None:
    if membership.role == Role.OWNER and not _owners_left(membership.team, membership):
        raise ParameterError("a team needs at least one owner: make someone else owner first")
    membership.delete()


def invite(team: Team, by: Any, role: str) -> tuple[Invitation, str]:
    """A single-use invitation link secret (shown once; only its hash is stored)."""
    if role not in Role.values:
        raise ParameterError(f"role must be one of {', '.join(Role.values)}, got {role!r}")
    secret = secrets.token_urlsafe(32)
    inv = Invitation.objects.create(
        team=team,
        role=role,
        token_hash=token_hash(secret),
        created_by=by,
        expires=timezone.now() + timedelta(days=settings.SIMCORE_INVITATION_DAYS),
    )
    return inv, secret


def open_invitation(secret: str) -> Invitation | None:
    """The unused, unexpired invitation behind ``secret``, else None."""
    if not secret or len(secret) > 100:
        return None
    inv = Invitation.objects.select_related("team").filter(token_hash=token_hash(secret)).first()
    return inv if inv is not None and inv.is_open else None


def accept_invitation(inv: Invitation, user: Any) -> Membership:
    """Use ``inv`` for ``user`` (once): they join the team with the invitation's role, or keep a higher one."""
    with transaction.atomic():
        if Invitation.objects.filter(pk=inv.pk, used_at__isnull=True).update(used_at=timezone.now(), used_by=user) != 1:
            raise ParameterError("this invitation was already used")
        m, created = Membership.objects.get_or_create(team=inv.team, user=user, defaults={"role": inv.role})
        order = [Role.VIEWER, Role.MEMBER, Role.OWNER]
        if not created and order.index(Role(inv.role)) > order.index(Role(m.role)):
            m.role = inv.role
            m.save(update_fields=["role"])
    return m
