"""Parameter sweeps: a grid of parameter values x schedulers x seeds, every cell an ordinary run.

* :mod:`simcore.sweep.grammar`: the one grammar of grids (``--vary``,
  ``--seeds``, parameter routing), shared by the command line, the
  dashboard's form and its API;
* :mod:`simcore.sweep.run`: a grid as run specs, run in processes in grid
  order (``simcore sweep``);
* :mod:`simcore.sweep.scenario`: a sweep as a stored scenario
  (:mod:`simcore.scenario`) and its cells, what the dashboard runs;
* :mod:`simcore.sweep.report`: aggregates over seeds, confidence intervals,
  the table and CSV rows.

This module is the command line's and the dashboard's entry point: it
names the grid's public pieces so that callers need not know which of the
modules above holds each.
"""

from __future__ import annotations

from simcore.sweep.grammar import (
    MAX_SEEDS,
    PRESET_AXES,
    RUN_SETTINGS,
    Axis,
    Owner,
    param_converter,
    param_owners,
    parse_axes,
    parse_axis,
    parse_seeds,
    seeds_text,
    split_params,
)
from simcore.sweep.run import Sweep, Task, TaskResult, describe, execute, run_task

__all__ = [
    "MAX_SEEDS",
    "PRESET_AXES",
    "RUN_SETTINGS",
    "Axis",
    "Owner",
    "Sweep",
    "Task",
    "TaskResult",
    "describe",
    "execute",
    "param_converter",
    "param_owners",
    "parse_axes",
    "parse_axis",
    "parse_seeds",
    "run_task",
    "seeds_text",
    "split_params",
]
