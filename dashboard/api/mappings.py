"""API of saved column maps (issue 17): list, create (or replace by name), read, delete; private to the owner.

A trace upload uses one with ``mapping=<id>`` (or gives ``map``/``where`` as text): see the upload endpoint.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard.api.serializers import StrictSerializer
from dashboard.api.views import _errors
from dashboard.common import access
from dashboard.common.names import validate_name
from dashboard.traces import mappings
from dashboard.traces.models import TraceMapping
from simcore.core.errors import SimcoreError


class MappingSerializer(serializers.ModelSerializer):
    map = serializers.CharField(source="column_map", help_text="simcore.traces.colmap map text (simcore import --map)")

    class Meta:
        model = TraceMapping
        fields = ["id", "name", "map", "where", "created"]
        read_only_fields = fields


class MappingCreateSerializer(StrictSerializer):
    name = serializers.CharField(
        max_length=100, help_text="a map of the same name is replaced", validators=[validate_name]
    )
    map = serializers.CharField(
        max_length=2000,
        help_text="e.g. submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100; "
        "count=number_of_instances makes each row that many identical jobs, submit_s=task_create_time+1078 "
        "adds a constant",
    )
    where = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, default="", help_text="e.g. status=Terminated"
    )


class MappingList(GenericAPIView):
    serializer_class = MappingSerializer

    @extend_schema(summary="Your saved column maps", responses={200: MappingSerializer(many=True), **_errors(401)})
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(mappings.own_mappings(request.user))
        return self.get_paginated_response(MappingSerializer(page, many=True).data)

    @extend_schema(
        summary="Save a column map (checked: a bad map is a 400 naming the item)",
        request=MappingCreateSerializer,
        responses={201: MappingSerializer, **_errors(400, 401)},
    )
    def post(self, request: Request) -> Response:
        ser = MappingCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d: dict[str, Any] = dict(ser.validated_data)
        try:
            m = mappings.save_mapping(access.signed_in(request), d["name"], d["map"], d["where"])
        except SimcoreError as e:
            msg = str(e)
            raise ValidationError(
                {msg.split(":", 1)[0] if msg.startswith(("map", "where")) else "name": [msg]}
            ) from None
        return Response(MappingSerializer(m).data, status=status.HTTP_201_CREATED)


class MappingDetail(APIView):
    @extend_schema(summary="One of your saved column maps", responses={200: MappingSerializer, **_errors(401, 404)})
    def get(self, request: Request, pk: int) -> Response:
        return Response(MappingSerializer(mappings.get_mapping_for_user(request.user, pk)).data)

    @extend_schema(summary="Delete one of your saved column maps", responses={204: None, **_errors(401, 404)})
    def delete(self, request: Request, pk: int) -> Response:
        mappings.get_mapping_for_user(request.user, pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
