"""API views of design-space searches: thin adapters over dashboard.common.access and dashboard.searches.services."""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard.api import search_serializers as s
from dashboard.api.serializers import ExperimentUpdateSerializer, PlaceSerializer
from dashboard.api.views import FILE_RESPONSE, IgnoreAccept, _errors, _team
from dashboard.common import access, queueing
from dashboard.common.models import Status
from dashboard.common.sharing import set_sharing
from dashboard.searches import downloads as search_downloads
from dashboard.searches.access import get_search_for_user, visible_searches
from dashboard.searches.models import Search
from dashboard.searches.services import cancel_search, check_search, create_search, progress_payload
from dashboard.traces.models import ClusterUpload, TraceUpload, Upload
from dashboard.traces.uploads import upload_specs
from simcore.dse.explore.search import SearchSettings


def _scenario_from(
    request: Request, data: dict[str, Any], source: Search | None = None
) -> tuple[dict[str, Any], ClusterUpload | None, TraceUpload | None]:
    """The search scenario with its uploads resolved; uploads must be the caller's or ``source``'s."""
    ser = PlaceSerializer(data=data)
    ser.is_valid(raise_exception=True)
    sc = dict(ser.validated_data)
    allowed: dict[str, Upload | None] = {
        "cluster": source.cluster_upload if source else None,
        "workload": source.trace_upload if source else None,
    }
    picked: dict[str, Upload | None] = {"cluster": None, "workload": None}
    for part, model in (("cluster", ClusterUpload), ("workload", TraceUpload)):
        spec = dict(sc[part])
        if "upload" in spec:
            up: Upload | None = (
                model.objects.filter(pk=spec["upload"], owner=access.signed_in(request)).defer("content_gz").first()
            )
            other = allowed[part]
            if up is None and other is not None and other.pk == spec["upload"]:
                up = other
            if up is None:
                raise ValidationError({"scenario": {part: {"upload": [f"no {part} upload {spec['upload']} of yours"]}}})
            if isinstance(up, TraceUpload) and not up.is_ready:
                raise ValidationError(
                    {
                        "scenario": {
                            part: {"upload": [f"trace upload {up.pk} is {up.status}; only a ready trace can be used"]}
                        }
                    }
                )
            picked[part] = up
        else:
            sc[part] = {"preset": spec["preset"], "params": spec.get("params") or {}}
    cu = cast(ClusterUpload | None, picked["cluster"])
    tu = cast(TraceUpload | None, picked["workload"])
    sc.update(upload_specs(cu, tu))
    sc["workload"].pop("classes", None)
    return sc, cu, tu


def _start(request: Request, data: dict[str, Any], source: Search | None = None) -> Response:
    ser = s.SearchCreateSerializer(data=data)
    ser.is_valid(raise_exception=True)
    d = ser.validated_data
    # The raw scenario (the serializer checked its shape; uploads and simcore's checks come next).
    scenario, cu, tu = _scenario_from(request, cast(dict[str, Any], data["scenario"]), source)
    settings = SearchSettings(d["metric"], d["population"], d["generations"], d["seed"])
    sim_seed = d["seed"] if d["sim_seed"] is None else d["sim_seed"]
    scenario = check_search(scenario, settings, sim_seed)
    search = create_search(
        access.signed_in(request),
        scenario,
        settings,
        sim_seed,
        name=d["name"],
        cluster_upload=cu,
        trace_upload=tu,
        team=_team(request, d["team"]),
        visibility=d["visibility"],
        forked_from=source,
    )
    body = dict(s.SearchSerializer(Search.objects.get(pk=search.pk), context={"request": request}).data)
    if getattr(search, "queued", True) is False:
        body["warning"] = queueing.QUEUE_DOWN
    return Response(body, status=status.HTTP_201_CREATED)


