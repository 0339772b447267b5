"""Accounts' forms: a team, a member's role, an API token, sign-up through an invitation, throttled sign-in."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.accounts import services as accounts
from dashboard.common.models import Role, Team
from dashboard.common.names import validate_name


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, validators=[validate_name])

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Team.objects.filter(name__iexact=name).exists():
            raise forms.ValidationError("a team with this name already exists")
        return name


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="what the token is for, e.g. 'laptop notebook'", validators=[validate_name]
    )


class SignupForm(UserCreationForm):
    """An account created through an invitation link."""

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, saying so when too many failures locked the user name for this address."""

    def clean(self) -> dict[str, Any]:
        until = accounts.locked_until(self.data.get("username"), accounts.client_ip(self.request))
        if until is not None:
            minutes = max(1, round((until - timezone.now()).total_seconds() / 60))
            raise forms.ValidationError(
                f"Too many failed sign-ins. Try again in {minutes} minute{'s' if minutes != 1 else ''}.", code="locked"
            )
        return super().clean()
