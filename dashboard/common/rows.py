"""The columns experiments, searches and packing analyses share when they are created.

Each feature's ``create_*`` service fills these the same way: the owner's
sharing choice (checked, with a public link when public), and for the work
that simulates a scenario, the scenario with its uploads and their labels.
"""

from __future__ import annotations

from typing import Any

from dashboard.common.models import Team, Visibility
from dashboard.common.sharing import check_team_choice, new_share_token
from simcore.scenario import labels_of


def sharing_fields(owner: Any, team: Team | None, visibility: str) -> dict[str, Any]:
    """``owner``'s sharing choice as columns; refuses a team they cannot run work in (ParameterError)."""
    check_team_choice(owner, team, visibility)
    token = new_share_token() if visibility == Visibility.PUBLIC else None
    return {"owner": owner, "team": team, "visibility": visibility, "share_token": token}


def scenario_fields(scenario: dict[str, Any], cluster_upload: Any, trace_upload: Any) -> dict[str, Any]:
    """A checked scenario, the uploads it names, and its cluster and workload labels (as the list pages show)."""
    names = labels_of(scenario)
    return {
        "scenario": scenario,
        "cluster_upload": cluster_upload,
        "trace_upload": trace_upload,
        "cluster_label": names["cluster"][:200],
        "workload_label": names["workload"][:200],
    }
