"""Aggregate utilisation (section III-A) and hole filling (section III-B, Figure 1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simcore.core.errors import ParameterError
from simcore.packing.snapshot import EPS, FloatArray, Snapshot

#: Figure 1's unit sizes: 5% to 100% of the median machine in 5% steps.
FIGURE1_UNITS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 21))


def aggregate_utilisation(snap: Snapshot) -> dict[str, float]:
    """Fraction of each resource's total capacity requested by placed tasks (0..1)."""
    used = snap.used_per_machine().sum(axis=0)
    total = snap.capacity.sum(axis=0)
    return {r: float(u / t) if t > 0 else 0.0 for r, u, t in zip(snap.resources, used, total, strict=True)}


def check_unit(unit: float) -> None:
    if not (np.isfinite(unit) and unit > 0):
        raise ParameterError(f"unit size U must be a positive fraction of the median machine, got {unit}")


def hole_filling(snap: Snapshot, unit: float) -> dict[str, Any]:
    """Utilisation after filling every machine's hole with units of ``unit`` x the median machine.

    A unit has all resources at once (cpu and memory scaled together, as the
    paper asks, to count stranding too). Per machine, the number of units is
    ``min_r floor(free_r / (unit * median_r))``; the result per resource is
    ``(used + units * unit * median) / total`` (0..1), plus the unit count.
    """
    check_unit(unit)
    size = unit * snap.median_machine()
    free = snap.capacity - snap.used_per_machine()
    pos = size > 0
    if pos.any():
        units = np.floor((np.maximum(free[:, pos], 0.0) + EPS) / size[pos]).min(axis=1)
    else:
        units = np.zeros(snap.n_machines)
    used = snap.used_per_machine().sum(axis=0) + units.sum() * size
    total = snap.capacity.sum(axis=0)
    util = {r: float(u / t) if t > 0 else 0.0 for r, u, t in zip(snap.resources, used, total, strict=True)}
    return {"unit": float(unit), "units": int(units.sum()), "utilisation": util}


def hole_filling_sweep(snap: Snapshot, units: Sequence[float] = FIGURE1_UNITS) -> list[dict[str, Any]]:
    """Figure 1: :func:`hole_filling` for each unit size."""
    if not units:
        raise ParameterError("give at least one unit size")
    return [hole_filling(snap, u) for u in units]


def utilisation_of(capacity: FloatArray, request: FloatArray, placement: np.ndarray) -> FloatArray:
    """Per-resource fraction of ``capacity`` used by the placed rows of ``request``."""
    on = placement >= 0
    return np.asarray(request[on].sum(axis=0) / np.maximum(capacity.sum(axis=0), 1e-300), dtype=np.float64)
