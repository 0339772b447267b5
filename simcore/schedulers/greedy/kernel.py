"""Greedy's compiled kernel: the decisions of :class:`~simcore.schedulers.greedy.Greedy`, in numba.

Line for line the specification's data structures: per-machine FIFO queues
(a linked list over jobs), machines in buckets by queue length per
configuration with the same swap-remove order (a tie is broken by position
in those buckets, so their order must be the specification's), and the
same uniform draws in the same order (the driver refills the buffer from
the run's generator in batches of ``DRAW_BATCH``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numba import types
from numba.typed import List

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, njit

if TYPE_CHECKING:
    from simcore.engine import Simulation
    from simcore.schedulers.greedy import Greedy

_INT_LIST = types.ListType(types.int64)


@njit
def _buckets(cfg: Any, n_cfg: int) -> tuple[Any, Any]:
    """``bk``: every bucket's machines; ``bid[c][L]``: the bucket of configuration c at queue length L."""
    bk = List.empty_list(_INT_LIST)
    bid = List.empty_list(_INT_LIST)
    for c in range(n_cfg):
        ids = List.empty_list(types.int64)
        ids.append(len(bk))
        bk.append(List.empty_list(types.int64))
        bid.append(ids)
    return bk, bid


@njit
def _fill(bk: Any, bid: Any, cfg: Any, pos: Any) -> None:
    for m in range(len(cfg)):
        b = bk[bid[cfg[m]][0]]
        pos[m] = len(b)
        b.append(m)


@inline
def _move(st: Any, m: int, step: int) -> None:
    """``Greedy._move``: machine m's queue length changes by ``step``, buckets kept in the same order."""
    qlen, pos, minlen, cfg, bk, bid = st[2], st[4], st[5], st[9], st[10], st[11]
    c = cfg[m]
    ids = bid[c]
    old = qlen[m]
    new = old + step
    qlen[m] = new
    b = bk[ids[old]]
    p = pos[m]
    last = b.pop()
    if last != m:
        b[p] = last
        pos[last] = p
    if new == len(ids):
        ids.append(len(bk))
        bk.append(List.empty_list(types.int64))
    nb = bk[ids[new]]
    pos[m] = len(nb)
    nb.append(m)
    if step > 0:
        if old == minlen[c] and len(b) == 0:
            minlen[c] = new
    elif new < minlen[c]:
        minlen[c] = new


@inline
def _shortest_queue(core: Any, st: Any, job: int) -> int:
    """``Greedy._shortest_queue``: fewest waiting jobs among machines that could hold and run ``job``."""
    minlen, cfg_cap, present, draws, bk, bid, tied = st[5], st[6], st[7], st[8], st[10], st[11], st[12]
    req = core[2]
    ctr = core[15]
    dims = core[17]
    R = dims[K.D_R]
    all_runnable = dims[K.D_ALL_RUNNABLE] == 1
    jb = job * R
    best = -1
    ntied = 0
    total = 0
    for i in range(len(present)):
        c = present[i]
        ok = True
        for r in range(R):
            if not cfg_cap[c, r] >= req[jb + r] - K.FIT_EPS:
                ok = False
                break
        if not ok:
            continue
        if not all_runnable and not K.runnable_config(core, job, c):
            continue
        L = minlen[c]
        if best < 0 or L < best:
            best = L
            tied[0] = c
            ntied = 1
            total = len(bk[bid[c][L]])
        elif L == best:
            tied[ntied] = c
            ntied += 1
            total += len(bk[bid[c][L]])
    if best < 0:
        return -1
    if total == 1:
        return bk[bid[tied[0]][best]][0]  # type: ignore[no-any-return]
    u = draws[ctr[K.DRAW]]
    ctr[K.DRAW] += 1
    k = int(u * total)
    for i in range(ntied):
        b = bk[bid[tied[i]][best]]
        if k < len(b):
            return b[k]  # type: ignore[no-any-return]
        k -= len(b)
    b = bk[bid[tied[ntied - 1]][best]]
    return b[len(b) - 1]  # type: ignore[no-any-return]


@inline
def _arrival(core: Any, hp: Any, st: Any, job: int) -> Any:
    dims = core[17]
    N = dims[K.D_N]
    m = K.first_fit(core, job, 0, N)
    if m >= 0 and dims[K.D_ALL_RUNNABLE] == 0 and not K.can_run(core, job, m):
        m = -1
        ranges = st[13]
        for c in range(dims[K.D_CONFIGS]):
            lo, hi = ranges[c, 0], ranges[c, 1]
            if hi > lo and K.runnable_config(core, job, c):
                m = K.first_fit(core, job, lo, hi)
                if m >= 0:
                    break
    if m >= 0:
        return K.start(core, hp, job, m)
    m = _shortest_queue(core, st, job)
    if m < 0:
        st[14][0] += 1  # unrunnable
        return hp
    qhead, qtail, qnext = st[0], st[1], st[3]
    qnext[job] = -1
    if qhead[m] < 0:
        qhead[m] = job
    else:
        qnext[qtail[m]] = job
    qtail[m] = job
    _move(st, m, 1)
    return hp


@inline
def _completion(core: Any, hp: Any, st: Any, m: int) -> Any:
    qhead, qnext = st[0], st[3]
    ctr = core[15]
    while qhead[m] >= 0 and K.fits(core, qhead[m], m):
        head = qhead[m]
        qhead[m] = qnext[head]
        hp = K.start(core, hp, head, m)
        if ctr[K.ERR] != 0:
            return hp
        _move(st, m, -1)
    return hp


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with Greedy's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core[15]
    fl = core[16]
    draws = st[8]
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        if kind == K.EV_ARRIVAL and ctr[K.DRAW] >= len(draws):
            return K.S_DRAWS, hp
        fl[K.NOW] = t
        if kind == K.EV_ARRIVAL:
            hp = _arrival(core, hp, st, K.arrive(core))
        else:
            job, m = K.complete(core, hp)
            hp = _completion(core, hp, st, m)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def make(sched: Greedy, sim: Simulation) -> Kernel:
    """Greedy's kernel state, built from the engine's view as :meth:`Greedy.setup` builds its own."""
    from simcore.schedulers.greedy import DRAW_BATCH

    view = sim.view
    N = sim.n_machines
    n_cfg = view.n_configs
    cfg = np.ascontiguousarray(sim.config_of, dtype=np.int64)
    bk, bid = _buckets(cfg, n_cfg)
    pos = np.zeros(N, dtype=np.int64)
    _fill(bk, bid, cfg, pos)
    unrunnable = np.zeros(1, dtype=np.int64)
    state = (
        np.full(N, -1, dtype=np.int64),  # 0 qhead
        np.full(N, -1, dtype=np.int64),  # 1 qtail
        np.zeros(N, dtype=np.int64),  # 2 qlen
        np.empty(sim.n_jobs, dtype=np.int64),  # 3 qnext
        pos,  # 4
        np.zeros(n_cfg, dtype=np.int64),  # 5 minlen
        np.ascontiguousarray(sim.cluster.capacity, dtype=np.float64),  # 6 cfg_cap
        np.array(sched.cfg_present, dtype=np.int64),  # 7 present configurations
        np.zeros(DRAW_BATCH),  # 8 draws
        cfg,  # 9
        bk,  # 10
        bid,  # 11
        np.zeros(n_cfg, dtype=np.int64),  # 12 scratch: tied configurations
        np.array(view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),  # 13
        unrunnable,  # 14
    )

    def done() -> None:
        sched.unrunnable = int(unrunnable[0])

    return Kernel(step=step, state=state, draws=state[8], done=done)
