"""The API of owned background work (searches, capacity plans): one implementation of its seven endpoints.

A search and a capacity plan are both work a user owns, shares (team, visibility,
public link), cancels, forks and follows while Celery runs it; their API views
were the same code with other names. Here they are written once, parameterised
by a :class:`Room`: the row's serializers and the feature's lookups and service
functions. A feature's API module only says what differs (how a request starts
its work, what a fork starts from) and the summaries its OpenAPI description
gives each endpoint::

    class PlanCancel(owned.Cancel):
        room = ROOM
        summaries = {"post": "Cancel a pending or running capacity plan"}

The requests, responses and error codes of each endpoint's description are the
same for every room (:meth:`Endpoint.describe`), so the description cannot drift
from what the shared view does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db.models import QuerySet
from django.http import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard.api.serializers import ExperimentUpdateSerializer
from dashboard.api.views import FILE_RESPONSE, IgnoreAccept, _errors, _team
from dashboard.common import queueing
from dashboard.common.access import Need
from dashboard.common.models import Status
from dashboard.common.sharing import set_sharing


@dataclass(frozen=True)
class Room:
    """What the shared endpoints need of one feature: its serializers, lookups and service functions."""

    #: The row as the API shows it (list, detail, and the answer of every change).
    serializer: type[serializers.ModelSerializer[Any]]
    create_serializer: type[serializers.Serializer[Any]]
    fork_serializer: type[serializers.Serializer[Any]]
    progress_serializer: type[serializers.Serializer[Any]]
    results_serializer: type[serializers.Serializer[Any]]
    #: Every row a user may read.
    visible: Callable[[Any], QuerySet[Any]]
    #: Row ``pk`` if the user may ``need`` it (404 / 403 as dashboard.common.access says).
    get: Callable[[Any, int, Need], Any]
    #: Starts work from a creation request, forked from a row or not: the 201 response (or a 400).
    start: Callable[[Request, dict[str, Any], Any], Response]
    #: A row as a creation request: what a fork starts from before its changes.
    request_of: Callable[[Any], dict[str, Any]]
    cancel: Callable[[Any], object]
    progress: Callable[[Any], dict[str, Any]]
    results: Callable[[Any], dict[str, Any]]
    #: A download of a row: ``(row, kind) -> file response``; ``download_kinds`` the kinds there are.
    download: Callable[[Any, str], HttpResponseBase]
    download_kinds: tuple[str, ...]


# A shared endpoint: its subclass in a feature names the ``room`` and the ``summaries`` of its methods.
#
# On such a subclass the methods get their OpenAPI description (drf-spectacular's
# ``extend_schema_view``, which describes an inherited method on the subclass only).
class Endpoint:
    room: ClassVar[Room]
    #: HTTP method name -> the one-line summary of the OpenAPI description.
    summaries: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "room" in cls.__dict__:
            described = {
                m: extend_schema(summary=text, **cls.describe(cls.room, m)) for m, text in cls.summaries.items()
            }
            extend_schema_view(**described)(cls)

    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        """The request, parameters and responses of ``method`` (everything but its summary)."""
        raise NotImplementedError

    @staticmethod
    def answer(request: Request, room: Room, row: Any) -> Response:
        """The row as it is now, after a change."""
        row.refresh_from_db()
        return Response(room.serializer(row, context={"request": request}).data)


# GET: the rows the caller can see, filtered by ``status``, a page at a time; POST: start new work.
class List(Endpoint, GenericAPIView):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "room" in cls.__dict__:
            cls.serializer_class = cls.room.serializer
        super().__init_subclass__(**kwargs)

    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        if method == "get":
            return {
                "parameters": [OpenApiParameter("status", str, enum=Status.values)],
                "responses": {200: room.serializer(many=True), **_errors(401)},
            }
        return {"request": room.create_serializer, "responses": {201: room.serializer, **_errors(400, 401)}}

    def get(self, request: Request) -> Response:
        qs = self.room.visible(request.user).select_related("owner", "team")
        st = request.query_params.get("status", "")
        if st:
            qs = qs.filter(status=st)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(self.room.serializer(page, many=True, context={"request": request}).data)

    def post(self, request: Request) -> Response:
        return self.room.start(request, dict(request.data) if isinstance(request.data, dict) else {}, None)


def created(request: Request, serializer: type[serializers.ModelSerializer[Any]], row: Any) -> Response:
    """201 with the new ``row`` as stored; a ``warning`` when its work could not be queued yet (the broker is down;
    the repair queues it later)."""
    body = dict(serializer(type(row)._default_manager.get(pk=row.pk), context={"request": request}).data)
    if getattr(row, "queued", True) is False:
        body["warning"] = queueing.QUEUE_DOWN
    return Response(body, status=status.HTTP_201_CREATED)


#: The PATCH summary is the same for every room: what the request may change.
PATCH_SUMMARY = "Rename, move to a team, change visibility (owner only)"


# GET: one row with its progress; PATCH: rename it, move it to a team, change its visibility (owner only).
class Detail(Endpoint, APIView):
    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        if method == "get":
            return {"responses": {200: room.serializer, **_errors(401, 404)}}
        return {
            "request": ExperimentUpdateSerializer,
            "responses": {200: room.serializer, **_errors(400, 401, 403, 404)},
        }

    def get(self, request: Request, pk: int) -> Response:
        row = self.room.get(request.user, pk, "view")
        return Response(self.room.serializer(row, context={"request": request}).data)

    def patch(self, request: Request, pk: int) -> Response:
        row = self.room.get(request.user, pk, "share")
        ser = ExperimentUpdateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        if "name" in d:
            row.name = d["name"]
            row.save(update_fields=["name"])
        if "team" in d or "visibility" in d:
            team = _team(request, d["team"]) if "team" in d else row.team
            set_sharing(row, team=team, visibility=d.get("visibility", row.visibility))
        return self.answer(request, self.room, row)


# POST: cancel pending or running work (who may: dashboard.common.access); the row as it is then.
class Cancel(Endpoint, APIView):
    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        return {"request": None, "responses": {200: room.serializer, **_errors(401, 403, 404)}}

    def post(self, request: Request, pk: int) -> Response:
        row = self.room.get(request.user, pk, "cancel")
        self.room.cancel(row)
        return self.answer(request, self.room, row)


# POST: copy a row the caller can see into their space, with the request's changes, and start it.
class Fork(Endpoint, APIView):
    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        return {"request": room.fork_serializer, "responses": {201: room.serializer, **_errors(400, 401, 404)}}

    def post(self, request: Request, pk: int) -> Response:
        source = self.room.get(request.user, pk, "view")
        ser = self.room.fork_serializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        data = {
            **self.room.request_of(source),
            **d["changes"],
            "name": d.get("name") or f"{source.title} (fork)"[:200],
            "team": d["team"],
            "visibility": d["visibility"],
        }
        return self.room.start(request, data, source)


# GET: where the work is (the feature's progress payload, as its page polls it).
class Progress(Endpoint, APIView):
    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        return {"responses": {200: room.progress_serializer, **_errors(401, 404)}}

    def get(self, request: Request, pk: int) -> Response:
        return Response(self.room.progress(self.room.get(request.user, pk, "view")))


# GET: the work's results as one JSON document (its ``.json`` download).
class Results(Endpoint, APIView):
    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        return {"responses": {200: room.results_serializer, **_errors(401, 404)}}

    def get(self, request: Request, pk: int) -> Response:
        return Response(self.room.results(self.room.get(request.user, pk, "view")))


# GET: one of the work's files, whatever the client's Accept header says.
class Download(Endpoint, APIView):
    content_negotiation_class = IgnoreAccept

    @classmethod
    def describe(cls, room: Room, method: str) -> dict[str, Any]:
        kind = OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(room.download_kinds))
        return {
            "parameters": [kind],
            "responses": {(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
        }

    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return self.room.download(self.room.get(request.user, pk, "view"), kind)
