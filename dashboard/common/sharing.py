"""Sharing, the same for experiments, searches and packing analyses: a team, a visibility, a public link.

The rules (who may put work in which team) and the owner's sharing panel. A
row shared here has ``owner``, ``team``, ``visibility`` and ``share_token``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.common.access import Need, run_teams, signed_in
from dashboard.common.models import Team, Visibility
from simcore.core.errors import ParameterError, SimcoreError


def check_team_choice(owner: User, team: Team | None, visibility: str) -> None:
    """The owner may only put experiments in teams where they run experiments; ``team`` visibility needs a team."""
    if visibility not in Visibility.values:
        raise ParameterError(f"visibility must be one of {', '.join(Visibility.values)}, got {visibility!r}")
    if team is not None and not run_teams(owner).filter(pk=team.pk).exists():
        raise ParameterError(f"you cannot run experiments in team {team.name!r} (owners and members can)")
    if visibility == Visibility.TEAM and team is None:
        raise ParameterError("team visibility needs a team")


def new_share_token() -> str:
    """An unguessable public-link secret (256 random bits)."""
    return secrets.token_urlsafe(32)


def set_sharing(experiment: Any, *, team: Team | None, visibility: str) -> Any:
    """Change an experiment's (or a search's) team and visibility (the caller checked it is the owner's).

    Making it public creates a link if it has none; leaving public revokes the link.
    """
    check_team_choice(experiment.owner, team, visibility)
    experiment.team = team
    experiment.visibility = visibility
    if visibility == Visibility.PUBLIC:
        experiment.share_token = experiment.share_token or new_share_token()
    else:
        experiment.share_token = None
    experiment.save(update_fields=["team", "visibility", "share_token"])
    return experiment


def new_share_link(experiment: Any) -> str:
    """Replace the public link by a new one (the old one stops working); makes the experiment public."""
    experiment.visibility = Visibility.PUBLIC
    experiment.share_token = new_share_token()
    experiment.save(update_fields=["visibility", "share_token"])
    return experiment.share_token


def revoke_share_link(experiment: Any) -> None:
    """The public link stops working; the experiment stays visible to its team if it has one."""
    set_sharing(
        experiment, team=experiment.team, visibility=Visibility.TEAM if experiment.team_id else Visibility.PRIVATE
    )


class ShareForm(forms.Form):
    """The owner's sharing settings of one experiment, search or packing analysis."""

    team = forms.ModelChoiceField(queryset=Team.objects.none(), required=False, empty_label="no team")
    visibility = forms.ChoiceField(choices=Visibility.choices)

    def __init__(self, *args: Any, owner: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        cast(forms.ModelChoiceField, self.fields["team"]).queryset = run_teams(owner)

    def clean(self) -> dict[str, Any]:
        super().clean()
        cd = self.cleaned_data
        if not self.errors:
            try:
                check_team_choice(self.owner, cd.get("team"), cd["visibility"])
            except SimcoreError as e:
                self.add_error("visibility", str(e))
        return cd


def share_panel(request: HttpRequest, obj: Any, shared_route: str, *, is_owner: bool) -> dict[str, Any]:
    """The sharing panel's context of an experiment, search or packing analysis (only its owner sees it).

    ``obj`` has ``team``, ``visibility`` and ``share_token``; ``shared_route`` names its public read-only page.
    """
    if not is_owner:
        return {"can_share": False, "share_form": None, "share_url": ""}
    form = ShareForm(owner=signed_in(request), initial={"team": obj.team, "visibility": obj.visibility})
    url = request.build_absolute_uri(reverse(shared_route, args=[obj.share_token])) if obj.share_token else ""
    return {"can_share": True, "share_form": form, "share_url": url}


# ---------------------------------------------------------------------------- the owner's three sharing actions

#: A page action on row ``pk``: ``(request, pk) -> response``.
View = Callable[..., HttpResponse]
#: A feature's lookup with permissions: ``(user, pk, need) -> row`` (404 / 403 as dashboard.common.access says).
Lookup = Callable[[Any, int, Need], Any]


def page_actions(get: Lookup) -> tuple[View, View, View]:
    """The sharing form's three POST actions for the rows ``get`` finds: share, new public link, revoke the link.

    One definition for experiments, searches and packing analyses (their pages repeated these word for word);
    each redirects to the row's page with a message saying what changed.
    """

    @login_required
    @require_POST
    def share(request: HttpRequest, pk: int) -> HttpResponse:
        row = get(request.user, pk, "share")
        form = ShareForm(request.POST, owner=signed_in(request))
        if not form.is_valid():
            messages.error(request, "; ".join(str(e) for errs in form.errors.values() for e in errs))
            return redirect(row)
        try:
            set_sharing(row, team=form.cleaned_data["team"], visibility=form.cleaned_data["visibility"])
        except SimcoreError as e:  # the team changed between the form's check and the save
            messages.error(request, str(e))
        else:
            messages.success(request, f"visibility: {row.get_visibility_display()}")
        return redirect(row)

    @login_required
    @require_POST
    def new_link(request: HttpRequest, pk: int) -> HttpResponse:
        row = get(request.user, pk, "share")
        new_share_link(row)
        messages.success(request, "a new public link was made; the previous one no longer works")
        return redirect(row)

    @login_required
    @require_POST
    def revoke_link(request: HttpRequest, pk: int) -> HttpResponse:
        row = get(request.user, pk, "share")
        revoke_share_link(row)
        messages.success(request, "the public link was revoked")
        return redirect(row)

    return share, new_link, revoke_link
