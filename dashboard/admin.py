from django.contrib import admin

from dashboard.accounts.models import ApiToken, Invitation
from dashboard.capacity.models import CapacityPlan
from dashboard.common.models import Membership, Team
from dashboard.experiments.models import Experiment, Run
from dashboard.packing.models import PackingAnalysis
from dashboard.searches.models import Search
from dashboard.traces.models import ClusterUpload, TraceUpload


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "owner", "team", "visibility", "cluster_label", "workload_label", "status", "created")
    list_filter = ("status", "visibility")
    exclude = ("share_token",)
    #: The change form's order as it was before OwnedWork (whose fields Django would put first).
    fields = tuple(
        "owner team visibility forked_from name scenario cluster_upload trace_upload cluster_label "
        "workload_label status created reproduction".split()
    )


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "experiment", "scheduler", "seed", "status", "fraction", "code_version")
    list_filter = ("status", "scheduler")


@admin.register(ClusterUpload, TraceUpload)
class UploadAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "filename", "owner", "size_bytes", "created")
    exclude = ("content_gz",)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Administrators create accounts (Users) and may set up teams and roles here."""

    list_display = ("id", "name", "created")
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("id", "team", "role", "created_by", "created", "expires", "used_by", "used_at")
    exclude = ("token_hash",)
    readonly_fields = ("used_by", "used_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "name", "prefix", "created", "last_used")
    exclude = ("token_hash",)
    readonly_fields = ("prefix",)

    def has_add_permission(self, request: object) -> bool:
        return False  # tokens are made by their user, who sees the secret once


@admin.register(PackingAnalysis)
class PackingAnalysisAdmin(admin.ModelAdmin):
    """Operators see every analysis here (the pages show a user only what access.py lets them read)."""

    list_display = ("id", "name", "owner", "team", "visibility", "source", "label", "time_s", "status", "created")
    list_filter = ("status", "source", "visibility")
    exclude = ("share_token",)
    #: The change form's order as it was before OwnedWork (whose fields Django would put first).
    fields = tuple(
        "owner team visibility name source run trace_upload cluster_upload source_spec label time_s spec "
        "status fraction stage started_at finished_at worker queued_at heartbeat_at attempt "
        "lost_attempts error code_version created snapshot_size results".split()
    )
    readonly_fields = ("results",)  # computed by a worker; editing it would show numbers no run produced


@admin.register(Search)
class SearchAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "name",
        "owner",
        "team",
        "visibility",
        "metric",
        "population",
        "generation",
        "status",
        "created",
    )
    list_filter = ("status", "metric", "visibility")
    exclude = ("share_token",)
    #: The change form's order as it was before OwnedWork (whose fields Django would put first).
    fields = tuple(
        "owner team visibility forked_from name scenario cluster_upload trace_upload cluster_label "
        "workload_label metric population max_generations seed sim_seed fingerprint status generation "
        "phase generations_done stop_reason error code_version created started_at finished_at".split()
    )


@admin.register(CapacityPlan)
class CapacityPlanAdmin(admin.ModelAdmin):
    """Operators see every capacity plan here (the pages show a user only what access.py lets them read)."""

    list_display = ("id", "name", "owner", "team", "visibility", "target", "phase", "round", "status", "created")
    list_filter = ("status", "phase", "visibility")
    exclude = ("share_token",)
    #: The change form's order as it was before OwnedWork (whose fields Django would put first).
    fields = tuple(
        "owner team visibility forked_from name spec cluster_label workload_label target status phase "
        "round search_round wanted note error code_version created started_at finished_at bounds result "
        "cluster_upload trace_upload".split()
    )
    # bounds, result: computed by workers (editing them would show numbers no probe produced); the uploads: the spec
    # names them, so another one would run a plan nobody asked for.
    readonly_fields = ("bounds", "result", "cluster_upload", "trace_upload")
