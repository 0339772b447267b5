"""Experiments: checking a scenario from the web, creating an experiment and its runs, sharing, cancelling."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from dashboard.common.models import Status, Team, Visibility
from dashboard.common.rows import scenario_fields, sharing_fields
from dashboard.experiments import work
from dashboard.experiments.models import Experiment, Run
from dashboard.traces.models import ClusterUpload, TraceUpload
from simcore import records
from simcore.core import limits
from simcore.core.errors import ParameterError, SimcoreError
from simcore.scenario import build_cluster, validate_scenario
from simcore.sweep import scenario as sweep_scenario
from simcore.sweep.grammar import check_grid_size

log = logging.getLogger(__name__)


#: Parameters that name a file on the server (simcore's CLI reads them); never taken from web input.
SERVER_PATH_PARAMS = frozenset({"profile"})
#: Ceiling for integer parameters the registry leaves unbounded (machines per configuration...):
#: a web request must not make the server build a billion-machine cluster.
WEB_INT_CEILING = 100_000
#: Bounds the form and the API share.
MAX_LOAD = 10.0
MAX_HOURS = 24 * 365
MAX_SEEDS = limits.MAX_SEEDS  # the command line's too
MAX_SEED = limits.MAX_SEED


def scenario_for(run: Run) -> dict[str, Any]:
    """The scenario a worker (or a packing analysis of the run) runs for ``run``: its cell's own scenario in a
    sweep, else the experiment's."""
    scenario = run.experiment.scenario
    if not sweep_scenario.is_sweep(scenario):
        return scenario
    return sweep_scenario.cell_scenario(scenario, run.point or {})


def _check_web_params(kind: str, name: str, params: tuple[Any, ...], values: dict[str, Any]) -> None:
    for p in params:
        v = values.get(p.name)
        if p.name in SERVER_PATH_PARAMS and v not in (None, "", p.default):
            raise ParameterError(f"{kind} {name!r} parameter {p.name!r} names a server file and cannot be set here")
        # The registry's own default is always allowed (LoTES' max_bins default is above the ceiling).
        if p.type is int and p.max is None and isinstance(v, int) and v > WEB_INT_CEILING and v != p.default:
            raise ParameterError(
                f"{kind} {name!r} parameter {p.name!r} must be at most {WEB_INT_CEILING} here, got {v}"
            )


def check_web_scheduler_params(name: str, values: dict[str, Any]) -> None:
    """The platform's bounds on one scheduler's parameters (checked by simcore already), as experiments apply them."""
    from simcore.schedulers import SCHEDULERS

    _check_web_params("scheduler", name, SCHEDULERS.get(name).params, values)


def reproduction_scenario(rep: Any, scale: dict[str, Any], job_records: str = records.DEFAULT) -> dict[str, Any]:
    """A paper reproduction's sweep at a checked scale as a platform scenario, checked, with its records choice.

    ``job_records`` is not a scale knob (the figure is the same whatever each run keeps), so it is recorded
    only when it is not the default, as the experiment form does.
    """
    scenario = sweep_scenario.scenario_of(rep.sweep(scale))
    if job_records != records.DEFAULT:
        scenario["job_records"] = job_records
    return check_scenario(scenario)


def check_scenario(scenario: Any) -> dict[str, Any]:
    """Validate a scenario coming from the web (form or API): simcore's checks plus the platform's bounds.

    Returns the normalised scenario; every problem is a SimcoreError naming
    the part, parameter or valid choices.
    """
    from simcore.presets import CLUSTERS, WORKLOADS
    from simcore.schedulers import SCHEDULERS

    try:
        sc = validate_scenario(scenario)
    except SimcoreError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # odd JSON shapes simcore does not expect
        raise ParameterError(f"the scenario is malformed ({type(e).__name__}: {e})") from None
    if sc["load"] > MAX_LOAD:
        raise ParameterError(f"load must be at most {MAX_LOAD:g}, got {sc['load']:g}")
    if sc["hours"] is not None and sc["hours"] > MAX_HOURS:
        raise ParameterError(f"hours must be at most {MAX_HOURS}, got {sc['hours']:g}")
    if len(sc["seeds"]) > MAX_SEEDS or max(sc["seeds"]) > MAX_SEED:
        raise ParameterError(f"seeds: at most {MAX_SEEDS} seeds, each below 2^32")
    # From the axes' lengths, before a point is built (the command line's check, with the platform's setting).
    lengths = [len(ax.values) for ax in sweep_scenario.axes_of(sc)]
    check_grid_size(lengths, len(sc["schedulers"]), len(sc["seeds"]), settings.SIMCORE_MAX_RUNS)
    points = sweep_scenario.points(sc)
    # Every point of a sweep is a scenario of its own: each gets the platform's bounds.
    for cell in [sweep_scenario.cell_scenario(sc, p) for p in points] if sweep_scenario.is_sweep(sc) else [sc]:
        for part, registry in (("cluster", CLUSTERS), ("workload", WORKLOADS)):
            if "preset" in cell[part]:
                name = cell[part]["preset"]
                _check_web_params(part, name, registry.get(name).params, cell[part]["params"])
        for name in cell["schedulers"]:
            _check_web_params("scheduler", name, SCHEDULERS.get(name).params, cell["scheduler_params"][name])
        if "preset" in cell["cluster"]:
            # Building the cluster is cheap and catches cross-parameter errors now, not in a worker.
            build_cluster(cell)
    return sc