def _request_of(search: Search) -> dict[str, Any]:
    """A search as a creation request (uploads by id): the base of a fork."""
    sc = dict(search.scenario)
    for part, upload_id in (("cluster", search.cluster_upload_id), ("workload", search.trace_upload_id)):
        if "file" in sc[part]:
            sc[part] = {"upload": upload_id}
    return {
        "scenario": sc,
        "metric": search.metric,
        "population": search.population,
        "generations": search.max_generations,
        "seed": search.seed,
        "sim_seed": search.sim_seed,
    }


class SearchList(GenericAPIView):
    serializer_class = s.SearchSerializer

    @extend_schema(
        summary="Design-space searches you can see",
        parameters=[OpenApiParameter("status", str, enum=Status.values)],
        responses={200: s.SearchSerializer(many=True), **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        qs = visible_searches(request.user).select_related("owner", "team")
        st = request.query_params.get("status", "")
        if st:
            qs = qs.filter(status=st)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.SearchSerializer(page, many=True, context={"request": request}).data)

    @extend_schema(
        summary="Start a design-space search (the genetic search over staged schedulers)",
        request=s.SearchCreateSerializer,
        responses={201: s.SearchSerializer, **_errors(400, 401)},
    )
    def post(self, request: Request) -> Response:
        return _start(request, dict(request.data) if isinstance(request.data, dict) else {})


class SearchDetail(APIView):
    @extend_schema(summary="One search with its progress", responses={200: s.SearchSerializer, **_errors(401, 404)})
    def get(self, request: Request, pk: int) -> Response:
        search = get_search_for_user(request.user, pk)
        return Response(s.SearchSerializer(search, context={"request": request}).data)

    @extend_schema(
        summary="Rename, move to a team, change visibility (owner only)",
        request=ExperimentUpdateSerializer,
        responses={200: s.SearchSerializer, **_errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, pk: int) -> Response:
        search = get_search_for_user(request.user, pk, "share")
        ser = ExperimentUpdateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        if "name" in d:
            search.name = d["name"]
            search.save(update_fields=["name"])
        if "team" in d or "visibility" in d:
            team = _team(request, d["team"]) if "team" in d else search.team
            set_sharing(search, team=team, visibility=d.get("visibility", search.visibility))
        search.refresh_from_db()
        return Response(s.SearchSerializer(search, context={"request": request}).data)


class SearchCancel(APIView):
    @extend_schema(
        summary="Cancel a pending or running search",
        request=None,
        responses={200: s.SearchSerializer, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        search = get_search_for_user(request.user, pk, "cancel")
        cancel_search(search)
        search.refresh_from_db()
        return Response(s.SearchSerializer(search, context={"request": request}).data)


class SearchFork(APIView):
    @extend_schema(
        summary="Copy a search you can see into your space, optionally changed, and run it",
        request=s.SearchForkSerializer,
        responses={201: s.SearchSerializer, **_errors(400, 401, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        source = get_search_for_user(request.user, pk)
        ser = s.SearchForkSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        data = {
            **_request_of(source),
            **d["changes"],
            "name": d.get("name") or f"{source.title} (fork)"[:200],
            "team": d["team"],
            "visibility": d["visibility"],
        }
        return _start(request, data, source)


class SearchProgress(APIView):
    @extend_schema(
        summary="Status, generation and simulations of the current step",
        responses={200: s.SearchProgressSerializer, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(progress_payload(get_search_for_user(request.user, pk)))


class SearchGenerations(APIView):
    @extend_schema(
        summary="Every finished generation: individuals, fitness, elite, explanation; the elite per generation",
        responses={200: s.SearchResultsSerializer, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(search_downloads.search_body(get_search_for_user(request.user, pk)))


class SearchDownload(APIView):
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        summary="Download a search's generations (CSV, Parquet), elites (CSV) or everything (JSON)",
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(search_downloads.SEARCH_KINDS))],
        responses={(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return search_downloads.search_file(get_search_for_user(request.user, pk), kind)
