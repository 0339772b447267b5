"""A scheduler whose setup holds the interpreter lock for seconds (one test's own worker loads it: SIMCORE_PLUGINS).

It stands for any phase spent in one C call that never releases the lock
(``json.loads`` of a large document, a compiled kernel, a solver): no other
thread of the worker process runs meanwhile, the heartbeat thread included.
It writes ``<SIMCORE_TEST_GIL_MARK>.in`` when the phase starts and ``.out`` when
it ends, so the test knows when it is inside it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

import numpy as np

from simcore.core.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers.greedy import Greedy

#: libc through PyDLL: calls through it keep the interpreter lock (CDLL would release it).
_LIBC = ctypes.PyDLL(ctypes.util.find_library("c"))


@register("test-gil-setup")
class GilSetup(Greedy):
    description = "test only: a setup that holds the interpreter lock, then greedy"

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        mark = os.environ["SIMCORE_TEST_GIL_MARK"]
        Path(mark + ".in").write_text("")
        _LIBC.sleep(int(os.environ.get("SIMCORE_TEST_GIL_HOLD_S", "5")))
        Path(mark + ".out").write_text("")
        super().setup(sim, rng)