def check_resources(
    scenario: dict[str, Any], cluster_upload: ClusterUpload | None, trace_upload: TraceUpload | None
) -> None:
    """A trace and a cluster must name the same resources: checked at submission, not found by a worker."""
    if trace_upload is None:
        return  # a generated workload takes the cluster's resources
    wanted = list(trace_upload.info.get("resources") or [])
    if cluster_upload is not None:
        have, cname = list(cluster_upload.info.get("resources") or []), f"cluster upload {cluster_upload.name!r}"
    elif "preset" in scenario["cluster"]:
        from simcore.api import resolve_cluster

        spec = scenario["cluster"]
        have, cname = list(resolve_cluster(spec["preset"], spec["params"]).resources), f"cluster {spec['preset']!r}"
    else:
        return
    if wanted and have and wanted != have:
        raise ParameterError(
            f"trace {trace_upload.name!r} requests resources {wanted} but {cname} has {have}; "
            "choose a cluster with the trace's resources"
        )


def create_experiment(
    owner: User,
    scenario: dict[str, Any],
    *,
    name: str = "",
    cluster_upload: ClusterUpload | None = None,
    trace_upload: TraceUpload | None = None,
    team: Team | None = None,
    visibility: str = Visibility.PRIVATE,
    forked_from: Experiment | None = None,
    reuse: bool = False,
    reproduction: dict[str, Any] | None = None,
) -> Experiment:
    """Store an experiment and its runs and enqueue one task per run (after the commit).

    Callers check the scenario (:func:`check_scenario`) and that the uploads
    are the owner's or come from ``forked_from``, which the owner can see.
    A sweep (a scenario with axes) gets one run per cell. With ``reuse`` (what the
    form and the API ask for by default), cells whose result is cached
    (:mod:`dashboard.experiments.cache`) are finished at once from it; ``exp.cached``
    says how many.
    """
    from dashboard.experiments import sweeps

    scenario = validate_scenario(scenario)
    shared = sharing_fields(owner, team, visibility)
    check_resources(scenario, cluster_upload, trace_upload)
    with transaction.atomic():
        exp = Experiment.objects.create(
            name=name,
            **shared,
            **scenario_fields(scenario, cluster_upload, trace_upload),
            forked_from=forked_from,
            reproduction=reproduction,
        )
        # Runs in the order they were always created (seed, then scheduler), cells point by point.
        cells = [
            (p, s, seed)
            for p in sweep_scenario.points(scenario)
            for seed in scenario["seeds"]
            for s in scenario["schedulers"]
        ]
        ids, exp.cached = sweeps.create_runs(exp, scenario, cells, reuse=reuse)  # type: ignore[attr-defined]
        if exp.cached:  # type: ignore[attr-defined]
            exp.refresh_status()  # finished at once when every cell came from the cache

        def queue() -> None:
            exp.queued = enqueue(ids) if ids else True  # type: ignore[attr-defined]

        transaction.on_commit(queue)
    return exp


def fork_uploads(source: Experiment) -> tuple[ClusterUpload | None, TraceUpload | None]:
    """The uploads a fork of ``source`` may reuse: exactly the ones ``source`` uses."""
    return source.cluster_upload, source.trace_upload


def enqueue(run_ids: list[int]) -> bool:
    """Queue the runs (:mod:`dashboard.common.queueing`); False when the broker is unreachable (they stay pending)."""
    return work.enqueue_runs(run_ids)


def cancel_run(run: Run) -> bool:
    """Cancel a pending or running run; a running one stops at its next progress report."""
    if not run.is_active:
        return False
    return run.transition(Status.CANCELLED, finished_at=timezone.now(), eta_s=None)


def cancel_experiment(experiment: Experiment) -> int:
    n = 0
    for run in experiment.runs.filter(status__in=[Status.PENDING, Status.RUNNING]):
        n += cancel_run(run)
    return n
