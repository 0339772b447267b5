"""Every model of the app, imported here so that Django finds them (the app is ``dashboard``, one app).

The models live with their feature (``dashboard.<feature>.models``) and keep
the app label ``dashboard`` because they sit inside the app's package: the
tables, the migrations and their history are those of the flat app before.
Code inside the dashboard imports a model from its feature; this module is
the registry Django (and the tests' shorthand) reads.
"""

from __future__ import annotations

from dashboard.accounts.models import ApiToken, Invitation, LoginFailure, token_hash
from dashboard.capacity.models import CapacityPlan, CapacityProbe, PlanPhase
from dashboard.common.models import (
    ACTIVE,
    RUN_ROLES,
    TRANSITIONS,
    Membership,
    Role,
    Status,
    Team,
    Visibility,
    WorkerHost,
    heard_at,
    heartbeat_every_s,
    lost_message,
    move,
    stale_heartbeat,
    worker_timeout,
)
from dashboard.experiments.models import (
    RERUN_RUN,
    CellAggregate,
    Experiment,
    ExperimentCharts,
    Run,
    RunJobs,
    RunJobsChunk,
    RunRecordsObject,
    RunResult,
)
from dashboard.packing.models import RERUN_ANALYSIS, PackingAnalysis, PackingSource
from dashboard.searches.models import EvalStatus, Phase, Search, SearchEvaluation, SearchGeneration
from dashboard.traces.models import (
    IMPORT_ACTIVE,
    IMPORT_TRANSITIONS,
    RERUN_IMPORT,
    ClusterUpload,
    ImportRole,
    ImportStatus,
    TraceDraft,
    TraceFormat,
    TraceImportFile,
    TraceMapping,
    TraceUpload,
    Upload,
)

__all__ = [
    "ACTIVE",
    "CapacityPlan",
    "CapacityProbe",
    "PlanPhase",
    "IMPORT_ACTIVE",
    "IMPORT_TRANSITIONS",
    "RERUN_ANALYSIS",
    "RERUN_IMPORT",
    "RERUN_RUN",
    "RUN_ROLES",
    "TRANSITIONS",
    "ApiToken",
    "CellAggregate",
    "ClusterUpload",
    "EvalStatus",
    "Experiment",
    "ExperimentCharts",
    "ImportRole",
    "ImportStatus",
    "Invitation",
    "LoginFailure",
    "Membership",
    "PackingAnalysis",
    "PackingSource",
    "Phase",
    "Role",
    "Run",
    "RunJobs",
    "RunRecordsObject",
    "RunJobsChunk",
    "RunResult",
    "Search",
    "SearchEvaluation",
    "SearchGeneration",
    "Status",
    "Team",
    "TraceDraft",
    "TraceFormat",
    "TraceImportFile",
    "TraceMapping",
    "TraceUpload",
    "Upload",
    "Visibility",
    "WorkerHost",
    "heard_at",
    "heartbeat_every_s",
    "lost_message",
    "move",
    "stale_heartbeat",
    "token_hash",
    "worker_timeout",
]
