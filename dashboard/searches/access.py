"""Who may see and change design-space searches: the experiments' rules (:mod:`dashboard.common.access`)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from dashboard.common.access import Need, get_shared, get_visible, visible
from dashboard.searches.models import Search


def visible_searches(user: Any) -> QuerySet[Search]:
    """Every design-space search ``user`` may read: the same rules as experiments."""
    return visible(Search.objects.all(), user)


def get_search_for_user(user: Any, pk: int, need: Need = "view") -> Search:
    """Search ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    return get_visible(Search.objects.select_related("owner", "team"), user, pk, need, "search")


def get_shared_search(token: str) -> Search:
    """The search behind a public read-only link; 404 once the owner revoked it."""
    return get_shared(Search.objects.select_related("owner", "team"), token)
