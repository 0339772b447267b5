"""API shapes of capacity plans; requests are checked here for types and ranges, then by the services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard.api.serializers import (
    WORK_HEAD_FIELDS,
    WORK_TAIL_FIELDS,
    PlaceSerializer,
    SharedRowSerializer,
    SharingSerializer,
    WorkForkSerializer,
    fork_changes,
)
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import progress_payload
from dashboard.common.names import validate_name
from dashboard.experiments.services import MAX_SEEDS
from simcore.core.limits import MAX_SEED
from simcore.planning.plan import MAX_CURVE_POINTS
from simcore.schedulers import SCHEDULERS


class PlanCreateSerializer(SharingSerializer):
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", validators=[validate_name]
    )
    #: Where the plan simulates: presets or your uploads (cluster, workload), load and window; the cluster is resized.
    #: A trace with no load is replayed as recorded.
    scenario = PlaceSerializer()
    schedulers = serializers.ListField(child=serializers.CharField(), min_length=1, max_length=64)
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_SEED), min_length=1, max_length=MAX_SEEDS, default=[0]
    )
    target = serializers.CharField(
        max_length=200, help_text="STATISTIC<=VALUE, e.g. 'p99_wait_s<=60', 'mean_wait_s<=0.1', 'unstarted_fraction<=0'"
    )
    resize = serializers.CharField(
        max_length=200, default="all", help_text="all (every configuration in proportion) or one configuration's name"
    )
    max_machines = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="largest size probed; null: four times the given cluster (at most SIMCORE_MAX_MACHINES)",
    )
    curve_points = serializers.IntegerField(min_value=0, max_value=MAX_CURVE_POINTS, default=0)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # Built per request so schedulers registered by plugins are offered too.
        fields["schedulers"] = serializers.ListField(
            child=serializers.ChoiceField(choices=SCHEDULERS.names()), min_length=1, max_length=len(SCHEDULERS.names())
        )
        return fields


#: What a fork may change: the creation request's keys except sharing (given beside ``changes``).
FORK_KEYS = ("scenario", "schedulers", "seeds", "target", "resize", "max_machines", "curve_points")


class PlanForkSerializer(WorkForkSerializer):
    fork_keys = FORK_KEYS
    changes = fork_changes(FORK_KEYS, "plan")


class PlanProgressSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    phase = serializers.CharField(help_text="bounds, search, curve or done")
    round = serializers.IntegerField(help_text="the bisection's round (0 while the bounds are computed)")
    probes_done = serializers.IntegerField()
    round_done = serializers.IntegerField()
    round_total = serializers.IntegerField()
    wanted = serializers.CharField(allow_blank=True, help_text="the sizes this round probes, with their schedulers")
    bounds = serializers.DictField(allow_null=True, help_text="given, floor, ceiling, compaction, lambda_star")
    answers = serializers.DictField(help_text="scheduler -> machines (null: not reachable), once finished")
    note = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    waiting = serializers.CharField(allow_blank=True)


class PlanSerializer(SharedRowSerializer):
    shared_route = "shared-capacity-detail"

    progress = serializers.SerializerMethodField()

    class Meta:
        model = CapacityPlan
        fields = [
            *WORK_HEAD_FIELDS,
            "cluster_label",
            "workload_label",
            "target",
            "spec",
            "note",
            *WORK_TAIL_FIELDS,
        ]
        read_only_fields = fields

    @extend_schema_field(PlanProgressSerializer)
    def get_progress(self, obj: CapacityPlan) -> dict[str, Any]:
        return progress_payload(obj)


class PlanResultsSerializer(serializers.Serializer):
    """The request, status and, once finished, the plan: one entry per scheduler under ``result.plans``."""

    plan = serializers.IntegerField()
    status = serializers.CharField()
    spec = serializers.DictField()
    bounds = serializers.DictField(allow_null=True)
    result = serializers.DictField(allow_null=True)
