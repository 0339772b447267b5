"""API request and response shapes. Requests are checked here for types and ranges, then by
each feature's services (simcore's own checks), exactly as the pages' forms are."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from dashboard.accounts.models import ApiToken
from dashboard.common.models import Membership, Role, Status, Team, Visibility
from dashboard.common.names import validate_name
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.services import MAX_HOURS, MAX_LOAD, MAX_SEED, MAX_SEEDS
from dashboard.traces.imports import MAX_CLASSES, format_choices
from dashboard.traces.imports import MAX_FILES as MAX_IMPORT_FILES
from dashboard.traces.models import ClusterUpload, ImportStatus, TraceUpload
from dashboard.traces.uploads import check_upload_size
from simcore import records
from simcore.core.errors import SimcoreError
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS


class StoredDateTimeField(serializers.DateTimeField):
    """A time stored as ISO text in a JSON column, written out as every other time of the API is."""

    def to_representation(self, value: Any) -> Any:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return super().to_representation(value)


class LostAttemptSerializer(serializers.Serializer):
    """One attempt of a run or trace import lost with its worker (dashboard.common.recovery), then run again."""

    attempt = serializers.IntegerField(help_text="1 for the first claim by a worker, 2 for the second...")
    worker = serializers.CharField(allow_blank=True, help_text="the Celery worker that held it")
    started_at = StoredDateTimeField(allow_null=True)
    last_heard_at = StoredDateTimeField(allow_null=True, help_text="its worker's last heartbeat")
    noticed_at = StoredDateTimeField(help_text="when the periodic repair found it lost")


#: Read-only attempt fields of runs and trace imports.
ATTEMPT_HELP = "how many times a worker has taken it (at most SIMCORE_RUN_MAX_ATTEMPTS)"


class RunSerializer(serializers.ModelSerializer):
    attempt = serializers.IntegerField(read_only=True, help_text=ATTEMPT_HELP)
    lost_attempts = LostAttemptSerializer(many=True, read_only=True)
    records = serializers.JSONField(
        read_only=True,
        help_text="which per-job records the run kept: policy, kept (all, sample or none), jobs_kept, of, "
        "sample_seed; null for runs stored before the choice (all kept)",
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "scheduler",
            "seed",
            "point",
            "cached_from",
            "status",
            "fraction",
            "jobs_done",
            "jobs_total",
            "eta_s",
            "started_at",
            "finished_at",
            "error",
            "code_version",
            "attempt",
            "lost_attempts",
            "records",
        ]
        read_only_fields = fields


class SharedRowSerializer(serializers.ModelSerializer):
    """What every shareable row shows (experiments, searches, packing analyses): owner, team, its page, its link.

    ``shared_route`` names the row's public read-only page.
    """

    shared_route = ""

    owner = serializers.CharField(source="owner.username", read_only=True)
    team = serializers.IntegerField(source="team_id", read_only=True, allow_null=True)
    share_url = serializers.SerializerMethodField(help_text="the public read-only link (owner only; null otherwise)")
    page_url = serializers.SerializerMethodField()

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(OpenApiTypes.URI)
    def get_share_url(self, obj: Any) -> str | None:
        request = self.context.get("request")
        if obj.share_token and request is not None and obj.owner_id == request.user.pk:
            return self._absolute(reverse(self.shared_route, args=[obj.share_token]))
        return None

    @extend_schema_field(OpenApiTypes.URI)
    def get_page_url(self, obj: Any) -> str:
        return self._absolute(obj.get_absolute_url())


class ExperimentSerializer(SharedRowSerializer):
    shared_route = "shared-detail"

    runs = RunSerializer(many=True, read_only=True)
    status_text = serializers.SerializerMethodField(
        help_text="the status as the pages say it: 'finished, 1 of 36 cells cancelled' when some runs were "
        "cancelled and the rest finished; else the status"
    )

    def get_status_text(self, obj: Experiment) -> str:
        runs = list(obj.runs.all())  # prefetched with the experiment
        return obj.status_text(sum(1 for r in runs if r.status == Status.CANCELLED), len(runs))

    class Meta:
        model = Experiment
        fields = [
            "id",
            "name",
            "owner",
            "team",
            "visibility",
            "share_url",
            "page_url",
            "status",
            "status_text",
            "created",
            "cluster_label",
            "workload_label",
            "scenario",
            "cluster_upload",
            "trace_upload",
            "forked_from",
            "runs",
        ]
        read_only_fields = fields


class StrictSerializer(serializers.Serializer):
    """Refuses keys it does not know, naming the first, instead of dropping them silently."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {unknown[0]: [f"unknown key; valid keys: {', '.join(sorted(self.fields))}"]}
                )
        return super().to_internal_value(data)


