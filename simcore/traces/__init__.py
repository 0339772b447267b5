"""Readers that turn real cluster traces into :class:`~simcore.core.model.Workload` objects.

* :mod:`simcore.traces.google2011`: Google cluster-data 2011 task, job and
  machine events (the LoTES paper's section 5.3 trace).
* :mod:`simcore.traces.swf`: the Standard Workload Format of the Parallel
  Workloads Archive.
* :mod:`simcore.traces.alibaba`: Alibaba cluster-trace-v2018 ``batch_task``
  and ``batch_instance`` (on an assumed 4,000-machine cluster).
* :mod:`simcore.traces.azure`: the Azure Packing Trace 2020 database (VM
  requests as fractions of each machine type; capacities inferred).
* :mod:`simcore.traces.google_stream`: Google 2011 straight to a trace file
  in bounded memory (chunks spilled to disk, :mod:`simcore.traces.spill`).
* :mod:`simcore.traces.wfcommons`: WfCommons workflow instances (WfFormat
  JSON 1.0-1.6), one job made of tasks per instance (one JSON document per
  file, read whole rather than in blocks).

Every reader takes *sources* (paths, bytes of an upload, or binary file
objects), streams them block by block, applies a bad-input policy
(``on_error="raise"`` stops at the first malformed row with its file, line
and column; ``"skip"`` counts and quotes skipped rows) and returns an
:class:`ImportResult`: the workload, the cluster it was derived for (or
None), and an :class:`ImportReport` saying what was read, dropped and why.
Windows start at the first event by default and keep the jobs running at
their start (:mod:`simcore.traces.window`).
An optional ``progress`` callback receives :class:`ImportProgress` after
every block, so a Celery task can report progress or cancel by raising.
"""

from __future__ import annotations

from simcore.traces._stream import ImportProgress, ProgressFn, RowErrors, Source
from simcore.traces.report import ImportReport, ImportResult, workload_summary

__all__ = [
    "ImportProgress",
    "ImportReport",
    "ImportResult",
    "ProgressFn",
    "RowErrors",
    "Source",
    "workload_summary",
]
