"""Results as pandas DataFrames: per-job records, plotted series and summaries of one or many runs.

For notebooks. Every function takes one :class:`simcore.api.RunOutcome` or a
list of them and returns one long-format DataFrame in which each row says
which run it comes from (``scheduler``, ``seed``, plus ``cluster``, ``workload``
and ``load``), so several runs concatenate into one frame that groupby,
pivot and plotting libraries take as it is::

    from simcore import api, frames

    runs = [api.run(api.RunSpec("google-balanced", "google-like", s, seed=k, hours=0.2,
                                cluster_params={"machines_per_config": 2}))
            for s in ("greedy", "tetris") for k in (0, 1)]
    frames.summary(runs).groupby("scheduler")["mean_response_s"].mean()

The numbers are those of the CSV and JSON files ``simcore run --out`` writes
(:meth:`RunOutcome.write`): the same columns, the same values. A job that never
started has NaN times and a missing (``<NA>``) machine and config, as the
files leave those fields empty.

pandas is optional (``pip install 'simcore-platform[frames]'``); the rest of
the library never imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.api import NULL_IF_NEGATIVE, RunOutcome

if TYPE_CHECKING:
    import pandas as pd

#: The series of a run (``RunOutcome.series``) and their columns, in the order the CSV files have them.
SERIES = {
    "cdf": ("p", "response_s"),
    "ccdf": ("response_s", "longer"),
    "per_day": ("day", "mean_response_s", "jobs"),
    "queue": ("t_s", "queued", "running"),
    "utilization": ("t_s",),  # then one column per resource of the run's cluster
}

#: Columns naming the run a row belongs to, first in every frame.
RUN_COLUMNS = ("scheduler", "seed", "cluster", "workload", "load")


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # an optional dependency: say which and how to get it
        raise ImportError("simcore.frames needs pandas: pip install 'simcore-platform[frames]'") from e
    return pandas


def _runs(outcomes: RunOutcome | Iterable[RunOutcome]) -> list[RunOutcome]:
    runs = [outcomes] if isinstance(outcomes, RunOutcome) else list(outcomes)
    if not runs:
        raise ValueError("no runs given: pass a RunOutcome or a non-empty list of them")
    for i, r in enumerate(runs):
        if not isinstance(r, RunOutcome):
            raise TypeError(f"run {i} is a {type(r).__name__}, not a simcore.api.RunOutcome")
    return runs


def _labelled(run: RunOutcome, frame: pd.DataFrame) -> pd.DataFrame:
    for pos, key in enumerate(RUN_COLUMNS):
        frame.insert(pos, key, run.summary.get(key))
    return frame


def jobs(outcomes: RunOutcome | Iterable[RunOutcome]) -> pd.DataFrame:
    """One row per job of every run: submit, class, machine, config, start, finish, response, completion."""
    pd = _pandas()
    parts = []
    for run in _runs(outcomes):
        cols = run.jobs_columns()
        # -1 in machine and config is "never started": a missing value, as the files write it.
        data = {
            k: pd.array(np.where(v < 0, 0, v), dtype="Int64", copy=True) if k in NULL_IF_NEGATIVE else v
            for k, v in cols.items()
        }
        frame = pd.DataFrame(data)
        for name in NULL_IF_NEGATIVE:
            frame.loc[cols[name] < 0, name] = pd.NA
        parts.append(_labelled(run, frame))
    return pd.concat(parts, ignore_index=True)


def series(name: str, outcomes: RunOutcome | Iterable[RunOutcome]) -> pd.DataFrame:
    """One plotted series (``cdf``, ``ccdf``, ``per_day``, ``queue``, ``utilization``) of every run, stacked."""
    if name not in SERIES:
        raise ValueError(f"unknown series {name!r}; the series are {', '.join(SERIES)}")
    pd = _pandas()
    parts = []
    for run in _runs(outcomes):
        data = run.series[name]
        columns = [*SERIES[name], *run.cluster.resources] if name == "utilization" else list(SERIES[name])
        parts.append(_labelled(run, pd.DataFrame({c: data[c] for c in columns})))
    return pd.concat(parts, ignore_index=True)


def summary(outcomes: RunOutcome | Iterable[RunOutcome]) -> pd.DataFrame:
    """One row per run: its summary, a nested value flattened (``utilization.cpu``, ``utilization.mem``)."""
    pd = _pandas()
    rows = []
    for run in _runs(outcomes):
        row: dict[str, Any] = {}
        for key, value in run.summary.items():
            if isinstance(value, dict):
                row.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                row[key] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    ahead = [c for c in RUN_COLUMNS if c in frame.columns]
    return frame[ahead + [c for c in frame.columns if c not in ahead]]


def per_class(outcomes: RunOutcome | Iterable[RunOutcome]) -> pd.DataFrame:
    """One row per job class of every run: jobs, mean response, run and completion time."""
    pd = _pandas()
    parts = [_labelled(run, pd.DataFrame(run.per_class)) for run in _runs(outcomes) if run.per_class]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*RUN_COLUMNS, "class", "jobs"])
