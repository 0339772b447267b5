"""API for packing analyses: list, start, read (with results), cancel, download.

The same lookups (:mod:`dashboard.common.access`) and checks
(:func:`dashboard.packing.services.create_analysis`) as the pages: 404 for
what the caller cannot see, 403 for what they can see but not change, 400
naming the field for bad input.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard.api.serializers import SharedRowSerializer, StrictSerializer
from dashboard.api.views import FILE_RESPONSE, IgnoreAccept, _errors, _scenario_from, _team
from dashboard.common import access, queueing
from dashboard.common.models import Status, Visibility
from dashboard.common.names import validate_name
from dashboard.experiments.access import visible_runs
from dashboard.packing import downloads as packing_downloads
from dashboard.packing import services as svc
from dashboard.packing.access import get_analysis_for_user, visible_analyses
from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.traces.models import ClusterUpload
from dashboard.traces.uploads import usable_traces
from simcore.core.errors import SimcoreError


class PackingSerializer(SharedRowSerializer):
    shared_route = "packing-shared-detail"

    class Meta:
        model = PackingAnalysis
        fields = [
            "id",
            "name",
            "owner",
            "team",
            "visibility",
            "share_url",
            "page_url",
            "status",
            "fraction",
            "stage",
            "error",
            "source",
            "source_spec",
            "label",
            "time_s",
            "spec",
            "created",
            "started_at",
            "finished_at",
            "code_version",
        ]
        read_only_fields = fields


class PackingDetailSerializer(PackingSerializer):
    results = serializers.JSONField(read_only=True, help_text="simcore.packing.analysis output; null until finished")
    downloads = serializers.SerializerMethodField(help_text="URLs of results.json and every series as CSV and Parquet")

    class Meta(PackingSerializer.Meta):
        fields = [*PackingSerializer.Meta.fields, "results", "downloads"]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.URLField()))
    def get_downloads(self, obj: PackingAnalysis) -> list[str]:
        return [self._absolute(reverse("api-packing-download", args=[obj.pk, k])) for k in packing_downloads.kinds(obj)]


class PackingCreateSerializer(StrictSerializer):
    name = serializers.CharField(
        max_length=200, required=False, default="", allow_blank=True, validators=[validate_name]
    )
    source = serializers.DictField(  # type: ignore[assignment]  # a field named like Field.source
        help_text='{"run": id}, {"trace": id, "cluster": "derived" | preset name | {"upload": id}, '
        '"min_priority": optional integer (9: production work)}, '
        'or {"scenario": a scenario with one scheduler and one seed and a preset workload}'
    )
    time_s = serializers.FloatField(min_value=0, help_text="snapshot time (s) in the run, trace window or simulation")
    spec = serializers.DictField(
        required=False,
        default=dict,
        help_text="techniques, placed_by, repack_with, orderings, schedulers, units, factors, taus, trials, seed",
    )
    team = serializers.IntegerField(required=False, allow_null=True, default=None)
    visibility = serializers.ChoiceField(choices=Visibility.values, default=Visibility.PRIVATE)


def _bad(where: str, message: str) -> ValidationError:
    return ValidationError({"source": {where: [message]}})


def _source(request: Request, src: dict[str, Any]) -> svc.SourceChoice:
    user = access.signed_in(request)
    keys = set(src) - {"cluster", "min_priority"}
    if len(keys) != 1 or keys - {"run", "trace", "scenario"}:
        raise ValidationError({"source": ["give exactly one of 'run', 'trace' or 'scenario'"]})
    if "run" in src:
        rid = src["run"]
        run = visible_runs(user).filter(pk=rid).first() if isinstance(rid, int) else None
        if run is None:
            raise _bad("run", f"no run {rid!r} you can see")
        return svc.SourceChoice(PackingSource.RUN, run=run)
    if "trace" in src:
        tid = src["trace"]
        trace = usable_traces(user).filter(pk=tid).first() if isinstance(tid, int) else None
        if trace is None:
            raise _bad("trace", f"no imported trace {tid!r} of yours")
        try:
            mp = svc.check_min_priority(src.get("min_priority"))
        except SimcoreError as e:
            raise _bad("min_priority", str(e)) from None
        cl = src.get("cluster", svc.DERIVED)
        if isinstance(cl, dict):
            uid = cl.get("upload")
            up = (
                ClusterUpload.objects.filter(pk=uid, owner=user).defer("content_gz").first()
                if isinstance(uid, int)
                else None
            )
            if up is None or set(cl) != {"upload"}:
                raise _bad("cluster", 'give {"upload": id} of one of your cluster uploads')
            return svc.SourceChoice(PackingSource.TRACE, trace=trace, cluster_upload=up, min_priority=mp)
        if not isinstance(cl, str):
            raise _bad("cluster", '"derived", a cluster preset name, or {"upload": id}')
        return svc.SourceChoice(PackingSource.TRACE, trace=trace, cluster_preset=cl, min_priority=mp)
    if not isinstance(src["scenario"], dict):
        raise _bad("scenario", "must be an object")
    scenario, cu, tu = _scenario_from(request, src["scenario"])
    if tu is not None:
        raise _bad("scenario", "the workload must be a preset; analyse an imported trace with source 'trace'")
    return svc.SourceChoice(PackingSource.SCENARIO, scenario=scenario, cluster_upload=cu)


class PackingList(GenericAPIView):
    serializer_class = PackingSerializer

    @extend_schema(
        summary="Packing analyses you can see",
        parameters=[OpenApiParameter("status", str, enum=Status.values)],
        responses={200: PackingSerializer(many=True), **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        qs = visible_analyses(request.user).select_related("owner").defer("results")
        st = request.query_params.get("status", "")
        if st:
            qs = qs.filter(status=st)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(PackingSerializer(page, many=True, context={"request": request}).data)

    @extend_schema(
        summary="Start a packing analysis",
        request=PackingCreateSerializer,
        responses={201: PackingDetailSerializer, **_errors(400, 401)},
    )
    def post(self, request: Request) -> Response:
        ser = PackingCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        a = svc.create_analysis(
            access.signed_in(request),
            _source(request, d["source"]),
            time_s=d["time_s"],
            spec=d["spec"],
            name=d["name"],
            team=_team(request, d["team"]),
            visibility=d["visibility"],
        )
        body = dict(PackingDetailSerializer(a, context={"request": request}).data)
        if getattr(a, "queued", True) is False:
            body["warning"] = queueing.QUEUE_DOWN
        return Response(body, status=status.HTTP_201_CREATED)


class PackingDetail(APIView):
    @extend_schema(
        summary="One packing analysis with its results", responses={200: PackingDetailSerializer, **_errors(401, 404)}
    )
    def get(self, request: Request, pk: int) -> Response:
        a = get_analysis_for_user(request.user, pk)
        return Response(PackingDetailSerializer(a, context={"request": request}).data)


class PackingCancel(APIView):
    @extend_schema(
        summary="Cancel a pending or running analysis",
        request=None,
        responses={200: PackingSerializer, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        a = get_analysis_for_user(request.user, pk, "cancel")
        svc.cancel_analysis(a)
        return Response(PackingSerializer(a, context={"request": request}).data)


class PackingDownload(APIView):
    content_negotiation_class = IgnoreAccept

    @extend_schema(
        summary="Download the results (results.json) or one series table (<series>.csv, <series>.parquet)",
        parameters=[OpenApiParameter("kind", str, OpenApiParameter.PATH)],
        responses={(200, "application/octet-stream"): FILE_RESPONSE, **_errors(401, 404)},
    )
    def get(self, request: Request, pk: int, kind: str) -> HttpResponseBase:
        return packing_downloads.analysis_file(get_analysis_for_user(request.user, pk), kind)
