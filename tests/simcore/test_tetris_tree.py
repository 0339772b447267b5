"""Tetris's kernel keeps its search tree exact: levels of room, blocks of machines (issue 16).

The kernel's arrival search bounds subtrees with maxima kept per level (a level holds only the
machines whose room reaches its threshold) over blocks of eight machines; a level is brought up to
date when a search reads it, and every level when the kernel returns. The engine-to-engine
tests (``test_kernels.py``) show the decisions are the specification's; here the tree itself,
after real runs, is checked against one rebuilt from the machines' final free capacity, and a
paper-like point (``lotes-phi`` at 0.97 of the machine-assignment LP, per-configuration work
terms) is compared engine to engine on a cluster large enough for a deep tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simcore.api import resolve_cluster, resolve_workload
from simcore.compiled.driver import Kernel
from simcore.core.engine import Simulation
from simcore.core.seeding import scheduler_rng
from simcore.schedulers.tetris import Tetris
from simcore.schedulers.tetris import kernel as TK


class KeptTetris(Tetris):
    """Tetris that keeps its kernel's state for inspection after the run."""

    kept: Kernel | None = None

    def kernel(self, sim: Simulation) -> Kernel:
        self.kept = super().kernel(sim)
        return self.kept


def _rebuilt(st: Any, free: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The tree as ``make`` would build it from these free capacities (R x N)."""
    R, N = free.shape
    inv = st.inv
    rows = [free[r].copy() for r in range(R)]
    room = TK._room_of(np.stack(rows, axis=1), inv, st.room_w)
    if R == 2:
        dirs = st.dirs
        x, y = free[0] * inv[0], free[1] * inv[1]
        rows += [dirs[k, 0] * x + dirs[k, 1] * y for k in range(len(dirs))]
    return TK._max_tree(rows, room, st.theta, int(st.info[TK.I_P]))


@pytest.mark.parametrize(("workload", "load", "hours"), [("lotes-phi", 0.97, 2.0), ("google-like", 1.5, 0.3)])
def test_the_tree_after_a_run_is_the_tree_of_the_final_free_capacity(workload: str, load: float, hours: float) -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 30})  # 300 machines: 38 blocks
    params = {"load_basis": "assignment"} if workload == "lotes-phi" else {}
    wl = resolve_workload(workload, cluster, 4, load, hours, params)
    runs = {}
    for engine in ("python", "compiled"):
        sched = KeptTetris()
        sim = Simulation(cluster, wl, sched, scheduler_rng(4), engine=engine)
        runs[engine] = sim.run()
        if engine == "compiled":
            assert sched.kept is not None
            st = sched.kept.state
            theta = st.theta
            assert theta[0] == -np.inf and np.all(np.diff(theta) > 0)  # distinct levels
            tree = st.tree
            assert tree.shape[0] == TK.LEVELS == len(theta)
            # Levels are brought up to date lazily during the run, and all of them when the kernel returns.
            assert np.all(st.dirty[:, -1] == 0)
            assert np.array_equal(tree[:, 1:], _rebuilt(st, np.asarray(sim.free).T)[:, 1:])
            # Each level holds a subset of the one below (blocks with a machine of enough room).
            P = int(st.info[TK.I_P])
            kept = [int((tree[lv, P:, 0] > -np.inf).sum()) for lv in range(TK.LEVELS)]
            assert kept == sorted(kept, reverse=True) and kept[0] == 38
            if load < 1:  # not every machine is full: the top level still holds some, but not all
                assert 0 < kept[-1] < kept[0]
    a, b = runs["python"], runs["compiled"]
    assert a.n_jobs > 5000
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.sample_util, b.sample_util)
