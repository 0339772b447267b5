"""Who may see and change packing analyses: the experiments' rules (:mod:`dashboard.common.access`)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from dashboard.common.access import Need, get_shared, get_visible, visible
from dashboard.packing.models import PackingAnalysis


def visible_analyses(user: Any) -> QuerySet[PackingAnalysis]:
    """Every packing analysis ``user`` may read (none for an anonymous visitor)."""
    return visible(PackingAnalysis.objects.all(), user)


def get_analysis_for_user(user: Any, pk: int, need: Need = "view") -> PackingAnalysis:
    """Analysis ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    return get_visible(PackingAnalysis.objects.select_related("owner", "team"), user, pk, need, "packing analysis")


def get_shared_analysis(token: str) -> PackingAnalysis:
    """The analysis behind a public read-only link; 404 once the owner revoked it."""
    return get_shared(PackingAnalysis.objects.select_related("owner", "team"), token)
