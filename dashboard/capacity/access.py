"""Who may see and change capacity plans: the experiments' rules (:mod:`dashboard.common.access`)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from dashboard.capacity.models import CapacityPlan
from dashboard.common.access import Need, get_shared, get_visible, visible


def visible_plans(user: Any) -> QuerySet[CapacityPlan]:
    """Every capacity plan ``user`` may read (none for an anonymous visitor)."""
    return visible(CapacityPlan.objects.all(), user)


def get_plan_for_user(user: Any, pk: int, need: Need = "view") -> CapacityPlan:
    """Plan ``pk`` if ``user`` may ``need`` it: 404 when they cannot see it, 403 when they cannot change it."""
    return get_visible(CapacityPlan.objects.select_related("owner", "team"), user, pk, need, "capacity plan")


def get_shared_plan(token: str) -> CapacityPlan:
    """The plan behind a public read-only link; 404 once the owner revoked it."""
    return get_shared(CapacityPlan.objects.select_related("owner", "team"), token)
