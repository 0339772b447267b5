"""FCFS's compiled kernel: the decisions of :class:`~simcore.schedulers.fcfs.FCFS`, in numba.

* One-slot clusters (every capacity and request 1): the specification's pool
  of idle machines, a FIFO (``longest-idle``, a ring here) or kept sorted
  (``lowest-index``); a head that cannot run on a machine skips it, in pool order.
* Otherwise the queue is the range of jobs ``qhead..arrived-1`` (FCFS
  queues every job in arrival order and starts them in that order), and
  the head takes, among the machines where it fits and can run, the lowest
  numbered one or the one free longest. Both are a first fit in the engine's
  max tree: for ``longest-idle`` its leaves hold the machines in
  ``(idle_since, index)`` order, the order in which ``argmin`` over
  ``idle_since`` breaks ties (a machine whose job finished moves to the back).
* A head that fitted nowhere stays blocked until a completion: only the
  machine that completed has more free capacity than at the failed search,
  so only it is examined (the specification searches every machine again
  and finds the same).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, njit

if TYPE_CHECKING:
    from simcore.engine import Simulation
    from simcore.schedulers.fcfs import FCFS

# st[0] (int64) slots
SINGLE, LONGEST, QHEAD, BLOCKED, CNT, PSTART, PSIZE = 0, 1, 2, 3, 4, 6, 7


@inline
def _compact(core: Any, st: Any) -> None:
    """Leaves exhausted: close the gaps moved machines left, in order, and rebuild the tree."""
    meta = st[0]
    lof, mat = core[21], core[22]
    P = core[17][K.D_TREE]
    w = 0
    for leaf in range(meta[CNT]):
        m = mat[leaf]
        if m >= 0:
            mat[w] = m
            lof[m] = w
            w += 1
    for leaf in range(w, P):
        mat[leaf] = -1
    meta[CNT] = w
    for leaf in range(P):
        K.tree_leaf(core, leaf)


@inline
def _to_back(core: Any, st: Any, m: int, now: float) -> None:
    """Machine m's last job finished at ``now``: move it to its place in the ``(idle_since, index)`` order.

    Times never decrease, so that place is at the end, before only machines that became
    free at the same instant with a higher index (the leaves after them shift right).
    """
    meta, idle, last_t = st[0], st[1], st[6]
    lof, mat = core[21], core[22]
    P = core[17][K.D_TREE]
    old = lof[m]
    mat[old] = -1
    K.tree_leaf(core, old)
    idle[m] = now
    if meta[CNT] == P:
        _compact(core, st)
    cnt = meta[CNT]
    p = cnt
    if now == last_t[0]:
        q = cnt - 1
        while q >= 0:
            x = mat[q]
            if x >= 0:
                if idle[x] == now and x > m:
                    p = q  # m goes before x
                else:
                    break
            q -= 1
        for leaf in range(cnt - 1, p - 1, -1):  # shift p..cnt-1 right by one
            x = mat[leaf]
            mat[leaf + 1] = x
            if x >= 0:
                lof[x] = leaf + 1
            K.tree_leaf(core, leaf + 1)
    mat[p] = m
    lof[m] = p
    K.tree_leaf(core, p)
    meta[CNT] = cnt + 1
    last_t[0] = now


@inline
def _runnable(core: Any, job: int, c: int) -> bool:
    return core[17][K.D_ALL_RUNNABLE] == 1 or K.runnable_config(core, job, c)


@inline
def _find(core: Any, st: Any, job: int) -> int:
    """The machine the head takes: fits, can run there (idle-machine time), lowest index or free longest."""
    meta = st[0]
    cfg = core[10]
    if meta[LONGEST] == 0:
        ranges = st[4]
        for c in range(len(ranges)):
            lo, hi = ranges[c, 0], ranges[c, 1]
            if hi > lo and _runnable(core, job, c):
                m = K.first_fit(core, job, lo, hi)
                if m >= 0:
                    return m
        return -1
    # The leaves are in (idle_since, index) order: the first fitting leaf is the one free longest.
    leaf = K.tree_first_fit(core, job, 0, meta[CNT])
    while leaf >= 0:
        m = core[22][leaf]
        if _runnable(core, job, cfg[m]):
            return m  # type: ignore[no-any-return]
        leaf = K.tree_first_fit(core, job, leaf + 1, meta[CNT])
    return -1


@inline
def _dispatch(core: Any, hp: Any, st: Any) -> Any:
    meta = st[0]
    ctr = core[15]
    if meta[SINGLE] == 1:
        return _dispatch_single(core, hp, st)
    while meta[QHEAD] < ctr[K.ARRIVED]:
        job = meta[QHEAD]
        if meta[BLOCKED] == job:
            return hp  # nothing has more room than at its failed search
        m = _find(core, st, job)
        if m < 0:
            meta[BLOCKED] = job
            return hp
        meta[QHEAD] += 1
        hp = K.start(core, hp, job, m)
        if ctr[K.ERR] != 0:
            return hp
    return hp


@inline
def _dispatch_single(core: Any, hp: Any, st: Any) -> Any:
    """One-slot machines: the pool of idle machines, in the specification's order."""
    meta, pool = st[0], st[5]
    ctr = core[15]
    N = len(pool)
    all_runnable = core[17][K.D_ALL_RUNNABLE] == 1
    longest = meta[LONGEST] == 1
    while meta[QHEAD] < ctr[K.ARRIVED] and meta[PSIZE] > 0:
        job = meta[QHEAD]
        s0 = meta[PSTART]
        size = meta[PSIZE]
        i = 0
        if not all_runnable:
            i = -1
            for k in range(size):
                if K.can_run(core, job, pool[(s0 + k) % N]):
                    i = k
                    break
            if i < 0:
                return hp
        m = pool[(s0 + i) % N]
        if longest and i == 0:
            meta[PSTART] = (s0 + 1) % N
        else:
            for k in range(i, size - 1):  # close the gap (del pool[i])
                pool[(s0 + k) % N] = pool[(s0 + k + 1) % N]
        meta[PSIZE] = size - 1
        meta[QHEAD] += 1
        hp = K.start(core, hp, job, m)
        if ctr[K.ERR] != 0:
            return hp
    return hp


