"""Every URL and API endpoint, walked as a user of another team and as an anonymous visitor.

The URL list comes from the URLconf itself: a new URL without an entry here
fails the test, so nothing is added unchecked. For anything of alice's, an
outsider gets 404 (or 403; 405 for a method the URL does not take) and an
anonymous visitor the login page (pages) or 401 (API); nothing changes.
"""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from dashboard.accounts import services as accounts
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import check_request, create_plan
from dashboard.common.sharing import new_share_link, revoke_share_link
from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import (
    ApiToken,
    ClusterUpload,
    Experiment,
    ImportStatus,
    Membership,
    PackingAnalysis,
    PackingSource,
    Search,
    Status,
    Team,
    TraceUpload,
    Visibility,
)
from dashboard.packing.services import SourceChoice, create_analysis, execute_analysis
from dashboard.searches.services import check_search, create_search
from dashboard.traces.models import TraceDraft, TraceMapping
from simcore.dse.explore.search import SearchSettings
from tests.dashboard.conftest import small_scenario

#: URLs anyone may open (they check a secret in the URL, are the sign-in itself, or hold nobody's data:
#: the API's root, schema and documentation page, the documentation site, the favicon).
PUBLIC = {
    "login",
    "logout",
    "api-root",
    "api-schema",
    "api-docs",
    "docs",
    "docs-page",
    "favicon",
    "invitation",
    "shared-detail",
    "shared-progress",
    "shared-download",
    "shared-run-download",
    "shared-fork",
    "shared-sweep",
    "shared-sweep-data",
    "packing-shared-detail",
    "packing-shared-progress",
    "packing-shared-download",
    "shared-search-detail",
    "shared-search-progress",
    "shared-search-charts",
    "shared-search-fork",
    "shared-search-download",
    "shared-capacity-detail",
    "shared-capacity-progress",
    "shared-capacity-fork",
    "shared-capacity-download",
}