def _source_fields(names: list[str]) -> dict[str, serializers.Field]:
    return {
        "preset": serializers.ChoiceField(choices=names, required=False, help_text="a registered preset"),
        "params": serializers.DictField(required=False, default=dict, help_text="the preset's parameters"),
        "upload": serializers.IntegerField(
            required=False, min_value=1, help_text="id of your upload (or of the forked experiment's upload)"
        ),
    }


class _SourceSerializer(StrictSerializer):
    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("preset" in attrs) == ("upload" in attrs):
            raise serializers.ValidationError("give either 'preset' (with optional 'params') or 'upload'")
        return attrs


class ClusterSourceSerializer(_SourceSerializer):
    """A cluster: ``{"preset": name, "params": {...}}`` or ``{"upload": id}``."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return _source_fields(CLUSTERS.names())


class WorkloadSourceSerializer(_SourceSerializer):
    """A workload: ``{"preset": name, "params": {...}}`` or ``{"upload": trace id}``."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return _source_fields(WORKLOADS.names())


class PlaceSerializer(StrictSerializer):
    """Where work simulates: a cluster and a workload (presets or your uploads), load and window."""

    cluster = ClusterSourceSerializer()
    workload = WorkloadSourceSerializer()
    load = serializers.FloatField(
        min_value=0.01,
        max_value=MAX_LOAD,
        default=0.9,
        help_text="arrival rate as a fraction of the allocation-LP bound lambda* (generated workloads)",
    )
    hours = serializers.FloatField(
        min_value=0.01,
        max_value=MAX_HOURS,
        required=False,
        allow_null=True,
        default=None,
        help_text="arrival window (h); null: the preset's default, a trace's whole length",
    )


def job_records_field() -> serializers.CharField:
    """The per-job records choice of every request that starts runs (an experiment, a sweep, a reproduction)."""
    return serializers.CharField(
        required=False,
        default=records.DEFAULT,
        max_length=40,
        help_text=f"which jobs' records each run keeps: auto (all up to {records.AUTO_ALL_UP_TO:,} jobs, a seeded "
        f"sample of {records.AUTO_SAMPLE:,} above), all, none, or sample:N; summaries and series always use "
        "every job",
    )


def validate_job_records(value: str) -> str:
    try:
        return records.parse_policy(value, "job_records")
    except SimcoreError as e:
        raise serializers.ValidationError(str(e)) from None


class ScenarioSerializer(PlaceSerializer):
    drain = serializers.BooleanField(default=False)
    schedulers = serializers.ListField(child=serializers.CharField(), min_length=1, max_length=64)
    scheduler_params = serializers.DictField(child=serializers.DictField(), required=False, default=dict)
    seeds = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_SEED),
        min_length=1,
        max_length=MAX_SEEDS,
        default=[0],
    )
    vary = serializers.ListField(
        child=serializers.CharField(max_length=2000),
        required=False,
        default=list,
        max_length=8,
        help_text="a sweep: one axis per item in the grammar of `simcore sweep --vary` (NAME=V1,V2, or a range "
        "START:STOP:STEP or START:STOP:xFACTOR; NAME is load, hours, cluster, workload or a parameter of the "
        "presets and schedulers). Every value x scheduler x seed is one run",
    )
    job_records = job_records_field()

    def validate_job_records(self, value: str) -> str:
        return validate_job_records(value)

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        # Built per request so schedulers registered by plugins are offered too.
        fields["schedulers"] = serializers.ListField(
            child=serializers.ChoiceField(choices=SCHEDULERS.names()), min_length=1, max_length=len(SCHEDULERS.names())
        )
        return fields


