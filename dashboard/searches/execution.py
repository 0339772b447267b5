"""A worker evaluating one policy of a design-space search: claim, simulate, store, then move the search on.

The cluster and workload are built once per worker process (:func:`built`);
the simulation is :func:`simcore.dse.explore.fitness.evaluate`, exactly what
``simcore explore`` runs. A policy the simulation refuses fails its search
with the message (a search cannot rank an individual it cannot score).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from dashboard.common import outages, units
from dashboard.searches.coordinator import UNITS
from dashboard.searches.models import Search, SearchEvaluation
from dashboard.searches.services import BUILT_CACHE
from dashboard.traces.uploads import scenario_file_names
from simcore.core.errors import Cancelled, SchedulingError, SimcoreError
from simcore.core.model import Cluster, Workload
from simcore.dse.explore.fitness import evaluate
from simcore.dse.explore.pool import build

log = logging.getLogger(__name__)

_BUILT: OrderedDict[tuple[str, int], tuple[Cluster, Workload]] = OrderedDict()


def search_files(search: Search) -> dict[str, bytes]:
    """The uploaded files a search's scenario names, by scenario file name."""
    names = scenario_file_names(search.cluster_upload, search.trace_upload)
    out = {}
    if search.cluster_upload is not None:
        out[names["cluster"]] = search.cluster_upload.content()
    if search.trace_upload is not None:
        out[names["workload"]] = search.trace_upload.content()
    return out


@contextlib.contextmanager
def _materialised(search: Search) -> Iterator[dict[str, Path]]:
    with tempfile.TemporaryDirectory(prefix="simcore-search-") as tmp:
        paths = {}
        for name, content in search_files(search).items():
            paths[name] = Path(tmp) / name
            paths[name].write_bytes(content)
        yield paths


def built(search: Search) -> tuple[Cluster, Workload]:
    """The search's cluster and workload, built once per worker process."""
    key = (search.fingerprint, int(search.sim_seed))
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    with _materialised(search) as files:
        pair = build(search.scenario, int(search.sim_seed), files)
    _BUILT[key] = pair
    while len(_BUILT) > BUILT_CACHE:
        _BUILT.popitem(last=False)
    return pair


def _upload_names(message: str, search: Search) -> str:
    """``message`` without the worker's temporary paths: the names the user gave the uploads."""
    names = scenario_file_names(search.cluster_upload, search.trace_upload)
    for key, upload, what in (
        ("cluster", search.cluster_upload, "cluster upload"),
        ("workload", search.trace_upload, "trace upload"),
    ):
        if upload is not None:
            message = re.sub(r"\S*" + re.escape(names[key]), f"{what} {upload.name!r}", message)
    return message


def execute_evaluation(evaluation_id: int, worker: str = "") -> str:
    """Claim a pending evaluation, simulate its policy, store the result, move the search on; returns the outcome.

    An evaluation that is gone, claimed by another worker, or of a search that
    ended is left alone (:func:`dashboard.common.units.execute_unit`). A policy the
    simulation refuses fails the search with its message (the search cannot rank
    an individual it cannot score).
    """
    return units.execute_unit(
        UNITS, evaluation_id, worker, _simulate, related=("search__cluster_upload", "search__trace_upload")
    )


def _simulate(ev: SearchEvaluation, search: Search) -> str:
    # A scenario that cannot be built (a workload with no jobs) fails every policy alike: its
    # message names no policy, so that the user fixes the scenario rather than the policy.
    where = ""
    try:
        cluster, workload = built(search)
        where = f"policy {ev.policy!r}: "
        result = evaluate(cluster, workload, ev.policy, int(search.sim_seed))
    except Cancelled:
        return units.cancelled(UNITS, ev.pk, search.pk)
    except SimcoreError as e:
        return _fail(ev, search, f"{where}{_upload_names(str(e), search)}")
    except SchedulingError as e:
        return _fail(ev, search, f"policy {ev.policy!r}: the scheduler made an invalid decision: {e}")
    except MemoryError:
        return _fail(ev, search, f"{where}the simulation needed more memory than the worker has")
    except outages.OUTAGE_ERRORS:  # not the policy's fault: the task is retried (dashboard.common.outages)
        raise
    except Exception as e:  # a bug: the traceback for us, one line for the user
        log.exception("evaluation %s of search %s failed", ev.pk, search.pk)
        return _fail(ev, search, f"{where}internal error ({type(e).__name__}): {e}")
    data = result.to_dict()
    if not all(math.isfinite(float(data[m])) for m in ("trt", "jms", "njsl", "jwt")):
        return _fail(ev, search, f"policy {ev.policy!r}: the simulation gave a non-finite metric ({data})")
    return units.store(UNITS, ev.pk, data)


def _fail(ev: SearchEvaluation, search: Search, message: str) -> str:
    return units.fail(UNITS, ev.pk, search.pk, message)
