"""The admin lists packing analyses, searches and capacity plans (operators look there first when a user asks)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.searches.models import Search

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    User.objects.create_superuser("root", "root@example.org", "root-password-1")
    c = Client()
    assert c.login(username="root", password="root-password-1")
    return c


def test_packing_analyses_and_searches_are_listed_and_open_without_their_secrets(admin_client: Client) -> None:
    owner = User.objects.create_user("alice", password="alice-password-1")
    a = PackingAnalysis.objects.create(
        owner=owner,
        source=PackingSource.SCENARIO,
        source_spec={},
        label="google-like on google-balanced",
        time_s=1800.0,
        spec={},
        name="holes at noon",
        share_token="secret-token-of-the-public-link",
    )
    s = Search.objects.create(
        owner=owner,
        scenario={},
        cluster_label="dse-2020",
        workload_label="workflows",
        metric="trt",
        population=32,
        max_generations=40,
        seed=7,
        sim_seed=0,
        fingerprint="f" * 64,
        name="best TRT policy",
    )
    listing = admin_client.get("/admin/dashboard/packinganalysis/").content.decode()
    assert "holes at noon" in listing and "google-like on google-balanced" in listing
    page = admin_client.get(f"/admin/dashboard/packinganalysis/{a.pk}/change/")
    assert page.status_code == 200 and b"secret-token-of-the-public-link" not in page.content
    listing = admin_client.get("/admin/dashboard/search/").content.decode()
    assert "best TRT policy" in listing and ">trt<" in listing
    assert admin_client.get(f"/admin/dashboard/search/{s.pk}/change/").status_code == 200


def test_capacity_plans_are_listed_and_open_without_their_secret(admin_client: Client) -> None:
    from dashboard.capacity.services import check_request, create_plan

    owner = User.objects.create_user("erin")
    spec, _ = check_request(
        {
            "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
            "workload": {"preset": "google-like", "params": {}},
            "load": 0.9,
            "hours": 0.25,
            "schedulers": ["greedy"],
            "seeds": [0],
        },
        target="p99_wait_s<=60",
    )
    plan = create_plan(owner, spec, name="erin-plan", visibility="public")
    listing = admin_client.get("/admin/dashboard/capacityplan/").content.decode()
    assert "erin-plan" in listing and "p99_wait_s&lt;=60" in listing
    page = admin_client.get(f"/admin/dashboard/capacityplan/{plan.pk}/change/")
    assert page.status_code == 200 and plan.share_token not in page.content.decode()
