"""API shapes of design-space searches; requests are checked here for types and ranges, then by the services."""

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
from dashboard.common.names import validate_name
from dashboard.searches.models import Search
from dashboard.searches.services import MAX_WEB_GENERATIONS, MAX_WEB_POPULATION, progress_payload
from simcore.core.limits import MAX_SEED
from simcore.dse.explore.fitness import METRIC_NAMES
from simcore.dse.explore.search import DEFAULT_GENERATIONS, DEFAULT_POPULATION


class SearchCreateSerializer(SharingSerializer):
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", validators=[validate_name]
    )
    #: Where a search simulates: the scenario's place (its schedulers are what the search looks for).
    scenario = PlaceSerializer()
    metric = serializers.ChoiceField(choices=list(METRIC_NAMES), default="trt", help_text="objective, minimised")
    population = serializers.IntegerField(min_value=2, max_value=MAX_WEB_POPULATION, default=DEFAULT_POPULATION)
    generations = serializers.IntegerField(
        min_value=1, max_value=MAX_WEB_GENERATIONS, default=DEFAULT_GENERATIONS, help_text="most generations"
    )
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0, help_text="seed of the search")
    sim_seed = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        allow_null=True,
        default=None,
        help_text="seed of the simulations; null: the search's seed",
    )


#: What a fork may change: the creation request's keys except sharing (given beside ``changes``).
FORK_KEYS = ("scenario", "metric", "population", "generations", "seed", "sim_seed")


class SearchForkSerializer(WorkForkSerializer):
    fork_keys = FORK_KEYS
    changes = fork_changes(FORK_KEYS, "search")


class SearchProgressSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    generation = serializers.IntegerField()
    generations_done = serializers.IntegerField()
    max_generations = serializers.IntegerField()
    phase = serializers.CharField()
    evaluations_done = serializers.IntegerField()
    evaluations_total = serializers.IntegerField()
    elite = serializers.CharField(allow_null=True)
    elite_fitness = serializers.FloatField(allow_null=True)
    metric = serializers.CharField()
    stop_reason = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    waiting = serializers.CharField(
        allow_blank=True,
        help_text="nothing of the current step running and its first evaluation pending for more than a few "
        "seconds: what is ahead of it in the queue; else empty",
    )


class SearchSerializer(SharedRowSerializer):
    shared_route = "shared-search-detail"

    progress = serializers.SerializerMethodField()

    class Meta:
        model = Search
        fields = [
            *WORK_HEAD_FIELDS,
            "cluster_label",
            "workload_label",
            "scenario",
            "cluster_upload",
            "trace_upload",
            "metric",
            "population",
            "max_generations",
            "seed",
            "sim_seed",
            "generations_done",
            "stop_reason",
            *WORK_TAIL_FIELDS,
        ]
        read_only_fields = fields

    @extend_schema_field(SearchProgressSerializer)
    def get_progress(self, obj: Search) -> dict[str, Any]:
        return progress_payload(obj)


class SearchResultsSerializer(serializers.Serializer):
    """Settings, scenario and every finished generation (individuals, fitness, elite, explanation)."""

    search = serializers.IntegerField()
    status = serializers.CharField()
    settings = serializers.DictField()
    scenario = serializers.DictField()
    generations = serializers.ListField(child=serializers.DictField())
    elites = serializers.ListField(child=serializers.DictField())