class SharingSerializer(StrictSerializer):
    """The sharing part of a request that creates work (an experiment, a fork, a search)."""

    team = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, help_text="a team you are an owner or member of"
    )
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.PRIVATE)


def check_keys(value: dict[str, Any], valid: Any, what: str) -> dict[str, Any]:
    """``value`` if all its keys are in ``valid``; else a validation error naming the first unknown one."""
    unknown = sorted(set(value) - set(valid))
    if unknown:
        shown = valid if isinstance(valid, (list, tuple)) else sorted(valid)
        raise serializers.ValidationError(f"unknown {what}{unknown[0]!r}; valid keys: {', '.join(shown)}")
    return value


class ExperimentCreateSerializer(SharingSerializer):
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", validators=[validate_name]
    )
    scenario = ScenarioSerializer()
    reuse_results = serializers.BooleanField(
        default=True, help_text="cells equal to a stored run you can see (same code version) reuse its result"
    )


class ExtendSerializer(StrictSerializer):
    seeds = serializers.CharField(required=False, allow_blank=True, default="", help_text="more seeds, e.g. '5-9'")
    vary = serializers.ListField(
        child=serializers.CharField(max_length=2000),
        required=False,
        default=list,
        max_length=8,
        help_text="more values of axes the sweep has, in the --vary grammar (e.g. 'phi=0.018,0.021')",
    )
    reuse_results = serializers.BooleanField(default=True)


class ReproductionStartSerializer(StrictSerializer):
    scale = serializers.DictField(
        required=False, default=dict, help_text="the reproduction's scale knobs (see GET /api/reproductions/)"
    )
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", validators=[validate_name]
    )
    job_records = job_records_field()

    def validate_job_records(self, value: str) -> str:
        return validate_job_records(value)


class ExperimentUpdateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, validators=[validate_name])
    team = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)


# A fork of owned background work (a search, a capacity plan): a name, the sharing, and ``changes``, the keys
# of a new request to replace. A subclass names ``fork_keys`` and declares ``changes = fork_changes(...)``.
# No docstring: the OpenAPI description of a fork request stays SharingSerializer's.
class WorkForkSerializer(SharingSerializer):
    fork_keys: ClassVar[tuple[str, ...]] = ()

    name = serializers.CharField(max_length=200, required=False, allow_blank=True, validators=[validate_name])

    def validate_changes(self, value: dict[str, Any]) -> dict[str, Any]:
        return check_keys(value, self.fork_keys, "key ")


def fork_changes(keys: tuple[str, ...], what: str) -> serializers.DictField:
    """The ``changes`` of a fork request that may replace ``keys`` of a new ``what``."""
    return serializers.DictField(
        required=False, default=dict, help_text=f"keys to replace: {', '.join(keys)} (as in a new {what})"
    )


#: The first and last fields of a search's or a capacity plan's row (SharedRowSerializer's, its state and times).
WORK_HEAD_FIELDS = [
    "id",
    "name",
    "owner",
    "team",
    "visibility",
    "share_url",
    "page_url",
    "status",
    "created",
    "started_at",
    "finished_at",
]
WORK_TAIL_FIELDS = ["error", "code_version", "forked_from", "progress"]


