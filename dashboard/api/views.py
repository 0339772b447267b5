"""API views: thin adapters over dashboard.common.access (permissions) and each feature's services (everything else).

Every experiment, run and download lookup goes through the same
:mod:`dashboard.common.access` helpers as the pages: 404 for what the caller cannot
see, 403 for what they can see but not change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from django.conf import settings
from django.db.models import Prefetch
from django.http import HttpResponseBase, JsonResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from dashboard.api import serializers as s
from dashboard.common import access, queueing
from dashboard.common.converters import row_id
from dashboard.common.models import Membership, Status, Team
from dashboard.common.sharing import new_share_link, revoke_share_link, set_sharing
from dashboard.experiments import downloads, sweep_views, sweeps
from dashboard.experiments.access import get_experiment_for_user, get_run_for_user, visible_experiments
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.results import progress_payload, runs_with_results
from dashboard.experiments.services import (
    SERVER_PATH_PARAMS,
    cancel_experiment,
    cancel_run,
    check_scenario,
    create_experiment,
    fork_uploads,
    reproduction_scenario,
)
from dashboard.experiments.sweep_results import payload, results
from dashboard.traces import imports
from dashboard.traces.access import get_upload_for_user, own_uploads
from dashboard.traces.mappings import own_mappings
from dashboard.traces.models import ClusterUpload, TraceUpload, Upload
from dashboard.traces.uploads import UPLOAD_KINDS, InputFile, create_upload, delete_upload, upload_specs
from simcore import reproductions
from simcore.catalog import catalog
from simcore.core.errors import SimcoreError
from simcore.sweep.grammar import Axis, parse_axes


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """simcore's validation errors are the client's mistake: 400 with the message naming what is wrong."""
    if isinstance(exc, SimcoreError):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)


class IgnoreAccept(BaseContentNegotiation):
    """Downloads answer with their own content type whatever the client's Accept header says."""

    def select_parser(self, request: Request, parsers: Iterable[Any]) -> Any:
        return next(iter(parsers), None)

    def select_renderer(self, request: Request, renderers: Iterable[Any], format_suffix: str | None = None) -> Any:
        first = next(iter(renderers))
        return first, first.media_type


ERRORS = {
    400: OpenApiResponse(description="invalid input; `detail` or per-field messages say what to fix"),
    401: OpenApiResponse(description="no or invalid token"),
    403: OpenApiResponse(description="you can see it but not change it"),
    404: OpenApiResponse(description="not found, or not visible to you"),
}


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {c: ERRORS[c] for c in codes}


def _experiments(request: Request) -> Any:
    return (
        visible_experiments(request.user)
        .select_related("owner", "team")
        .prefetch_related(Prefetch("runs", queryset=Run.objects.order_by("seed", "id")))
    )


# ---------------------------------------------------------------------------- scenarios from requests


def _api_scenario_of(experiment: Experiment) -> dict[str, Any]:
    """An experiment's scenario in the API's request shape (uploads by id, axes as ``vary``), the base of a fork."""
    sc = dict(experiment.scenario)
    for part, upload_id in (("cluster", experiment.cluster_upload_id), ("workload", experiment.trace_upload_id)):
        if "file" in sc[part]:
            sc[part] = {"upload": upload_id}
    axes = sc.pop("axes", None) or []
    sc["vary"] = [Axis(a["name"], tuple(a["values"])).text() for a in axes]
    return sc


