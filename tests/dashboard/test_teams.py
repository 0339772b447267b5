"""Teams, roles, invitation links, visibility (private / team / public link), forks and API tokens on pages."""

from __future__ import annotations

import io
import json
from datetime import timedelta

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from dashboard.accounts import services as accounts
from dashboard.common.sharing import set_sharing
from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import ApiToken, ClusterUpload, Experiment, Invitation, Membership, Role, Status, Team, Visibility
from dashboard.traces.uploads import create_upload
from simcore import archive
from tests.dashboard.conftest import CLUSTER, GOOD, small_scenario


def test_visibility_private_team_and_public_link(client, owner, other, viewer, outsider, team):
    exp = create_experiment(owner, small_scenario(), name="shared-thing")
    url = exp.get_absolute_url()
    for user, code in ((owner, 200), (other, 404), (viewer, 404), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == code, user
    set_sharing(exp, team=team, visibility=Visibility.TEAM)
    for user, code in ((other, 200), (viewer, 200), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == code, user
    # A public link: anyone reads it, anonymously, without the id-based pages opening up.
    client.force_login(owner)
    assert (
        client.post(reverse("experiment-share", args=[exp.pk]), {"team": team.pk, "visibility": "public"}).status_code
        == 302
    )
    exp.refresh_from_db()
    assert exp.visibility == Visibility.PUBLIC and len(exp.share_token) >= 40
    assert exp.share_token in client.get(url).content.decode()  # the owner sees the link
    client.logout()
    link = reverse("shared-detail", args=[exp.share_token])
    page = client.get(link)
    assert page.status_code == 200 and "shared-thing" in page.content.decode()
    assert 'id="share-url"' not in page.content.decode()
    assert 'id="cancel-all"' not in page.content.decode() and "experiment-share" not in page.content.decode()
    assert client.get(url).status_code == 302  # the id-based page still needs a sign-in
    client.force_login(outsider)
    assert client.get(url).status_code == 404 and client.get(link).status_code == 200
    # A new link replaces the old; revoking ends it, and the team keeps its access.
    client.force_login(owner)
    client.post(reverse("experiment-new-link", args=[exp.pk]))
    old = exp.share_token
    exp.refresh_from_db()
    assert exp.share_token != old and client.get(link).status_code == 404
    client.post(reverse("experiment-revoke-link", args=[exp.pk]))
    exp.refresh_from_db()
    assert exp.share_token is None and exp.visibility == Visibility.TEAM
    client.logout()
    assert client.get(reverse("shared-detail", args=[old])).status_code == 404
    client.force_login(viewer)
    assert client.get(url).status_code == 200


def test_only_the_owner_changes_sharing_and_only_into_teams_they_run_in(client, owner, other, viewer, team):
    exp = create_experiment(owner, small_scenario(), team=team, visibility=Visibility.TEAM)
    client.force_login(other)  # a member sees it but cannot share it
    assert client.post(reverse("experiment-share", args=[exp.pk]), {"visibility": "public"}).status_code == 403
    assert client.post(reverse("experiment-new-link", args=[exp.pk])).status_code == 403
    exp.refresh_from_db()
    assert exp.visibility == Visibility.TEAM and exp.share_token is None
    # A viewer may not put experiments into the team.
    client.force_login(viewer)
    resp = client.post(reverse("experiment-new"), {**GOOD, "team": team.pk, "visibility": "team"})
    assert resp.status_code == 400 and 'id="error-team"' in resp.content.decode()
    assert Experiment.objects.filter(owner=viewer).count() == 0
    # Team visibility needs a team.
    client.force_login(owner)
    resp = client.post(reverse("experiment-new"), {**GOOD, "visibility": "team"})
    assert resp.status_code == 400 and "team visibility needs a team" in resp.content.decode()


def test_a_member_runs_an_experiment_in_the_team_and_the_team_page_shows_who_and_when(client, owner, other, team):
    client.force_login(other)
    resp = client.post(reverse("experiment-new"), {**GOOD, "name": "bobs-run", "team": team.pk, "visibility": "team"})
    assert resp.status_code == 302
    exp = Experiment.objects.get(name="bobs-run")
    assert exp.owner == other and exp.team == team and exp.visibility == Visibility.TEAM
    create_experiment(owner, small_scenario(), name="alices-private", team=team)  # private: not listed
    client.force_login(owner)
    page = client.get(team.get_absolute_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert "bobs-run" in html and "alices-private" in html  # alice sees her own private one
    row = html.split("bobs-run", 1)[1].split("</tr>", 1)[0]
    assert "bob" in row and exp.created.strftime("%Y-%m-%d %H:%M") in row
    for name in ("alice", "bob", "dave"):
        assert name in html.split('id="team-members"', 1)[1]
    client.force_login(other)
    assert "alices-private" not in client.get(team.get_absolute_url()).content.decode()


def test_an_invitation_link_creates_an_account_once(client, owner, team):
    client.force_login(owner)
    resp = client.post(reverse("team-invite", args=[team.pk]), {"role": "viewer"})
    assert resp.status_code == 302
    link = client.get(team.get_absolute_url()).context["new_invite"]
    token = link.rstrip("/").rsplit("/", 1)[1]
    assert Invitation.objects.get().token_hash != token  # only the hash is stored
    client.logout()
    assert client.get(link).status_code == 200
    resp = client.post(link, {"username": "erin", "password1": "a-long-passphrase-9", "password2": "x"})
    assert resp.status_code == 400 and not User.objects.filter(username="erin").exists()
    resp = client.post(
        link, {"username": "erin", "password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"}
    )
    assert resp.status_code == 302 and resp["Location"] == team.get_absolute_url()
    erin = User.objects.get(username="erin")
    assert Membership.objects.get(team=team, user=erin).role == Role.VIEWER
    assert client.get(team.get_absolute_url()).status_code == 200  # signed in as erin
    client.logout()
    assert client.get(link).status_code == 404  # used
    assert (
        client.post(
            link, {"username": "frank", "password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"}
        ).status_code
        == 404
    )
    assert not User.objects.filter(username="frank").exists()


def test_a_signed_in_user_joins_and_expired_or_revoked_links_fail(client, owner, team, outsider):
    inv, secret = accounts.invite(team, owner, "member")
    client.force_login(outsider)
    assert client.post(reverse("invitation", args=[secret])).status_code == 302
    assert Membership.objects.get(team=team, user=outsider).role == Role.MEMBER
    inv2, secret2 = accounts.invite(team, owner, "member")
    Invitation.objects.filter(pk=inv2.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert client.get(reverse("invitation", args=[secret2])).status_code == 404
    inv3, secret3 = accounts.invite(team, owner, "owner")
    client.force_login(owner)
    client.post(reverse("team-invitation-revoke", args=[team.pk, inv3.pk]))
    assert client.get(reverse("invitation", args=[secret3])).status_code == 404


def test_owners_manage_roles_but_a_team_keeps_an_owner(client, owner, other, viewer, team):
    m_bob = Membership.objects.get(team=team, user=other)
    m_alice = Membership.objects.get(team=team, user=owner)
    client.force_login(other)  # a member cannot manage
    assert client.post(reverse("team-member-role", args=[team.pk, m_alice.pk]), {"role": "viewer"}).status_code == 403
    assert client.post(reverse("team-invite", args=[team.pk]), {"role": "owner"}).status_code == 403
    assert client.post(reverse("team-member-remove", args=[team.pk, m_alice.pk])).status_code == 403
    client.force_login(owner)
    client.post(reverse("team-member-role", args=[team.pk, m_alice.pk]), {"role": "member"})
    assert Membership.objects.get(pk=m_alice.pk).role == Role.OWNER  # the last owner stays
    client.post(reverse("team-member-role", args=[team.pk, m_bob.pk]), {"role": "owner"})
    assert Membership.objects.get(pk=m_bob.pk).role == Role.OWNER
    client.post(reverse("team-member-remove", args=[team.pk, Membership.objects.get(user=viewer).pk]))
    assert not Membership.objects.filter(team=team, user=viewer).exists()
    client.force_login(viewer)
    assert client.get(team.get_absolute_url()).status_code == 404


def test_creating_a_team_makes_its_owner(client, outsider):
    client.force_login(outsider)
    resp = client.post(reverse("team-list"), {"name": "new-lab"})
    team = Team.objects.get(name="new-lab")
    assert resp.status_code == 302 and Membership.objects.get(team=team).role == Role.OWNER
    assert client.post(reverse("team-list"), {"name": "NEW-LAB"}).status_code == 400


def test_fork_copies_the_scenario_and_runs_it_in_the_forkers_space(client, owner, other, team):
    src = create_experiment(
        owner, small_scenario(seeds=[0, 1, 2, 5], load=0.7), name="src", team=team, visibility=Visibility.TEAM
    )
    client.force_login(other)
    form = client.get(reverse("experiment-fork", args=[src.pk])).context["form"]
    assert form.initial["seeds"] == "0-2,5" and form.initial["load"] == 0.7
    assert form.initial["cluster__google-balanced__machines_per_config"] == 2
    data = {k: v for k, v in form.initial.items() if v is not None}
    data["hours"] = "0.5"  # changed
    resp = client.post(reverse("experiment-fork", args=[src.pk]), data)
    assert resp.status_code == 302
    fork = Experiment.objects.exclude(pk=src.pk).get()
    assert fork.owner == other and fork.forked_from == src and fork.visibility == Visibility.PRIVATE
    assert fork.scenario == {**src.scenario, "hours": 0.5}
    assert fork.runs.count() == 8


def test_forking_an_experiment_with_uploads_reuses_them_only_through_it(client, owner, other, team, outsider):
    up = create_upload("cluster", owner, "alices-cluster", "c.json", json.dumps(CLUSTER).encode())
    src = create_experiment(
        owner,
        small_scenario(
            cluster={"file": "cluster_c.json", "name": "alices-cluster"},
            workload={"preset": "google-like", "params": {}},
            hours=0.2,
            schedulers=["greedy"],
        ),
        cluster_upload=up,
        team=team,
        visibility=Visibility.TEAM,
    )
    client.force_login(other)
    # Not in bob's uploads, nor offered on his new-experiment form ...
    assert "alices-cluster" not in client.get(reverse("uploads")).content.decode()
    resp = client.post(reverse("experiment-new"), {**GOOD, "cluster": f"upload:{up.pk}"})
    assert resp.status_code == 400
    # ... but readable through the experiment's archive, and reusable by a fork of it.
    body = b"".join(client.get(reverse("experiment-download", args=[src.pk, "archive.zip"])).streaming_content)
    assert archive.read_archive(io.BytesIO(body)).files["cluster_c.json"] == json.dumps(CLUSTER).encode()
    form = client.get(reverse("experiment-fork", args=[src.pk])).context["form"]
    assert form.initial["cluster"] == f"upload:{up.pk}"
    data = {k: v for k, v in form.initial.items() if v is not None}
    assert client.post(reverse("experiment-fork", args=[src.pk]), data).status_code == 302
    fork = Experiment.objects.get(forked_from=src)
    assert fork.cluster_upload_id == up.pk and fork.owner == other
    assert execute_run(fork.runs.get().pk) == Status.FINISHED
    # An outsider can do neither.
    client.force_login(outsider)
    assert client.get(reverse("experiment-fork", args=[src.pk])).status_code == 404
    assert client.get(reverse("experiment-download", args=[src.pk, "archive.zip"])).status_code == 404
    assert ClusterUpload.objects.count() == 1


def test_a_public_link_visitor_can_fork_after_signing_in(client, owner, outsider):
    src = create_experiment(owner, small_scenario(), visibility=Visibility.PUBLIC)
    client.force_login(outsider)
    url = reverse("shared-fork", args=[src.share_token])
    data = {k: v for k, v in client.get(url).context["form"].initial.items() if v is not None}
    assert client.post(url, data).status_code == 302
    assert Experiment.objects.get(forked_from=src).owner == outsider


def test_api_tokens_are_created_shown_once_and_revoked_on_the_account_page(client, owner, outsider):
    client.force_login(owner)
    assert client.post(reverse("token-create"), {"name": "notebook"}).status_code == 302
    page = client.get(reverse("account")).content.decode()
    secret = page.split('id="new-token"', 1)[1].split('value="', 1)[1].split('"', 1)[0]
    assert secret.startswith("sc_") and len(secret) > 40
    assert secret not in client.get(reverse("account")).content.decode()  # shown once
    tok = ApiToken.objects.get()
    assert tok.token_hash != secret and tok.prefix == secret[:10]
    api = client.__class__()
    assert api.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {secret}").json()["username"] == "alice"
    client.force_login(outsider)
    assert client.post(reverse("token-revoke", args=[tok.pk])).status_code == 404
    client.force_login(owner)
    client.post(reverse("token-revoke", args=[tok.pk]))
    assert api.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401