class ForkSerializer(SharingSerializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, validators=[validate_name])
    changes = serializers.DictField(
        required=False, default=dict, help_text="scenario keys to replace (same shape as in a new experiment)"
    )
    reuse_results = serializers.BooleanField(
        default=True, help_text="cells equal to a stored run you can see (same code version) reuse its result"
    )

    def validate_changes(self, value: dict[str, Any]) -> dict[str, Any]:
        return check_keys(value, ScenarioSerializer().fields, "scenario key ")


class ProgressRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    scheduler = serializers.CharField()
    seed = serializers.IntegerField()
    status = serializers.CharField()
    fraction = serializers.FloatField()
    jobs_done = serializers.IntegerField()
    jobs_total = serializers.IntegerField()
    eta_s = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    code_version = serializers.CharField(allow_blank=True, help_text="the code version that ran it ('' before)")
    attempt = serializers.IntegerField(help_text=ATTEMPT_HELP)
    lost_attempts = LostAttemptSerializer(many=True)
    attempts_note = serializers.CharField(
        allow_blank=True, help_text="the attempts in one line; empty if none was lost"
    )
    waiting = serializers.CharField(
        allow_blank=True,
        help_text="pending for more than a few seconds: what is ahead of it in its queue "
        "('waiting for a worker: 3 tasks ahead of this one (...)'); declined by a worker whose memory "
        "(SIMCORE_WORKER_MEMORY_MB) is below its estimate: how much it needs and which workers there are "
        "('needs about 4.3 GB of memory; waiting for a worker with at least that much (...)'); else empty",
    )


class ProgressSerializer(serializers.Serializer):
    status = serializers.CharField()
    runs = ProgressRunSerializer(many=True)


class ResultsSerializer(serializers.Serializer):
    """``runs``: one record per run (summary/series null until it finished)."""

    runs = serializers.ListField(child=serializers.DictField())
    scenario = serializers.DictField(required=False)


class ShareLinkSerializer(serializers.Serializer):
    share_url = serializers.URLField()


class TraceImportSerializer(serializers.ModelSerializer):
    """A trace upload's import: status, progress over the input bytes, the error, the reader's report."""

    cluster_upload = serializers.IntegerField(
        source="cluster_upload_id",
        allow_null=True,
        read_only=True,
        help_text="id of the cluster upload made from the trace's machines",
    )
    attempt = serializers.IntegerField(read_only=True, help_text=ATTEMPT_HELP)
    lost_attempts = LostAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = TraceUpload
        fields = [
            "format",
            "status",
            "stage",
            "fraction",
            "rows_read",
            "bytes_total",
            "error",
            "options",
            "report",
            "classes",
            "cluster_upload",
            "started_at",
            "finished_at",
            "attempt",
            "lost_attempts",
        ]
        read_only_fields = fields


class UploadSerializer(serializers.ModelSerializer):
    status = serializers.SerializerMethodField(help_text="'ready' once usable in experiments (cluster files at once)")
    trace_import = serializers.SerializerMethodField(help_text="traces only: the background import")

    class Meta:
        model = ClusterUpload
        fields = ["id", "name", "filename", "size_bytes", "sha256", "info", "created", "status", "trace_import"]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=ImportStatus.choices))
    def get_status(self, obj: Any) -> str:
        return str(getattr(obj, "status", ImportStatus.READY))

    @extend_schema_field(TraceImportSerializer(allow_null=True))
    def get_trace_import(self, obj: Any) -> dict[str, Any] | None:
        return TraceImportSerializer(obj).data if isinstance(obj, TraceUpload) else None


def _file_sizes(files: Any) -> Any:
    for f in files if isinstance(files, list) else [files]:
        try:
            check_upload_size(f.size)  # before the content is read
        except Exception as e:
            raise serializers.ValidationError(f"{f.name}: {e}" if f.size else str(e)) from None
    return files


class UploadCreateSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="", validators=[validate_name]
    )
    file = serializers.ListField(
        child=serializers.FileField(),
        min_length=1,
        max_length=MAX_IMPORT_FILES,
        help_text="a cluster JSON file; or the trace: one CSV or SWF file, or the Google 2011 task_events part(s) "
        "in time order (repeat the field); plain or .gz",
    )
    format = serializers.ChoiceField(choices=format_choices(), required=False, help_text="traces: default csv")
    job_events = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        max_length=MAX_IMPORT_FILES,
        help_text="google2011: job_events part(s), cross-checked with the tasks",
    )
    machine_events = serializers.FileField(
        required=False, help_text="google2011: the machine_events file; the machines at time 0 become a cluster upload"
    )
    on_error = serializers.ChoiceField(
        choices=["raise", "skip"],
        required=False,
        help_text="raise (default): the first malformed row fails the import with its "
        "file, line and field; skip: skip and count them (every format)",
    )
    unfinished = serializers.ChoiceField(
        choices=["cut", "drop"],
        required=False,
        help_text="google2011, alibaba, azure: tasks running at the window's end",
    )
    running_at_start = serializers.ChoiceField(
        choices=["keep", "drop"],
        required=False,
        help_text="google2011, alibaba, azure: tasks running at the window's start (keep: with their remaining run)",
    )
    start_s = serializers.FloatField(
        min_value=0, required=False, help_text="Google, SWF, Alibaba, Azure: window start (s); default: the first event"
    )
    end_s = serializers.FloatField(
        min_value=0, required=False, allow_null=True, help_text="Google, SWF: window end (s)"
    )
    cluster = serializers.CharField(
        max_length=100,
        required=False,
        help_text="Google, SWF: a cluster preset to normalise against; wfcommons: to check cores against "
        "(see /api/catalog/)",
    )
    classes = serializers.IntegerField(
        min_value=1,
        max_value=MAX_CLASSES,
        required=False,
        allow_null=True,
        help_text="fit K k-means job classes (LoTES section 5.3.2), stored with the trace",
    )
    class_window_hours = serializers.FloatField(
        min_value=0.001,
        max_value=MAX_HOURS,
        required=False,
        help_text="classes: learnt on the jobs of the first hours (24)",
    )
    class_seed = serializers.IntegerField(
        min_value=0, max_value=MAX_SEED, required=False, help_text="classes: k-means seed (0)"
    )
    class_duration = serializers.BooleanField(required=False, help_text="classes: cluster on durations too")
    map = serializers.CharField(
        max_length=2000,
        required=False,
        help_text="csv: read a CSV with other column names, e.g. submit_s=start_time,duration_s=end_time-start_time,"
        "cpu=plan_cpu/100,mem=plan_mem (the grammar of simcore import --map)",
    )
    where = serializers.CharField(
        max_length=2000, required=False, help_text="csv: keep rows where column=value[|value], e.g. status=Terminated"
    )
    mapping = serializers.IntegerField(
        required=False, min_value=1, help_text="csv: the id of one of your saved maps (/api/trace-mappings/)"
    )

    def validate_file(self, files: Any) -> Any:
        return _file_sizes(files)

    def validate_job_events(self, files: Any) -> Any:
        return _file_sizes(files)

    def validate_machine_events(self, f: Any) -> Any:
        return _file_sizes(f)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]
        read_only_fields = fields


class TeamSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()
    members = MemberSerializer(source="memberships", many=True, read_only=True)

    class Meta:
        model = Team
        fields = ["id", "name", "role", "members", "created"]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=Role.choices))
    def get_role(self, obj: Team) -> str:
        request = self.context["request"]
        return next((m.role for m in obj.memberships.all() if m.user_id == request.user.pk), "")


class TokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created", "last_used"]
        read_only_fields = fields


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    teams = TeamSerializer(many=True)


class ApiRootSerializer(serializers.Serializer):
    schema = serializers.URLField(help_text="the OpenAPI schema (JSON)")
    docs = serializers.URLField(help_text="a browsable documentation page (Swagger UI)")
    authentication = serializers.CharField()
    endpoints = serializers.DictField(child=serializers.URLField())