def _scenario_from(
    request: Request, data: dict[str, Any], source: Experiment | None = None
) -> tuple[dict[str, Any], ClusterUpload | None, TraceUpload | None]:
    """The checked simcore scenario and its uploads; uploads must be the caller's or ``source``'s."""
    ser = s.ScenarioSerializer(data=data)
    ser.is_valid(raise_exception=True)
    sc = dict(ser.validated_data)
    vary = sc.pop("vary", None) or []
    allowed_c, allowed_t = fork_uploads(source) if source is not None else (None, None)
    picked: dict[str, Upload | None] = {"cluster": None, "workload": None}
    for part, model, allowed in (("cluster", ClusterUpload, allowed_c), ("workload", TraceUpload, allowed_t)):
        spec = dict(sc[part])
        if "upload" in spec:
            up = model.objects.filter(pk=spec["upload"], owner=access.signed_in(request)).defer("content_gz").first()
            if up is None and allowed is not None and allowed.pk == spec["upload"]:
                up = allowed
            if up is None:
                raise ValidationError({"scenario": {part: {"upload": [f"no {part} upload {spec['upload']} of yours"]}}})
            if isinstance(up, TraceUpload) and not up.is_ready:
                raise ValidationError(
                    {
                        "scenario": {
                            part: {
                                "upload": [
                                    f"trace upload {up.pk} is {up.status}; only a ready (imported) trace can be used"
                                ]
                            }
                        }
                    }
                )
            picked[part] = up
        else:
            sc[part] = {"preset": spec["preset"], "params": spec.get("params") or {}}
    cu, tu = picked["cluster"], picked["workload"]
    sc.update(upload_specs(cu, tu))  # type: ignore[arg-type]
    if vary:
        # The one grammar of simcore sweep --vary (simcore.sweep.grammar), checked against the chosen presets;
        # the grid's size first, from the axes' lengths, before any axis is expanded.
        axes = parse_axes(
            vary,
            sc["cluster"].get("preset") or "file",
            sc["workload"].get("preset") or "file",
            sc["schedulers"],
            seeds=len(sc["seeds"]),
            max_runs=settings.SIMCORE_MAX_RUNS,
        )
        sc["axes"] = [{"name": a.name, "values": list(a.values)} for a in axes]
    return check_scenario(sc), cu, tu  # type: ignore[return-value]


def _team(request: Request, team_id: int | None) -> Team | None:
    if team_id is None:
        return None
    team = access.teams_of(request.user).filter(pk=team_id).first()
    if team is None:
        raise ValidationError({"team": [f"you are not in team {team_id}"]})
    return team


# ---------------------------------------------------------------------------- experiments


