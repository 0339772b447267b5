"""Account pages: sign-in (throttled), the user's page (API tokens), teams, members and invitation links."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from dashboard.accounts import services as accounts
from dashboard.accounts.forms import RoleForm, SignupForm, TeamForm, ThrottledAuthenticationForm, TokenForm
from dashboard.accounts.models import ApiToken, Invitation
from dashboard.common import access
from dashboard.common.models import Membership, Role
from dashboard.experiments.access import visible_experiments
from simcore.core.errors import SimcoreError


class ThrottledLoginView(LoginView):
    """Django's sign-in page with the lock-out message; a locked attempt answers 429."""

    authentication_form = ThrottledAuthenticationForm

    def form_invalid(self, form: Any) -> HttpResponse:
        resp = super().form_invalid(form)
        if any(e.code == "locked" for e in form.non_field_errors().as_data()):
            resp.status_code = 429
        return resp


# ---------------------------------------------------------------------------- the user's page


@login_required
def account(request: HttpRequest) -> HttpResponse:
    ctx = {
        "tokens": ApiToken.objects.filter(user=access.signed_in(request)),
        "token_form": TokenForm(),
        "memberships": Membership.objects.filter(user=access.signed_in(request)).select_related("team"),
        "new_token": request.session.pop("new_token", None),
    }
    return render(request, "dashboard/account.html", ctx)


@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    if form.is_valid():
        _, secret = ApiToken.issue(request.user, form.cleaned_data["name"])
        # Shown once, on the next page; only its hash is stored.
        request.session["new_token"] = secret
    else:
        messages.error(request, "give the token a name")
    return redirect("account")


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token.delete()
    messages.success(request, f"revoked token {token}")
    return redirect("account")


# ---------------------------------------------------------------------------- teams


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = accounts.create_team(request.user, form.cleaned_data["name"])
        except SimcoreError as e:
            form.add_error("name", str(e))
        else:
            return redirect(team)
    ctx = {
        "form": form,
        "memberships": Membership.objects.filter(user=access.signed_in(request)).select_related("team"),
    }
    return render(request, "dashboard/team_list.html", ctx, status=400 if form.errors else 200)


@login_required
def team_detail(request: HttpRequest, pk: int) -> HttpResponse:
    team, role = access.get_team_for_user(request.user, pk)
    experiments = visible_experiments(request.user).filter(team=team).select_related("owner")
    ctx = {
        "team": team,
        "role": role,
        "is_owner": role == Role.OWNER,
        "members": team.memberships.select_related("user").order_by("user__username"),
        "experiments": experiments[:200],
        "invitations": team.invitations.filter(used_at__isnull=True).select_related("created_by")
        if role == Role.OWNER
        else [],
        "role_form": RoleForm(),
        "roles": Role.choices,
        "new_invite": request.session.pop(f"new_invite_{team.pk}", None),
    }
    return render(request, "dashboard/team_detail.html", ctx)


@login_required
@require_POST
def team_invite(request: HttpRequest, pk: int) -> HttpResponse:
    team, _ = access.get_team_for_user(request.user, pk, "manage")
    form = RoleForm(request.POST)
    if form.is_valid():
        _, secret = accounts.invite(team, request.user, form.cleaned_data["role"])
        request.session[f"new_invite_{team.pk}"] = request.build_absolute_uri(reverse("invitation", args=[secret]))
    return redirect(team)


@login_required
@require_POST
def team_invitation_revoke(request: HttpRequest, pk: int, inv: int) -> HttpResponse:
    team, _ = access.get_team_for_user(request.user, pk, "manage")
    get_object_or_404(Invitation, pk=inv, team=team).delete()
    messages.success(request, "invitation revoked")
    return redirect(team)


@login_required
@require_POST
def team_member_role(request: HttpRequest, pk: int, member: int) -> HttpResponse:
    team, _ = access.get_team_for_user(request.user, pk, "manage")
    m = get_object_or_404(Membership, pk=member, team=team)
    form = RoleForm(request.POST)
    try:
        if not form.is_valid():
            raise SimcoreError("choose owner, member or viewer")
        accounts.set_role(m, form.cleaned_data["role"])
    except SimcoreError as e:
        messages.error(request, str(e))
    return redirect(team)


@login_required
@require_POST
def team_member_remove(request: HttpRequest, pk: int, member: int) -> HttpResponse:
    team, role = access.get_team_for_user(request.user, pk)
    m = get_object_or_404(Membership, pk=member, team=team)
    if m.user_id != request.user.pk and role != Role.OWNER:
        return HttpResponse("only the team's owners can remove other members", status=403)
    try:
        accounts.remove_member(m)
    except SimcoreError as e:
        messages.error(request, str(e))
        return redirect(team)
    if m.user_id == request.user.pk:
        messages.success(request, f"you left {team}")
        return redirect("team-list")
    return redirect(team)


# ---------------------------------------------------------------------------- invitations


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: a visitor creates an account; a signed-in user joins the team."""
    inv = accounts.open_invitation(token)
    if inv is None:
        return render(request, "dashboard/invitation.html", {"invalid": True}, status=404)
    form = SignupForm(request.POST or None) if not request.user.is_authenticated else None
    if request.method == "POST":
        if form is not None and not form.is_valid():
            return render(request, "dashboard/invitation.html", {"inv": inv, "form": form}, status=400)
        try:
            with transaction.atomic():  # a new account exists only if it got into the team
                user = form.save() if form is not None else access.signed_in(request)
                accounts.accept_invitation(inv, user)
        except SimcoreError as e:
            messages.error(request, str(e))
            return redirect("experiment-list" if request.user.is_authenticated else "login")
        if form is not None:
            login(request, user, backend="dashboard.accounts.services.ThrottledModelBackend")
        messages.success(request, f"you joined {inv.team} as {inv.role}")
        return redirect(inv.team)
    return render(request, "dashboard/invitation.html", {"inv": inv, "form": form})
