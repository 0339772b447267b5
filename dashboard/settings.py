"""Django settings, read from the environment through typed helpers that fail fast.

Embedded default (no variables set): SQLite under ``var/`` and Celery's
broker on kombu's filesystem transport under ``var/broker/``, so ``make run``
needs no server yet still runs simulations in a separate worker process.
Production (docker-compose.yml): ``DATABASE_URL`` (PostgreSQL), ``REDIS_URL``,
``SECRET_KEY``, ``ALLOWED_HOSTS``; DEBUG is off unless ``DEBUG=1`` asks for it
(``make run`` does), and with DEBUG off the HTTPS protections are on
(``SIMCORE_HTTPS=0`` turns them off for a plain-HTTP deployment), so
``manage.py check --deploy`` is clean.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from simcore.core.limits import DEFAULT_MAX_RUNS

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"environment variable {name} is required")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false (1/0, yes/no), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [x.strip() for x in env_str(name, default).split(",") if x.strip()]


#: Where the embedded default keeps its SQLite file and broker folders.
VAR_DIR = Path(env_str("SIMCORE_VAR_DIR", str(BASE_DIR / "var"))).resolve()

# Off unless asked for (``make run`` sets DEBUG=1): a deployment that forgets a variable stays safe.
DEBUG = env_bool("DEBUG", False)
if DEBUG:
    SECRET_KEY = env_str("SECRET_KEY", "dev-only-insecure-key-do-not-use-in-production")
else:
    SECRET_KEY = env_str("SECRET_KEY")
    if len(SECRET_KEY) < 32:
        raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters when DEBUG is off")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if not DEBUG else "*")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

# HTTPS: on by default in production. Behind a TLS-terminating proxy set SIMCORE_BEHIND_PROXY=1
# (it must set X-Forwarded-Proto); a plain-HTTP deployment (a laptop, a closed lab network) sets SIMCORE_HTTPS=0.
SIMCORE_HTTPS = env_bool("SIMCORE_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = SIMCORE_HTTPS
SESSION_COOKIE_SECURE = SIMCORE_HTTPS
CSRF_COOKIE_SECURE = SIMCORE_HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if SIMCORE_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
if env_bool("SIMCORE_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "dashboard.apps.DashboardConfig",
]

MIDDLEWARE = [
    # First, so its process_exception sees what every other one lets through (a database outage: 503).
    "dashboard.common.outages.OutageMiddleware",
    "dashboard.middleware.InputGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.SecurityHeadersMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.experiments.views.version_context",
            ],
        },
    },
]

_default_db = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL", _default_db)
if DATABASE_URL.startswith("sqlite") and DATABASE_URL == _default_db:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The web server and the worker write to the same file: WAL lets readers run during a
    # write, IMMEDIATE takes the write lock up front (no upgrade deadlocks), and the timeout
    # waits for the other process instead of failing with "database is locked".
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests need a file (not :memory:) so that the separate worker process sees the same data.
    _name = Path(DATABASES["default"]["NAME"])
    DATABASES["default"]["TEST"] = {"NAME": str(_name.with_name("test_" + _name.name))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Django's backend behind the sign-in throttle (dashboard.accounts.services); it also guards the admin's sign-in.
AUTHENTICATION_BACKENDS = ["dashboard.accounts.services.ThrottledModelBackend"]
#: Failed sign-ins of one user name from one address before it is locked out.
#: Pending work queued longer ago than this (or never, the broker being down) is queued again.
SIMCORE_REQUEUE_AFTER_S = env_int("SIMCORE_REQUEUE_AFTER_S", 600, minimum=1)
#: How long a request waits for the broker before it tells the user the queue is unavailable.
SIMCORE_BROKER_TIMEOUT_S = env_int("SIMCORE_BROKER_TIMEOUT_S", 3, minimum=1)
SIMCORE_LOGIN_MAX_FAILURES = env_int("SIMCORE_LOGIN_MAX_FAILURES", 5, minimum=1)
#: How long failures count and how long a lock-out lasts, in minutes.
SIMCORE_LOGIN_LOCKOUT_MINUTES = env_int("SIMCORE_LOGIN_LOCKOUT_MINUTES", 15, minimum=1)
#: How long a team invitation link stays valid, in days.
SIMCORE_INVITATION_DAYS = env_int("SIMCORE_INVITATION_DAYS", 7, minimum=1)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "experiment-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
#: The documentation site ``make docs`` builds (mkdocs.yml's site_dir), served at /docs/ (dashboard.docs_site).
DOCS_ROOT = Path(env_str("SIMCORE_DOCS_DIR", str(BASE_DIR / "build" / "docs")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
try:  # whitenoise warns on every request when the folder is missing (before collectstatic)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass
#: Whether static files were collected into STATIC_ROOT (``collectstatic``): then they are served as in
#: production, under content-hashed names, compressed (gzip, and Brotli when installed) and cached for a
#: year. On by default without DEBUG; ``make run`` collects them at start and sets it with DEBUG too.
#: Off, static/ is served as it is, uncached (the test suite, ``manage.py runserver``).
SIMCORE_STATIC_COLLECTED = env_bool("SIMCORE_STATIC_COLLECTED", not DEBUG)


def records_storage(raw: str | None) -> dict[str, Any]:
    """The "records" storage (dashboard.experiments.storage: runs' per-job records as Parquet objects) that
    SIMCORE_STORAGE_URL names: unset, the folder ``SIMCORE_VAR_DIR/records``; ``file:///abs/path``, that folder;
    ``s3://bucket/prefix``, django-storages' S3 backend, credentials and endpoint from the environment.

    The default sits beside the embedded default's database and broker, which the web server and workers of
    one host already share; workers with a var folder of their own, or on other hosts, need a store they all
    reach (s3://), since a path names nothing on another machine.
    """
    name = "SIMCORE_STORAGE_URL"
    if raw is None or raw.strip() == "":
        return {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(VAR_DIR / "records")},
        }
    url = urlsplit(raw.strip())
    if url.scheme == "file":
        if url.netloc not in ("", "localhost") or not url.path.startswith("/") or url.query or url.fragment:
            raise ImproperlyConfigured(f"{name} must be file:///an/absolute/path, got {raw!r}")
        return {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": url.path}}
    if url.scheme == "s3":
        bucket = url.netloc
        if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket) or url.query or url.fragment:
            raise ImproperlyConfigured(
                f"{name} must be s3://bucket/optional/prefix with a valid bucket name, got {raw!r}"
            )
        options: dict[str, Any] = {
            "bucket_name": bucket,
            "location": url.path.strip("/"),
            # Any S3-compatible store (MinIO, Ceph, a cloud's): its URL, else AWS's own endpoints.
            "endpoint_url": os.environ.get("AWS_S3_ENDPOINT_URL") or None,
            "access_key": os.environ.get("AWS_ACCESS_KEY_ID") or None,
            "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY") or None,
            "region_name": os.environ.get("AWS_S3_REGION_NAME") or None,
            # Keys are unique (a run, its attempt and a random part): no existence check before each write.
            "file_overwrite": True,
            # A download reads an object through a temporary file that spills to disk past this many bytes,
            # so the web process's memory stays flat whatever the run's size.
            "max_memory_size": 8 * 1024 * 1024,
            "default_acl": None,
            "querystring_auth": False,
        }
        return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}
    raise ImproperlyConfigured(f"{name} must be unset, file:///an/absolute/path or s3://bucket/prefix, got {raw!r}")


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "records": records_storage(os.environ.get("SIMCORE_STORAGE_URL")),
    "staticfiles": {
        "BACKEND": "dashboard.staticstorage.CollectedStaticStorage"
        if SIMCORE_STATIC_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Serve straight from static/ when collectstatic has not run (tests, runserver); collected files are
# served from STATIC_ROOT's index, built once at start (no per-request look-ups, long cache headers).
WHITENOISE_USE_FINDERS = not SIMCORE_STATIC_COLLECTED
WHITENOISE_AUTOREFRESH = DEBUG and not SIMCORE_STATIC_COLLECTED

#: Largest uploaded cluster or trace file, in megabytes.
SIMCORE_MAX_UPLOAD_MB = env_int("SIMCORE_MAX_UPLOAD_MB", 200, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
#: Most runs (schedulers x seeds) one experiment may create.
SIMCORE_MAX_RUNS = env_int("SIMCORE_MAX_RUNS", DEFAULT_MAX_RUNS, minimum=1)  # simcore.core.limits.max_runs reads it too
#: Seconds running work may go without its worker's heartbeat before it is marked failed (the worker died).
SIMCORE_WORKER_TIMEOUT_S = env_int("SIMCORE_WORKER_TIMEOUT_S", 300, minimum=1)
#: How many times a run (or trace import) is started before work lost by dying workers counts as failed:
#: a lost attempt within this bound is queued again automatically (dashboard.common.recovery).
SIMCORE_RUN_MAX_ATTEMPTS = env_int("SIMCORE_RUN_MAX_ATTEMPTS", 3, minimum=1)
#: Wall seconds one attempt of a run or trace import may take before it is stopped and failed; 0: no limit.
SIMCORE_RUN_TIME_LIMIT_S = env_int("SIMCORE_RUN_TIME_LIMIT_S", 24 * 3600, minimum=0)


def _half_the_memory_mb() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**21)
    except (ValueError, OSError, AttributeError):  # no sysconf: no limit rather than a guess
        return 0


#: Megabytes of memory one run or trace import may allocate in its worker process (RLIMIT_DATA on top of
#: what the process holds when it starts the work; common.limits); 0: no limit. Default: half the machine's memory.
SIMCORE_RUN_MEMORY_MB = env_int("SIMCORE_RUN_MEMORY_MB", _half_the_memory_mb(), minimum=0)
#: Megabytes one process of this worker has for one run (a sweep cell): its host's memory over its
#: concurrency, less what else runs there. A cell whose estimated peak (simcore.memory) is more is left for a
#: worker with enough (dashboard.experiments.memory) instead of being killed by the kernel. 0: not set, every
#: cell is taken (as before).
SIMCORE_WORKER_MEMORY_MB = env_int("SIMCORE_WORKER_MEMORY_MB", 0, minimum=0)
#: Jobs per Parquet row group of a run's per-job records (dashboard.experiments.storage; ~36 bytes a job before
#: compression): writers and readers hold one row group at a time, whatever the run's size.
SIMCORE_JOB_CHUNK = env_int("SIMCORE_JOB_CHUNK", 1_000_000, minimum=1)
#: Extra modules imported at start-up, e.g. private schedulers or presets registering themselves.
SIMCORE_PLUGINS = env_list("SIMCORE_PLUGINS", "")

# The REST API (dashboard/api): token or session authentication, JSON only, the same permission rules as the pages.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "dashboard.api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["dashboard.api.parsers.BoundedJSONParser", "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_PAGINATION_CLASS": "dashboard.api.parsers.BoundedPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "EXCEPTION_HANDLER": "dashboard.api.views.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "simcore dashboard API",
    "DESCRIPTION": "Experiments, runs, uploads and teams of the simcore dashboard. Authenticate with "
    "`Authorization: Bearer <token>` (tokens are created on your account page).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The documentation page's Swagger UI comes from the drf-spectacular-sidecar package (static/), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "StatusEnum": "dashboard.models.Status",
        "VisibilityEnum": "dashboard.models.Visibility",
        "RoleEnum": "dashboard.models.Role",
        "ImportStatusEnum": "dashboard.models.ImportStatus",
        "TraceFormatEnum": "dashboard.models.TraceFormat",
    },
}

# Celery: Redis when REDIS_URL is set, else kombu's filesystem transport (no server needed).
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 12 * 3600}
else:
    BROKER_DIR = Path(env_str("SIMCORE_BROKER_DIR", str(VAR_DIR / "broker")))
    for _sub in ("queue", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
# Results live in the database (RunResult), not in a Celery result backend.
#: The short queue (runs, sweep cells, search evaluations); long work (packing analyses, trace imports,
#: search coordination) goes to the same name plus ".long" (dashboard.celery.route_task). The tests give
#: their workers queues of their own.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("SIMCORE_TASK_QUEUE", "celery")
CELERY_TASK_ROUTES = ("dashboard.celery.route_task",)
# Both queues declared, so that a worker started without -Q takes all work (a host added with
# `celery -A dashboard worker`); `-Q celery` or `-Q celery.long` dedicates a worker to one.
# Each its own exchange and routing key, as Celery makes a queue it was not told of: two queues
# bound with one key would each get a copy of every message.
CELERY_TASK_QUEUES = tuple(
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in (CELERY_TASK_DEFAULT_QUEUE, CELERY_TASK_DEFAULT_QUEUE + ".long")
)
CELERY_TASK_IGNORE_RESULT = True
# Every worker also consumes a queue of its own (``<node name>.dq2``): a cell one worker declined for memory
# is sent to the own queue of one with enough (dashboard.experiments.memory), never back to the shared one.
CELERY_WORKER_DIRECT = True
# A run is long and CPU-bound: take one at a time, acknowledge after it ends so a message whose
# worker died may be redelivered. That redelivery is a convenience, not the guarantee: Redis gives an
# unacknowledged message back only after the visibility timeout, the filesystem transport never.
# Lost work is found and queued again from the database (dashboard.common.recovery), and the conditional
# claim makes every duplicate message harmless.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