class ExperimentList(GenericAPIView):
    serializer_class = s.ExperimentSerializer

    @extend_schema(
        summary="Experiments you can see",
        parameters=[
            OpenApiParameter("status", str, enum=Status.values),
            OpenApiParameter("team", int),
            OpenApiParameter("owner", str, description="'me' or a user name"),
        ],
        responses={200: s.ExperimentSerializer(many=True), **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        qs = _experiments(request)
        st, team, owner = (request.query_params.get(k, "") for k in ("status", "team", "owner"))
        if st:
            qs = qs.filter(status=st)
        if (team_id := row_id(team)) is not None:
            qs = qs.filter(team_id=team_id)
        if owner == "me":
            qs = qs.filter(owner=request.user)
        elif owner:
            qs = qs.filter(owner__username=owner)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.ExperimentSerializer(page, many=True, context={"request": request}).data)

    @extend_schema(
        summary="Start an experiment",
        request=s.ExperimentCreateSerializer,
        responses={201: s.ExperimentSerializer, **_errors(400, 401)},
    )
    def post(self, request: Request) -> Response:
        ser = s.ExperimentCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        # The raw scenario (the serializer checked its shape; simcore checks the rest).
        scenario, cu, tu = _scenario_from(request, cast(dict[str, Any], request.data)["scenario"])
        exp = create_experiment(
            access.signed_in(request),
            scenario,
            name=d["name"],
            cluster_upload=cu,
            trace_upload=tu,
            team=_team(request, d["team"]),
            visibility=d["visibility"],
            reuse=d["reuse_results"],
        )
        return _created(request, exp)


def _created(request: Request, exp: Experiment) -> Response:
    """201 with the new experiment; a ``warning`` when its runs could not be queued yet (broker down)."""
    body = dict(s.ExperimentSerializer(_experiments(request).get(pk=exp.pk), context={"request": request}).data)
    body["cached"] = getattr(exp, "cached", 0)
    if getattr(exp, "queued", True) is False:
        body["warning"] = queueing.QUEUE_DOWN
    return Response(body, status=status.HTTP_201_CREATED)


class ExperimentDetail(APIView):
    @extend_schema(summary="One experiment with its runs", responses={200: s.ExperimentSerializer, **_errors(401, 404)})
    def get(self, request: Request, pk: int) -> Response:
        get_experiment_for_user(request.user, pk)
        return Response(s.ExperimentSerializer(_experiments(request).get(pk=pk), context={"request": request}).data)

    @extend_schema(
        summary="Rename, move to a team, change visibility (owner only)",
        request=s.ExperimentUpdateSerializer,
        responses={200: s.ExperimentSerializer, **_errors(400, 401, 403, 404)},
    )
    def patch(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk, "share")
        ser = s.ExperimentUpdateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        if "name" in d:
            exp.name = d["name"]
            exp.save(update_fields=["name"])
        if "team" in d or "visibility" in d:
            team = _team(request, d["team"]) if "team" in d else exp.team
            set_sharing(exp, team=team, visibility=d.get("visibility", exp.visibility))
        return Response(s.ExperimentSerializer(_experiments(request).get(pk=pk), context={"request": request}).data)


class ExperimentCancel(APIView):
    @extend_schema(
        summary="Cancel the experiment's pending and running runs",
        request=None,
        responses={200: s.ExperimentSerializer, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        cancel_experiment(get_experiment_for_user(request.user, pk, "cancel"))
        return Response(s.ExperimentSerializer(_experiments(request).get(pk=pk), context={"request": request}).data)


class ExperimentFork(APIView):
    @extend_schema(
        summary="Copy an experiment you can see into your space, optionally changed, and run it",
        request=s.ForkSerializer,
        responses={201: s.ExperimentSerializer, **_errors(400, 401, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        source = get_experiment_for_user(request.user, pk)
        ser = s.ForkSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        scenario, cu, tu = _scenario_from(request, {**_api_scenario_of(source), **d["changes"]}, source)
        exp = create_experiment(
            access.signed_in(request),
            scenario,
            name=d.get("name") or f"{source.title} (fork)"[:200],
            cluster_upload=cu,
            trace_upload=tu,
            team=_team(request, d["team"]),
            visibility=d["visibility"],
            forked_from=source,
            reuse=d["reuse_results"],
        )
        return _created(request, exp)


class ExperimentShareLink(APIView):
    @extend_schema(
        summary="Make a new public read-only link (the previous one stops working)",
        request=None,
        responses={200: s.ShareLinkSerializer, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk, "share")
        token = new_share_link(exp)
        from django.urls import reverse

        return Response({"share_url": request.build_absolute_uri(reverse("shared-detail", args=[token]))})

    @extend_schema(summary="Revoke the public link", responses={204: None, **_errors(401, 403, 404)})
    def delete(self, request: Request, pk: int) -> Response:
        revoke_share_link(get_experiment_for_user(request.user, pk, "share"))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExperimentProgress(APIView):
    @extend_schema(
        summary="Status and progress of every run", responses={200: s.ProgressSerializer, **_errors(401, 404)}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(progress_payload(get_experiment_for_user(request.user, pk)))


class ExperimentSummary(APIView):
    @extend_schema(
        summary="Summaries, per-class means and offline plans of every run, and the scenario",
        responses={200: s.ResultsSerializer, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk)
        return Response(downloads.summary_body(runs_with_results(exp), exp.scenario))


class ExperimentSeries(APIView):
    @extend_schema(
        summary="Plotted series (CDF, per day, queue, utilisation) of the finished runs",
        responses={200: s.ResultsSerializer, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk)
        return Response(downloads.series_body(runs_with_results(exp)))


FILE_RESPONSE = OpenApiResponse(OpenApiTypes.BINARY, description="the file (CSV, Parquet, JSON or zip)")


class ExperimentDownload(APIView):
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        summary="Download results of the whole experiment",
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(downloads.EXPERIMENT_KINDS))],
        responses={(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return downloads.experiment_file(get_experiment_for_user(request.user, pk), kind)


# ---------------------------------------------------------------------------- sweeps


METRIC_PARAM = OpenApiParameter("metric", str, description="summary key to aggregate (default: mean_response_s)")


class ExperimentSweep(APIView):
    @extend_schema(
        summary="A sweep's grid progress (cells, cached, ETA), aggregates per point and scheduler (mean, 95% "
        "Student-t interval over seeds, min, max, unstable count) and, for a paper reproduction, the paper beside ours",
        parameters=[METRIC_PARAM],
        responses={200: OpenApiTypes.OBJECT, **_errors(400, 401, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk)
        return Response(payload(results(exp, request.query_params.get("metric") or None)))


class ExperimentSweepData(APIView):
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        operation_id="experiments_sweep_data_retrieve",
        summary="The data of a sweep's chart: metric.csv/.parquet (per point and scheduler) or stacked.csv/.parquet "
        "(mean wait and run, the profile study's Figures 12-13)",
        parameters=[
            OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(sweep_views.DATA_KINDS)),
            METRIC_PARAM,
        ],
        responses={(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return sweep_views.data_file(request, get_experiment_for_user(request.user, pk), kind)


class ExperimentExtend(APIView):
    @extend_schema(
        summary="Add seeds or axis values to an experiment; only the cells it does not have run (owner only)",
        request=s.ExtendSerializer,
        responses={200: OpenApiTypes.OBJECT, **_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        exp = get_experiment_for_user(request.user, pk, "change")
        ser = s.ExtendSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        done = sweeps.extend(exp, seeds=d["seeds"], vary=d["vary"], reuse=d["reuse_results"])
        return Response({**done, "experiment": pk})


class RunRetry(APIView):
    @extend_schema(
        summary="Run a failed or cancelled run (a sweep's cell) again, alone (owner only); returns the new run",
        request=None,
        responses={201: s.RunSerializer, **_errors(400, 401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        new = sweeps.retry(get_run_for_user(request.user, pk, "change"))
        return Response(s.RunSerializer(new).data, status=status.HTTP_201_CREATED)


def _reproduction_record(rep: reproductions.Reproduction) -> dict[str, Any]:
    return {
        "name": rep.name,
        "paper": rep.paper,
        "figure": rep.figure,
        "title": rep.title,
        "metric": rep.metric,
        "paper_summary": rep.summary,
        "figure_only": rep.figure_only,
        "scale": [
            {"name": p.name, "type": p.type.__name__, "default": p.default, "min": p.min, "max": p.max, "help": p.help}
            for p in rep.scale
        ],
        "command": rep.command(),
    }


class ReproductionList(APIView):
    @extend_schema(
        summary="The papers' figures that run in one click, with their scale knobs",
        responses={200: OpenApiTypes.OBJECT, **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        return Response([_reproduction_record(r) for r in reproductions.REPRODUCTIONS.values()])


class ReproductionStart(APIView):
    @extend_schema(
        summary="Run a paper's figure at the given scale: creates its sweep experiment",
        request=s.ReproductionStartSerializer,
        responses={201: s.ExperimentSerializer, **_errors(400, 401, 404)},
    )
    def post(self, request: Request, name: str) -> Response:
        if name not in reproductions.REPRODUCTIONS:
            raise NotFound(f"no reproduction {name!r}; valid: {', '.join(reproductions.REPRODUCTIONS)}")
        rep = reproductions.REPRODUCTIONS[name]
        ser = s.ReproductionStartSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        scale = rep.scale_values(d["scale"])
        scenario = reproduction_scenario(rep, scale, d["job_records"])
        exp = create_experiment(
            access.signed_in(request),
            scenario,
            name=d["name"] or f"{rep.figure} reproduction",
            reproduction={"name": rep.name, "scale": scale},
            reuse=True,
        )
        return _created(request, exp)


# ---------------------------------------------------------------------------- runs


class RunDetail(APIView):
    @extend_schema(summary="One run's status and progress", responses={200: s.RunSerializer, **_errors(401, 404)})
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.RunSerializer(get_run_for_user(request.user, pk)).data)


class RunCancel(APIView):
    @extend_schema(
        summary="Cancel one pending or running run",
        request=None,
        responses={200: s.RunSerializer, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        run = get_run_for_user(request.user, pk, "cancel")
        cancel_run(run)
        run.refresh_from_db()
        return Response(s.RunSerializer(run).data)


class RunDownload(APIView):
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        summary="Download one run's results",
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(downloads.RUN_KINDS))],
        responses={(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return downloads.run_file(get_run_for_user(request.user, pk), kind)


# ---------------------------------------------------------------------------- uploads

KIND_PARAM = OpenApiParameter("kind", str, OpenApiParameter.PATH, enum=list(UPLOAD_KINDS))


#: Upload options that apply to traces only (dashboard.traces.imports.check_import_options).
TRACE_OPTIONS = (
    "format",
    "on_error",
    "unfinished",
    "running_at_start",
    "start_s",
    "end_s",
    "cluster",
    "classes",
    "class_window_hours",
    "class_seed",
    "class_duration",
    "map",
    "where",
)


def _upload_error(e: SimcoreError) -> ValidationError:
    """A services error as a 400 on the field it names (an option), else on ``file``."""
    msg = str(e)
    field = next((k for k in TRACE_OPTIONS if msg.startswith(k)), "file")
    return ValidationError({field: [msg]})


class UploadList(GenericAPIView):
    serializer_class = s.UploadSerializer
    parser_classes = [MultiPartParser]

    @extend_schema(
        summary="Your uploaded clusters or traces",
        parameters=[KIND_PARAM],
        responses={200: s.UploadSerializer(many=True), **_errors(401, 404)},
    )
    def get(self, request: Request, kind: str) -> Response:
        qs = own_uploads(request.user, kind)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.UploadSerializer(page, many=True).data)

    @extend_schema(
        summary="Upload a cluster file, or a trace to import in the background",
        description="A cluster file (one `file`) is read at once. A trace (the project's CSV, SWF, or Google 2011 "
        "`task_events` parts with optional `job_events` and `machine_events`; plain or gzipped) is "
        "checked for size and type, stored with status `pending`, and imported by a worker: poll "
        "`GET /api/uploads/trace/{id}/` for `status`, `trace_import.fraction` and `trace_import.error` "
        "(file, line and field of the first bad row, unless `on_error=skip`, which counts skipped rows "
        "in `trace_import.report`). Only `ready` traces can be used in experiments.",
        parameters=[KIND_PARAM],
        request={"multipart/form-data": s.UploadCreateSerializer},
        responses={201: s.UploadSerializer, **_errors(400, 401, 404)},
    )
    def post(self, request: Request, kind: str) -> Response:
        own_uploads(request.user, kind)  # 404 for an unknown kind
        ser = s.UploadCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        try:
            if kind == "trace":
                fmt = d.get("format") or "csv"
                main = "task_events" if fmt == "google2011" else "trace"
                files = [InputFile(main, f.name or "", f.read()) for f in d["file"]]
                files += [InputFile("job_events", f.name or "", f.read()) for f in d.get("job_events", [])]
                if d.get("machine_events") is not None:
                    me = d["machine_events"]
                    files.append(InputFile("machine_events", me.name or "", me.read()))
                options = {k: d[k] for k in TRACE_OPTIONS if k in d}
                if d.get("mapping") is not None:
                    if "map" in d or "where" in d:
                        raise ValidationError({"mapping": ["give a saved mapping or map/where, not both"]})
                    saved = own_mappings(request.user).filter(pk=d["mapping"]).first()
                    if saved is None:
                        raise ValidationError({"mapping": [f"no saved mapping {d['mapping']} of yours"]})
                    options.update({"map": saved.column_map, "where": saved.where or None})
                up = create_upload(kind, access.signed_in(request), d["name"], files=files, options=options)
            else:
                extra = [
                    k
                    for k in (*TRACE_OPTIONS, "job_events", "machine_events", "mapping")
                    if d.get(k) not in (None, False, [])
                ]
                if len(d["file"]) != 1 or extra:
                    got = ", ".join([f"{len(d['file'])} files", *extra])
                    raise ValidationError(
                        {"file": [f"a cluster upload is one file and takes no trace options (got {got})"]}
                    )
                f = d["file"][0]
                up = create_upload(kind, access.signed_in(request), d["name"], f.name or "", f.read())
        except SimcoreError as e:
            raise _upload_error(e) from None
        body = dict(s.UploadSerializer(up).data)
        if getattr(up, "queued", True) is False:
            body["warning"] = queueing.QUEUE_DOWN
        return Response(body, status=status.HTTP_201_CREATED)


class UploadDetail(APIView):
    @extend_schema(
        summary="One of your uploads (a trace: with its import status, progress, error and report)",
        parameters=[KIND_PARAM],
        responses={200: s.UploadSerializer, **_errors(401, 404)},
    )
    def get(self, request: Request, kind: str, pk: int) -> Response:
        return Response(s.UploadSerializer(get_upload_for_user(request.user, kind, pk)).data)

    @extend_schema(
        summary="Delete one of your uploads (refused while an experiment uses it; stops an import)",
        parameters=[KIND_PARAM],
        responses={204: None, **_errors(400, 401, 404)},
    )
    def delete(self, request: Request, kind: str, pk: int) -> Response:
        delete_upload(get_upload_for_user(request.user, kind, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class UploadCancel(APIView):
    @extend_schema(
        summary="Cancel a pending or running trace import",
        request=None,
        responses={200: s.UploadSerializer, **_errors(401, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        up = get_upload_for_user(request.user, "trace", pk)
        imports.cancel_import(up)
        up.refresh_from_db()
        return Response(s.UploadSerializer(up).data)


# ---------------------------------------------------------------------------- teams, catalogue, me


def _teams(request: Request) -> Any:
    return access.teams_of(request.user).prefetch_related(
        Prefetch("memberships", queryset=Membership.objects.select_related("user").order_by("user__username"))
    )


class TeamList(APIView):
    @extend_schema(
        summary="Your teams, your role and their members", responses={200: s.TeamSerializer(many=True), **_errors(401)}
    )
    def get(self, request: Request) -> Response:
        return Response(s.TeamSerializer(_teams(request), many=True, context={"request": request}).data)


class TeamDetail(APIView):
    @extend_schema(summary="One of your teams", responses={200: s.TeamSerializer, **_errors(401, 404)})
    def get(self, request: Request, pk: int) -> Response:
        access.get_team_for_user(request.user, pk)
        return Response(s.TeamSerializer(_teams(request).get(pk=pk), context={"request": request}).data)


class Catalog(APIView):
    @extend_schema(
        summary="Registered cluster and workload presets and schedulers, with their parameters",
        responses={200: OpenApiTypes.OBJECT, **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        return Response(catalog(exclude_params=SERVER_PATH_PARAMS))


class Me(APIView):
    @extend_schema(summary="Who the token belongs to, and their teams", responses={200: s.MeSerializer, **_errors(401)})
    def get(self, request: Request) -> Response:
        return Response(
            {
                "username": request.user.get_username(),
                "teams": s.TeamSerializer(_teams(request), many=True, context={"request": request}).data,
            }
        )


class ApiRoot(APIView):
    """Where the API starts: links to its schema, its documentation page and its main collections."""

    permission_classes: list[Any] = []
    authentication_classes: list[Any] = []

    @extend_schema(
        summary="The API's root: links to the schema, the documentation page and the collections",
        responses={200: s.ApiRootSerializer},
    )
    def get(self, request: Request) -> Response:
        def url(name: str) -> str:
            return request.build_absolute_uri(reverse(name))

        return Response(
            {
                "schema": url("api-schema"),
                "docs": url("api-docs"),
                "authentication": "Authorization: Bearer <token>; create tokens on your account page " + url("account"),
                "endpoints": {
                    "me": url("api-me"),
                    "catalog": url("api-catalog"),
                    "experiments": url("api-experiment-list"),
                    "teams": url("api-team-list"),
                    "cluster uploads": request.build_absolute_uri(reverse("api-upload-list", args=["cluster"])),
                    "trace uploads": request.build_absolute_uri(reverse("api-upload-list", args=["trace"])),
                    "trace mappings": request.build_absolute_uri(reverse("api-mapping-list")),
                    "packing analyses": url("api-packing-list"),
                    "searches": url("api-search-list"),
                    "reproductions": url("api-reproduction-list"),
                    # Runs are listed in their experiment; one is read by id (a template, not a link).
                    "run": request.build_absolute_uri(reverse("api-run-detail", args=[0])).replace("/0/", "/{id}/"),
                },
            }
        )


class ApiDocs(SpectacularSwaggerSplitView):
    """The browsable documentation page (Swagger UI from static/); like every API address, it answers a
    method it does not take with a JSON error."""

    permission_classes: list[Any] = []
    authentication_classes: list[Any] = []

    # A plain JsonResponse: DRF would render its own 405 with this view's only renderer, the HTML template.
    def http_method_not_allowed(  # type: ignore[override]
        self, request: Any, *args: Any, **kwargs: Any
    ) -> JsonResponse:
        return JsonResponse({"detail": f"method {request.method} is not allowed here; use GET"}, status=405)
