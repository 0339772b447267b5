"""Token authentication: ``Authorization: Bearer <token>`` (or ``Token <token>``).

Tokens are created and revoked on the user's account page; the database
keeps only their SHA-256, so a leaked table gives no usable token.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from dashboard.accounts.models import ApiToken, token_hash

#: ``last_used`` is written at most this often per token (a busy script must not write on every call).
LAST_USED_EVERY = timedelta(minutes=1)


class TokenAuthentication(BaseAuthentication):
    keywords = (b"bearer", b"token")

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in self.keywords:
            return None  # not ours: the session may authenticate, else 401
        if len(parts) != 2:
            raise AuthenticationFailed("the Authorization header must be 'Bearer <token>'")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed("invalid token") from None
        token = ApiToken.objects.select_related("user").filter(token_hash=token_hash(secret)).first()
        if token is None or not token.user.is_active:
            raise AuthenticationFailed("invalid or revoked token")
        now = timezone.now()
        if token.last_used is None or now - token.last_used > LAST_USED_EVERY:
            ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'  # makes DRF answer 401 (not 403) to a request without credentials


class TokenScheme(OpenApiAuthenticationExtension):
    """Declares the token scheme in the OpenAPI schema."""

    target_class = "dashboard.api.auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token from your account page: `Authorization: Bearer sc_...`",
        }
