"""The project's one fit rule: when a request fits in free capacity.

A request ``q`` fits in free capacity ``f`` when ``f >= fit_floor(q)``, that
is ``f >= q - EPS``, in every resource. The engine enforces this rule in
``Simulation.start``; the engine view's masks (:mod:`simcore.view`), every
scheduler and the model's "fits some machine" check apply the very same
float comparison, so no two parts of the project can disagree about a fit.
Compiled kernels must use it too: a threshold computed once per request as
``q - EPS``, compared with ``>=`` against the free capacity.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: Tolerance for capacity checks: requests and capacities are floats that are
#: added and subtracted many times, so exact comparison would reject fits that
#: are exact on paper.
EPS = 1e-9


def fit_floor(request: float) -> float:
    """The least free capacity in which ``request`` fits: ``request - EPS``."""
    return request - EPS


def fits_in(request: NDArray[np.float64], free: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Vectorised rule over the last axis: ``request`` rows that fit in ``free`` (broadcast)."""
    return np.all(free >= request - EPS, axis=-1)  # type: ignore[no-any-return]
