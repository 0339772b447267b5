"""The one seeding rule: how an integer seed becomes the streams of a run.

One integer seed is split with :class:`numpy.random.SeedSequence` into two
independent streams: the first for the workload generator, the second for
the scheduler. Every scheduler compared under one seed therefore sees exactly
the same jobs, and a run made through :func:`simcore.api.run`, the dashboard,
``simcore sweep`` or a direct :func:`simcore.core.engine.simulate` call with the
same seed draws the same numbers.
"""

from __future__ import annotations

import numpy as np

from simcore.core.errors import ParameterError


def _streams(seed: int) -> list[np.random.SeedSequence]:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed)).spawn(2)


def workload_rng(seed: int) -> np.random.Generator:
    """The generator stream a workload preset draws from under ``seed``."""
    return np.random.default_rng(_streams(seed)[0])


def scheduler_rng(seed: int) -> np.random.Generator:
    """The generator stream a scheduler draws from under ``seed``."""
    return np.random.default_rng(_streams(seed)[1])


def records_rng(seed: int) -> np.random.Generator:
    """The stream a run's sample of per-job records is drawn from (simcore.records): a third child of the
    seed, so drawing the sample changes neither the workload nor the schedule."""
    _streams(seed)  # the same check of the seed
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(2,)))