def _names(patterns: list[Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for p in patterns:
        if isinstance(p, URLResolver):
            if p.app_name == "admin":
                continue  # Django's admin: staff only, its own permission system
            out |= _names(p.url_patterns)
        elif isinstance(p, URLPattern) and p.name:
            out.add(p.name)
    return out


@pytest.fixture
def world(owner, other, team, outsider) -> dict[str, Any]:
    """alice's things: a private experiment (one run finished), a team one, an upload, a token, an invitation."""
    exp = create_experiment(owner, small_scenario(schedulers=["greedy", "fcfs"]), name="alice-secret-exp")
    run = exp.runs.get(scheduler="greedy")
    assert execute_run(run.pk) == Status.FINISHED
    team_exp = create_experiment(owner, small_scenario(), team=team, visibility=Visibility.TEAM, name="alice-team-exp")
    up = ClusterUpload.objects.create(
        owner=owner,
        name="alice-secret-cluster",
        filename="c.json",
        content_gz=gzip.compress(b"{}"),
        size_bytes=2,
        sha256="",
        info={},
    )
    # A trace still being imported (cancel and delete must not reach it).
    trace = TraceUpload.objects.create(
        owner=owner,
        name="alice-secret-trace",
        filename="t.csv",
        content_gz=b"",
        size_bytes=2,
        sha256="",
        info={},
        status=ImportStatus.RUNNING,
    )
    search = _search(owner, name="alice-secret-search")
    team_search = _search(owner, name="alice-team-search", team=team, visibility=Visibility.TEAM)
    # Capacity plans (issue 30): a private one and one shared with her team (stored, not run).
    plan_spec, _ = check_request(
        {**_search_scenario(), "schedulers": ["greedy"], "seeds": [0]}, target="p99_wait_s<=60"
    )
    plan = create_plan(owner, plan_spec, name="alice-secret-plan")
    team_plan = create_plan(owner, plan_spec, name="alice-team-plan", team=team, visibility=Visibility.TEAM)
    token, _ = ApiToken.issue(owner, "laptop")
    inv, _ = accounts.invite(team, owner, "member")
    # Packing analyses of alice's run: a finished private one, and a pending one shared with her team.
    run.refresh_from_db()
    choice = SourceChoice(PackingSource.RUN, run=run)
    spec = {"trials": 1, "factors": [1.0, 1.5], "taus": [0.0], "units": [0.3], "orderings": ["arrival"]}
    packing = create_analysis(owner, choice, time_s=1800, spec=spec, name="alice-secret-packing")
    assert execute_analysis(packing.pk) == Status.FINISHED
    team_packing = create_analysis(
        owner, choice, time_s=1800, spec=spec, name="alice-team-packing", team=team, visibility=Visibility.TEAM
    )
    member = Membership.objects.get(team=team, user=other)
    # A saved column map and a draft on the mapping page (issue 17): private to alice.
    mapping = TraceMapping.objects.create(
        owner=owner, name="alice-secret-map", column_map="submit_s=a,duration_s=b,cpu=c"
    )
    TraceDraft.objects.create(owner=owner, filename="d.csv", content_gz=gzip.compress(b"a,b,c\n"), head="a,b,c\n")
    return {
        "mapping": mapping,
        "exp": exp,
        "run": run,
        "team_exp": team_exp,
        "upload": up,
        "token": token,
        "team": team,
        "inv": inv,
        "member": member,
        "trace": trace,
        "packing": [packing, team_packing],
        "search": search,
        "team_search": team_search,
        "plans": [plan, team_plan],
    }


def _search_scenario() -> dict[str, Any]:
    return {
        "cluster": {"preset": "dse-2020", "params": {"machines": 4}},
        "workload": {"preset": "workflows-short-long", "params": {}},
        "load": 0.9,
        "hours": 0.1,
    }


def _search(owner: Any, **kw: Any) -> Search:
    scenario = _search_scenario()
    settings = SearchSettings("trt", 4, 2, 0)
    return create_search(owner, check_search(scenario, settings, 0), settings, 0, **kw)


def _targets(w: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """kwargs for every URL name (several when one URL reaches several objects)."""
    exps = [{"pk": w["exp"].pk}, {"pk": w["team_exp"].pk}]
    analyses = [{"pk": a.pk} for a in w["packing"]]
    run = w["run"]
    srch = [{"pk": w["search"].pk}, {"pk": w["team_search"].pk}]
    plans = [{"pk": p.pk} for p in w["plans"]]
    return {
        "capacity-list": [{}],
        "capacity-new": [{}],
        "capacity-detail": plans,
        "capacity-progress": plans,
        "capacity-cancel": plans,
        "capacity-fork": plans,
        "capacity-share": plans,
        "capacity-new-link": plans,
        "capacity-revoke-link": plans,
        "capacity-download": [{**x, "kind": k} for x in plans for k in ("probes.csv", "plan.json")],
        "api-capacity-list": [{}],
        "api-capacity-detail": plans,
        "api-capacity-cancel": plans,
        "api-capacity-fork": plans,
        "api-capacity-progress": plans,
        "api-capacity-plan": plans,
        "api-capacity-download": [{**x, "kind": "probes.parquet"} for x in plans],
        "search-list": [{}],
        "search-new": [{}],
        "search-detail": srch,
        "search-progress": srch,
        "search-charts": srch,
        "search-cancel": srch,
        "search-fork": srch,
        "search-share": srch,
        "search-new-link": srch,
        "search-revoke-link": srch,
        "search-download": [{**x, "kind": k} for x in srch for k in ("generations.csv", "search.json")],
        "api-search-list": [{}],
        "api-search-detail": srch,
        "api-search-cancel": srch,
        "api-search-fork": srch,
        "api-search-progress": srch,
        "api-search-generations": srch,
        "api-search-download": [{**x, "kind": "generations.parquet"} for x in srch],
        "experiment-list": [{}],
        "experiment-new": [{}],
        "compare": [{}],
        "uploads": [{}],
        "team-list": [{}],
        "account": [{}],
        "token-create": [{}],
        "password-change": [{}],
        "experiment-detail": exps,
        "experiment-progress": exps,
        "experiment-cancel": exps,
        "experiment-fork": exps,
        "experiment-share": exps,
        "experiment-new-link": exps,
        "experiment-revoke-link": exps,
        "experiment-sweep": exps,
        "experiment-sweep-data": [{**e, "kind": k} for e in exps for k in ("metric.csv", "stacked.parquet")],
        "experiment-extend": exps,
        "run-retry": [{"pk": r.pk} for r in w["exp"].runs.all()],
        "reproduce": [{}],
        "api-experiment-sweep": exps,
        "api-experiment-sweep-data": [{**e, "kind": "metric.parquet"} for e in exps],
        "api-experiment-extend": exps,
        "api-run-retry": [{"pk": run.pk}],
        "api-reproduction-list": [{}],
        "api-reproduction-start": [{"name": "lotes-fig11"}],
        "experiment-download": [{**e, "kind": k} for e in exps for k in ("summary.json", "jobs.csv", "archive.zip")],
        "run-download": [{"pk": run.experiment_id, "run": run.pk, "kind": k} for k in ("jobs.csv", "series.json")],
        "run-cancel": [{"pk": r.pk} for r in w["exp"].runs.all()],
        "team-detail": [{"pk": w["team"].pk}],
        "team-invite": [{"pk": w["team"].pk}],
        "team-invitation-revoke": [{"pk": w["team"].pk, "inv": w["inv"].pk}],
        "team-member-role": [{"pk": w["team"].pk, "member": w["member"].pk}],
        "team-member-remove": [{"pk": w["team"].pk, "member": w["member"].pk}],
        "token-revoke": [{"pk": w["token"].pk}],
        "api-me": [{}],
        "api-catalog": [{}],
        "api-experiment-list": [{}],
        "api-team-list": [{}],
        "api-experiment-detail": exps,
        "api-experiment-cancel": exps,
        "api-experiment-fork": exps,
        "api-experiment-share-link": exps,
        "api-experiment-progress": exps,
        "api-experiment-summary": exps,
        "api-experiment-series": exps,
        "api-experiment-download": [{**e, "kind": k} for e in exps for k in ("summary.json", "jobs.parquet")],
        "api-run-detail": [{"pk": run.pk}],
        "api-run-cancel": [{"pk": run.pk}],
        "api-run-download": [{"pk": run.pk, "kind": "jobs.csv"}],
        "api-upload-list": [{"kind": "cluster"}],
        "api-upload-detail": [{"kind": "cluster", "pk": w["upload"].pk}, {"kind": "trace", "pk": w["trace"].pk}],
        "api-upload-cancel": [{"pk": w["trace"].pk}],
        "trace-import-detail": [{"pk": w["trace"].pk}],
        "trace-map": [{}],
        "trace-map-discard": [{}],
        "trace-map-delete": [{"pk": w["mapping"].pk}],
        "api-mapping-list": [{}],
        "api-mapping-detail": [{"pk": w["mapping"].pk}],
        "trace-import-progress": [{"pk": w["trace"].pk}],
        "trace-import-cancel": [{"pk": w["trace"].pk}],
        "upload-delete": [{"kind": "cluster", "pk": w["upload"].pk}, {"kind": "trace", "pk": w["trace"].pk}],
        "api-team-detail": [{"pk": w["team"].pk}],
        "packing-list": [{}],
        "packing-new": [{}],
        "packing-detail": analyses,
        "packing-progress": analyses,
        "packing-cancel": analyses,
        "packing-share": analyses,
        "packing-download": [{**a, "kind": k} for a in analyses for k in ("results.json", "holes.csv")],
        "api-packing-list": [{}],
        "api-packing-detail": analyses,
        "api-packing-cancel": analyses,
        "api-packing-download": [{**a, "kind": k} for a in analyses for k in ("results.json", "compaction.parquet")],
    }


#: Pages or API endpoints that list the caller's own things (200 with nothing of alice's in it).
OWN_LISTS = {
    "experiment-list",
    "packing-list",
    "packing-new",
    "api-packing-list",
    "experiment-new",
    "compare",
    "uploads",
    "team-list",
    "account",
    "api-me",
    "api-catalog",
    "api-experiment-list",
    "api-team-list",
    "api-upload-list",
    "password-change",
    "reproduce",
    "api-reproduction-list",
    "search-list",
    "search-new",
    "api-search-list",
    "capacity-list",
    "capacity-new",
    "api-capacity-list",
    "trace-map",
    "api-mapping-list",
}
#: Creating one's own things is allowed (it must not touch alice's).
OWN_CREATE = {
    "experiment-new",
    "packing-new",
    "api-packing-list",
    "uploads",
    "team-list",
    "token-create",
    "api-experiment-list",
    "api-upload-list",
    "password-change",
    "reproduce",
    "api-reproduction-start",
    "search-new",
    "api-search-list",
    "capacity-new",
    "api-capacity-list",
    "trace-map",
    "trace-map-discard",
    "api-mapping-list",
}


def _snapshot(w: dict[str, Any]) -> Any:
    exps = Experiment.objects.filter(pk__in=[w["exp"].pk, w["team_exp"].pk]).order_by("pk")
    return (
        list(exps.values_list("status", "visibility", "share_token", "team_id", "name")),
        sorted(w["exp"].runs.values_list("status", flat=True)),
        sorted(w["team_exp"].runs.values_list("status", flat=True)),
        list(Membership.objects.filter(team=w["team"]).order_by("pk").values_list("user_id", "role")),
        ApiToken.objects.filter(pk=w["token"].pk).exists(),
        w["team"].invitations.count(),
        Team.objects.count(),
        ClusterUpload.objects.filter(pk=w["upload"].pk).exists(),
        list(TraceUpload.objects.filter(pk=w["trace"].pk).values_list("status", flat=True)),
        list(TraceMapping.objects.filter(pk=w["mapping"].pk).values_list("name", "column_map")),
        TraceDraft.objects.filter(owner_id=w["exp"].owner_id).exists(),
        list(
            PackingAnalysis.objects.order_by("pk").values_list("status", "visibility", "share_token", "team_id", "name")
        ),
        list(
            Search.objects.filter(pk__in=[w["search"].pk, w["team_search"].pk])
            .order_by("pk")
            .values_list("status", "visibility", "share_token", "team_id", "name")
        ),
        list(CapacityPlan.objects.order_by("pk").values_list("status", "visibility", "share_token", "team_id", "name")),
    )


def _call(client: Client, method: str, url: str) -> Any:
    if method == "get":
        return client.get(url)
    if method == "post":
        return client.post(url, {})
    return getattr(client, method)(url, data="{}", content_type="application/json")


def test_every_url_is_covered_by_the_walk(world):
    assert _names(get_resolver().url_patterns) == set(_targets(world)) | PUBLIC


@pytest.mark.parametrize("who", ["outsider", "anonymous"])
def test_nothing_of_alices_is_reachable_by_another_team_or_anonymously(client, world, outsider, who):
    if who == "outsider":
        client.force_login(outsider)
    before = _snapshot(world)
    secret_bits = [
        "alice-secret-exp",
        "alice-team-exp",
        "alice-secret-cluster",
        "alice-secret-trace",
        "alice-secret-packing",
        "alice-team-packing",
        "alice-secret-search",
        "alice-team-search",
        "alice-secret-plan",
        "alice-team-plan",
        world["token"].prefix,
    ]
    for name, kwarg_list in _targets(world).items():
        for kwargs in kwarg_list:
            url = reverse(name, kwargs=kwargs)
            api = url.startswith("/api/")
            methods = ["get", "post"] + (["patch", "delete"] if api else [])
            seen: list[int] = []
            for method in methods:
                resp = _call(client, method, url)
                seen.append(resp.status_code)
                if who == "anonymous":
                    if api:
                        assert resp.status_code in (401, 405), (method, url, resp.status_code)
                    else:
                        assert resp.status_code in (302, 405), (method, url, resp.status_code)
                        if resp.status_code == 302:
                            assert resp["Location"].startswith(reverse("login")), (method, url)
                elif name in OWN_LISTS or (method == "post" and name in OWN_CREATE):
                    assert resp.status_code in (200, 201, 302, 400, 405), (method, url, resp.status_code)
                    body = b"".join(resp.streaming_content) if resp.streaming else resp.content
                    if resp.status_code == 200 and name not in ("api-catalog", "experiment-new", "packing-new"):
                        text = body.decode(errors="replace")
                        for bit in secret_bits:
                            assert bit not in text, (method, url, bit)
                else:
                    assert resp.status_code in (403, 404, 405), (method, url, resp.status_code)
            if who == "outsider" and name not in OWN_LISTS | OWN_CREATE:
                assert {403, 404} & set(seen), (url, seen)  # protected, not merely method-gated
    assert _snapshot(world) == before


def test_public_urls_with_a_wrong_or_revoked_secret_are_404(client, world):
    exp = world["exp"]
    token = new_share_link(exp)
    run = world["run"]
    urls = [
        reverse("shared-detail", args=[token]),
        reverse("shared-progress", args=[token]),
        reverse("shared-download", args=[token, "archive.zip"]),
        reverse("shared-run-download", args=[token, run.pk, "jobs.csv"]),
    ]
    for url in urls:
        assert client.get(url).status_code == 200, url
    # A run of another experiment is not reachable through this link.
    other_run = world["team_exp"].runs.first()
    assert client.get(reverse("shared-run-download", args=[token, other_run.pk, "jobs.csv"])).status_code == 404
    revoke_share_link(exp)
    for url in urls:
        assert client.get(url).status_code == 404, url
    for bad in ("x", "A" * 43, "A" * 200):
        assert client.get(reverse("shared-detail", args=[bad])).status_code == 404
        assert client.get(reverse("invitation", args=[bad])).status_code == 404
    # The shared fork page asks for a sign-in first.
    resp = client.get(reverse("shared-fork", args=[new_share_link(exp)]))
    assert resp.status_code == 302 and resp["Location"].startswith(reverse("login"))
