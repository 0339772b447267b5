"""Security as tests: deployment checks, secrets from the environment, CSRF, upload checks, login throttling."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from dashboard.experiments.services import create_experiment
from dashboard.models import ApiToken, ClusterUpload, LoginFailure, TraceUpload
from dashboard.traces.uploads import create_upload, safe_filename
from simcore.core.errors import InputError
from tests.dashboard.conftest import ROOT, small_scenario

# ---------------------------------------------------------------------------- production settings


def _production_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DEBUG",
            "SECRET_KEY",
            "SIMCORE_HTTPS",
            "ALLOWED_HOSTS",
            "DATABASE_URL",
            "REDIS_URL",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        )
    }  # the browser test sets the last one for Playwright
    env.update({"DJANGO_SETTINGS_MODULE": "dashboard.settings", "PYTHONPATH": str(ROOT)}, **extra)
    return env


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = _production_env(
        SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="sim.example.org", SIMCORE_VAR_DIR=str(tmp_path)
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "System check identified no issues" in out.stdout
    # DEBUG is off unless asked for; hosts come from the environment.
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DEBUG, s.ALLOWED_HOSTS, s.SESSION_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "['sim.example.org']", "True", "True", "31536000"], out.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "environment variable SECRET_KEY is required"),
        ({"SECRET_KEY": "short"}, "SECRET_KEY must be at least 32 characters"),
        ({"DEBUG": "maybe"}, "DEBUG must be true or false"),
    ],
)
def test_production_settings_fail_fast_without_a_secret(tmp_path, env, message):
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=_production_env(SIMCORE_VAR_DIR=str(tmp_path), **env),
    )
    assert out.returncode != 0 and message in out.stderr


# ---------------------------------------------------------------------------- CSRF


def _post_urls(exp, run, team, token) -> list[str]:
    return [
        reverse("experiment-new"),
        reverse("experiment-cancel", args=[exp.pk]),
        reverse("experiment-share", args=[exp.pk]),
        reverse("experiment-new-link", args=[exp.pk]),
        reverse("experiment-revoke-link", args=[exp.pk]),
        reverse("experiment-fork", args=[exp.pk]),
        reverse("run-cancel", args=[run.pk]),
        reverse("uploads"),
        reverse("team-list"),
        reverse("team-invite", args=[team.pk]),
        reverse("token-create"),
        reverse("token-revoke", args=[token.pk]),
        reverse("password-change"),
        reverse("logout"),
        reverse("api-experiment-list"),
        reverse("api-experiment-cancel", args=[exp.pk]),
    ]


def test_every_form_needs_its_csrf_token(owner, team):
    exp = create_experiment(owner, small_scenario())
    token, _ = ApiToken.issue(owner, "t")
    c = Client(enforce_csrf_checks=True)
    c.force_login(owner)
    for url in _post_urls(exp, exp.runs.first(), team, token):
        assert c.post(url, {}).status_code == 403, url
    # The login form too (no session yet).
    anon = Client(enforce_csrf_checks=True)
    assert anon.post(reverse("login"), {"username": "alice", "password": "alice-password-1"}).status_code == 403
    # ... and every form a page renders carries the token.
    pages = [
        reverse("experiment-list"),
        reverse("experiment-new"),
        exp.get_absolute_url(),
        reverse("uploads"),
        reverse("team-list"),
        team.get_absolute_url(),
        reverse("account"),
        reverse("password-change"),
        reverse("experiment-fork", args=[exp.pk]),
    ]
    for url in pages:
        html = c.get(url).content.decode()
        forms = re.findall(r"<form[^>]*method=\"post\".*?</form>", html, flags=re.S)
        assert forms, url
        for f in forms:
            assert 'name="csrfmiddlewaretoken"' in f, (url, f[:120])


def test_a_token_needs_no_csrf_but_a_session_does_on_the_api(owner):
    _, secret = ApiToken.issue(owner, "t")
    c = Client(enforce_csrf_checks=True)
    body = {"scenario": small_scenario()}
    assert (
        c.post(
            "/api/experiments/", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
        ).status_code
        == 201
    )
    c.force_login(owner)
    assert c.post("/api/experiments/", body, content_type="application/json").status_code == 403


# ---------------------------------------------------------------------------- uploads


@pytest.mark.parametrize(
    ("kind", "filename", "content", "message"),
    [
        ("cluster", "c.exe", b'{"a": 1}', "must be a .json file"),
        ("trace", "t.txt", b"submit_s,duration_s\n", "must be a .csv or .csv.gz or .gz file"),
        ("trace", "t.csv.gz", b"submit_s,duration_s\n1,2\n", "not gzip-compressed"),
        ("trace", "t.csv", b"submit_s,duration_s\x00\x01\n", "binary, not text"),
        ("cluster", "c.json", b"\xff\xfe{}", "not UTF-8 text"),
        ("cluster", "c.json", b"", "the file is empty"),
    ],
)
def test_uploads_are_checked_for_type_and_content_before_anything_is_stored(owner, kind, filename, content, message):
    with pytest.raises(InputError, match=message):
        create_upload(kind, owner, "x", filename, content)
    assert ClusterUpload.objects.count() == 0 and TraceUpload.objects.count() == 0


@override_settings(SIMCORE_MAX_UPLOAD_MB=1)
def test_the_upload_size_limit_applies_to_pages_and_api_before_reading(owner, owner_client):
    big = b"1" * (1024 * 1024 + 1)
    resp = owner_client.post(reverse("uploads"), {"kind": "trace", "trace-file": SimpleUploadedFile("t.csv", big)})
    assert resp.status_code == 400 and "the limit is 1 MB" in resp.content.decode()
    _, secret = ApiToken.issue(owner, "t")
    resp = Client().post(
        "/api/uploads/trace/", {"file": SimpleUploadedFile("t.csv", big)}, HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert resp.status_code == 400 and "the limit is 1 MB" in resp.json()["file"][0]
    assert TraceUpload.objects.count() == 0


def test_user_file_names_never_choose_a_path(owner):
    import json

    from tests.dashboard.conftest import CLUSTER

    up = create_upload("cluster", owner, "x", "../../../etc/cron.d/evil.json", json.dumps(CLUSTER).encode())
    assert up.filename == "evil.json"
    assert safe_filename("..\\..\\a b;rm -rf.json", "d") == "a_b_rm_-rf.json"
    assert safe_filename("....", "default.csv") == "default.csv"


def test_the_web_platform_builds_no_raw_sql():
    # Only the ORM talks to the database: no raw(), extra(), RawSQL or cursors in dashboard/. One exception:
    # the heartbeat helper process (dashboard/common/beats.py) has the database layer but no models, and writes one
    # UPDATE whose names come from model metadata (quoted) and whose values are parameters; no request reaches it.
    pattern = re.compile(r"\.raw\(|\.extra\(|RawSQL|\.cursor\(|\.execute\(")
    hits = [
        f"{p}:{i}"
        for p in Path(ROOT, "dashboard").rglob("*.py")
        if "migrations" not in p.parts and p.relative_to(ROOT).as_posix() != "dashboard/common/beats.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


# ---------------------------------------------------------------------------- login throttling


@override_settings(SIMCORE_LOGIN_MAX_FAILURES=3, SIMCORE_LOGIN_LOCKOUT_MINUTES=10)
def test_password_guessing_locks_the_user_name_for_that_address(owner):
    c = Client(REMOTE_ADDR="10.0.0.1")
    url = reverse("login")
    for _ in range(3):
        resp = c.post(url, {"username": "alice", "password": "wrong"})
        assert resp.status_code == 200 and "correct username and password" in resp.content.decode()
    # Locked: even the right password is refused, with a message saying when to retry.
    resp = c.post(url, {"username": "alice", "password": "alice-password-1"})
    assert resp.status_code == 429 and "Try again in 10 minutes" in resp.content.decode()
    assert "_auth_user_id" not in c.session
    # The admin's sign-in goes through the same backend.
    resp = c.post("/admin/login/", {"username": "ALICE", "password": "alice-password-1"})
    assert "_auth_user_id" not in c.session
    # Another address is not locked (the count is per user name and address).
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert other.post(url, {"username": "alice", "password": "alice-password-1"}).status_code == 302
    # When the lock ends, the right password works and clears the count.
    LoginFailure.objects.filter(ip="10.0.0.1").update(locked_until=timezone.now() - timedelta(seconds=1))
    assert c.post(url, {"username": "alice", "password": "alice-password-1"}).status_code == 302
    assert not LoginFailure.objects.filter(ip="10.0.0.1").exists()


@override_settings(SIMCORE_LOGIN_MAX_FAILURES=3, SIMCORE_LOGIN_LOCKOUT_MINUTES=10)
def test_old_failures_outside_the_window_do_not_count(owner):
    c = Client(REMOTE_ADDR="10.0.0.3")
    for _ in range(2):
        c.post(reverse("login"), {"username": "alice", "password": "wrong"})
    LoginFailure.objects.update(first_at=timezone.now() - timedelta(minutes=11))
    c.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert LoginFailure.objects.get().failures == 1
    assert c.post(reverse("login"), {"username": "alice", "password": "alice-password-1"}).status_code == 302
