"""A database or broker that is briefly unreachable: work waits and resumes, it is never failed or lost for it.

- :data:`OUTAGE_ERRORS`: what a task or a request sees while PostgreSQL or the
  broker is down (Django's OperationalError and InterfaceError, kombu's and
  redis's connection errors).
- :func:`retry_on_outage`: a Celery task that met one is retried with
  backoff (2, 4, 8, then every :data:`RETRY_MAX_S` seconds), never
  acknowledged as done: its next try claims the work once the database is
  back, within :data:`RETRY_MAX_S`. When the outage interrupted work this
  worker had claimed (:class:`Interrupted`), the retry first gives the claim
  back (:func:`give_back`), so the work is taken again at once instead of
  waiting SIMCORE_WORKER_TIMEOUT_S to be declared lost, and no attempt is used up.
- :class:`OutageMiddleware`: a page or API request answers 503 with
  ``Retry-After`` instead of 500.

Duplicates are harmless throughout: claiming is a conditional UPDATE (one
worker wins), and a give-back is guarded by the attempt number it gives back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django import db
from django.db.models import Model, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

log = logging.getLogger(__name__)


def _redis_errors() -> tuple[type[BaseException], ...]:
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # the filesystem broker needs no redis client
        return ()
    return (RedisConnectionError, RedisTimeoutError)


#: The database unreachable (or its connection broken mid-query).
DATABASE_ERRORS: tuple[type[BaseException], ...] = (db.OperationalError, db.InterfaceError)
#: The database or the broker unreachable: retried, never reported as the work's failure.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    *DATABASE_ERRORS,
    KombuOperationalError,
    ConnectionError,
    *_redis_errors(),
)

#: Longest wait between two tries of a task during an outage: work resumes at most this long after it ends.
#: Each try re-publishes one small message per waiting task: cheap, even for a long outage.
RETRY_MAX_S = 10
#: Tries before a task gives up (its work stays pending and the periodic repair queues it again): about an hour.
MAX_RETRIES = 360
#: What a client is told to wait before trying again during an outage (seconds).
RETRY_AFTER_S = 30


class Interrupted(Exception):
    """An outage interrupted work that this worker had claimed as ``attempt``; the retry gives it back first."""

    def __init__(self, attempt: int, cause: BaseException) -> None:
        super().__init__(f"attempt {attempt} interrupted by {type(cause).__name__}: {cause}")
        self.attempt = attempt


def backoff_s(retries: int) -> int:
    """Seconds before try ``retries + 1``: 2, 4, 8, then RETRY_MAX_S."""
    return int(min(RETRY_MAX_S, 2 ** (retries + 1)))


def retry_on_outage(task: Any, run: Callable[[int | None], str]) -> str:
    """``run(give_back)`` inside bound task ``task``; an outage retries the task with backoff instead of ending it.

    ``give_back`` is the attempt an earlier try of this task lost to an outage
    (its ``give_back`` keyword), None otherwise.
    """
    give = task.request.kwargs.get("give_back") if task.request.kwargs else None
    try:
        return run(give)
    except Interrupted as e:
        cause: BaseException = e.__cause__ or e
        give = e.attempt
    except OUTAGE_ERRORS as e:
        cause = e
    args = list(task.request.args or [])
    countdown = backoff_s(task.request.retries)
    log.warning("%s%s: %s; trying again in %s s", task.name, tuple(args), cause, countdown)
    # Outside the except blocks: the traceback would keep the interrupted work's frames alive.
    raise task.retry(args=args, kwargs={"give_back": give}, exc=cause, countdown=countdown, max_retries=MAX_RETRIES)


def give_back(model: type[Model], pk: int, attempt: int | None, running: str, pending: str, **reset: Any) -> bool:
    """Put ``pk``'s ``attempt``, interrupted by an outage, back to ``pending`` without using up an attempt.

    A no-op once the work left that attempt (the lost-work rule took it back,
    another worker claimed it, it was cancelled). Returns whether it was given back.
    """
    if attempt is None:
        return False
    rows = model._default_manager.filter(Q(pk=pk, status=running, attempt=attempt))
    given = bool(
        rows.update(
            status=pending,
            attempt=attempt - 1,
            worker="",
            started_at=None,
            heartbeat_at=None,
            queued_at=timezone.now(),
            **reset,
        )
    )
    if given:
        log.info("%s %s: attempt %s interrupted by an outage, given back", model.__name__, pk, attempt)
    return given


@contextmanager
def interrupted_as(attempt: int) -> Iterator[None]:
    """Turn an outage inside claimed work into :class:`Interrupted` (so the retry knows which attempt to give back)."""
    try:
        yield
    except OUTAGE_ERRORS as e:
        raise Interrupted(attempt, e) from e


#: What a user reads during an outage.
UNAVAILABLE = "the database is unreachable for a moment; nothing was lost, try again in a few seconds"


def unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: JSON under /api/, a short page elsewhere."""
    from dashboard.common.errors import is_api

    response: HttpResponse
    if is_api(request):
        response = JsonResponse({"detail": UNAVAILABLE}, status=503)
    else:
        response = HttpResponse(
            "<!doctype html><title>Unavailable for a moment</title>"
            f"<h1>Unavailable for a moment</h1><p>{UNAVAILABLE}.</p>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class OutageMiddleware:
    """A request that meets an unreachable database answers 503 with Retry-After, not 500.

    ``process_exception`` covers the views (with DEBUG too);
    :func:`dashboard.common.errors.server_error` covers what fails outside them (the
    session or the user, read by other middleware), as Django hands every
    uncaught exception to the 500 handler.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_ERRORS):
            log.warning("%s %s: database unreachable: %s", request.method, request.path, exception)
            return unavailable(request)
        return None
