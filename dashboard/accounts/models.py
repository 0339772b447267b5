"""Accounts' rows: invitations to a team, API tokens, sign-in failures (the throttle)."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.common.models import Role, Team
from dashboard.common.names import validate_name


def token_hash(token: str) -> str:
    """What we store of a secret token: its SHA-256 (a database leak gives no usable token)."""
    return hashlib.sha256(token.encode()).hexdigest()


class Invitation(models.Model):
    """A single-use link that creates an account (or adds a signed-in user) in a team with a role."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField()
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    @property
    def is_open(self) -> bool:
        return self.used_at is None and self.expires > timezone.now()


class ApiToken(models.Model):
    """A REST API token; only its hash is kept, the token itself is shown once when created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, validators=[validate_name])
    #: The first characters, so a user can tell their tokens apart.
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"

    @classmethod
    def issue(cls, user: Any, name: str) -> tuple[ApiToken, str]:
        """A new token for ``user``; returns the row and the secret (never stored)."""
        secret = "sc_" + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name or "token", prefix=secret[:10], token_hash=token_hash(secret))
        return row, secret


class LoginFailure(models.Model):
    """Failed sign-ins per user name and client address, for throttling password guessing."""

    username = models.CharField(max_length=150)
    ip = models.CharField(max_length=45)
    failures = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField(default=timezone.now)
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["username", "ip"], name="one_counter_per_username_ip")]