@inline
def _release(st: Any, m: int) -> None:
    """A one-slot machine is idle again: back into the pool (at the end, or in index order)."""
    meta, pool = st[0], st[5]
    N = len(pool)
    s0 = meta[PSTART]
    size = meta[PSIZE]
    if meta[LONGEST] == 1:
        pool[(s0 + size) % N] = m
    else:
        k = size
        while k > 0 and pool[(s0 + k - 1) % N] > m:
            pool[(s0 + k) % N] = pool[(s0 + k - 1) % N]
            k -= 1
        pool[(s0 + k) % N] = m
    meta[PSIZE] = size + 1


@inline
def _completion(core: Any, hp: Any, st: Any, m: int) -> Any:
    meta = st[0]
    ctr = core[15]
    now = core[16][K.NOW]
    if meta[SINGLE] == 1:
        st[1][m] = now
        _release(st, m)
        return _dispatch_single(core, hp, st)
    if meta[LONGEST] == 1:
        _to_back(core, st, m, now)
    else:
        st[1][m] = now
    job = meta[QHEAD]
    if meta[BLOCKED] == job and job < ctr[K.ARRIVED]:
        # Only machine m has more room than at the head's failed search.
        if not (K.fits(core, job, m) and _runnable(core, job, core[10][m])):
            return hp
        meta[BLOCKED] = -1
        meta[QHEAD] += 1
        hp = K.start(core, hp, job, m)
        if ctr[K.ERR] != 0:
            return hp
    return _dispatch(core, hp, st)


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with FCFS's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core[15]
    fl = core[16]
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        fl[K.NOW] = t
        if kind == K.EV_ARRIVAL:
            K.arrive(core)
            hp = _dispatch(core, hp, st)
        else:
            job, m = K.complete(core, hp)
            hp = _completion(core, hp, st, m)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def make(sched: FCFS, sim: Simulation) -> Kernel:
    """FCFS's kernel state, after :meth:`FCFS.setup` (its ``idle_since`` array is shared)."""
    N = sim.n_machines
    n_cfg = sim.view.n_configs
    meta = np.zeros(8, dtype=np.int64)
    meta[SINGLE] = 1 if sched._single else 0
    meta[LONGEST] = 1 if sched.pick == "longest-idle" else 0
    meta[BLOCKED] = -1
    meta[PSIZE] = N
    meta[CNT] = N  # leaves in use: at first machine i at leaf i (never used: idle since -inf, index order)
    state = (
        meta,
        sched.idle_since,  # 1
        np.zeros(1, dtype=np.int64),  # 2 (unused)
        np.zeros(1, dtype=np.int64),  # 3 (unused)
        np.array(sim.view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),  # 4
        np.arange(N, dtype=np.int64),  # 5 the one-slot pool
        np.array([-np.inf]),  # 6 the time of the last move to the back
    )
    multi = meta[SINGLE] == 0
    longest = multi and meta[LONGEST] == 1
    # Multi-resource FCFS searches the engine's max tree; longest-idle with leaves in idle order,
    # twice as many as machines so that a move to the back seldom needs a compaction.
    return Kernel(step=step, state=state, tree=bool(multi), tree_leaves=2 * N if longest else 0)
