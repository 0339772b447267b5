"""API views of design-space searches: thin adapters over dashboard.common.access and dashboard.searches.services."""

from __future__ import annotations

from typing import Any, cast

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard.api import owned
from dashboard.api import search_serializers as s
from dashboard.api.serializers import PlaceSerializer
from dashboard.api.views import _team
from dashboard.common import access
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
    return owned.created(request, s.SearchSerializer, search)


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


ROOM = owned.Room(
    serializer=s.SearchSerializer,
    create_serializer=s.SearchCreateSerializer,
    fork_serializer=s.SearchForkSerializer,
    progress_serializer=s.SearchProgressSerializer,
    results_serializer=s.SearchResultsSerializer,
    visible=visible_searches,
    get=get_search_for_user,
    start=_start,
    request_of=_request_of,
    cancel=cancel_search,
    progress=progress_payload,
    results=search_downloads.search_body,
    download=search_downloads.search_file,
    download_kinds=tuple(search_downloads.SEARCH_KINDS),
)


class SearchList(owned.List):
    room = ROOM
    summaries = {
        "get": "Design-space searches you can see",
        "post": "Start a design-space search (the genetic search over staged schedulers)",
    }


class SearchDetail(owned.Detail):
    room = ROOM
    summaries = {"get": "One search with its progress", "patch": owned.PATCH_SUMMARY}


class SearchCancel(owned.Cancel):
    room = ROOM
    summaries = {"post": "Cancel a pending or running search"}


class SearchFork(owned.Fork):
    room = ROOM
    summaries = {"post": "Copy a search you can see into your space, optionally changed, and run it"}


class SearchProgress(owned.Progress):
    room = ROOM
    summaries = {"get": "Status, generation and simulations of the current step"}


class SearchGenerations(owned.Results):
    room = ROOM
    summaries = {"get": "Every finished generation: individuals, fitness, elite, explanation; the elite per generation"}


class SearchDownload(owned.Download):
    room = ROOM
    summaries = {"get": "Download a search's generations (CSV, Parquet), elites (CSV) or everything (JSON)"}
