"""FCFS's compiled kernel: the decisions of :class:`~simcore.schedulers.fcfs.FCFS`, in numba.

* One-slot clusters (every capacity and request 1): the specification's pool
  of idle machines, a FIFO (``longest-idle``, a ring here) or kept sorted
  (``lowest-index``); a head that cannot run on a machine skips it, in pool order.
* Otherwise the queue is the range of jobs ``qhead..arrived-1`` (FCFS
  queues every job in arrival order and starts them in that order), and
  the head takes, among the machines where it fits and can run, the lowest
  numbered one or the one free longest: machines are kept in a linked list
  ordered by ``(idle_since, index)``, the order ``argmin`` over
  ``idle_since`` breaks ties in, and the first fitting machine in that list
  is the specification's choice.
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
SINGLE, LONGEST, QHEAD, BLOCKED, HEAD, TAIL, PSTART, PSIZE = 0, 1, 2, 3, 4, 5, 6, 7


@inline
def _relink(st: Any, m: int, now: float) -> None:
    """Machine m's last job finished at ``now``: move it to its place in the ``(idle_since, index)`` order."""
    meta, idle, nxt, prv = st[0], st[1], st[2], st[3]
    p, q = prv[m], nxt[m]
    if p >= 0:
        nxt[p] = q
    else:
        meta[HEAD] = q
    if q >= 0:
        prv[q] = p
    else:
        meta[TAIL] = p
    idle[m] = now
    a = meta[TAIL]  # insert after a: every key is <= (now, m) before it
    while a >= 0 and idle[a] == now and a > m:
        a = prv[a]
    if a < 0:
        b = meta[HEAD]
        meta[HEAD] = m
    else:
        b = nxt[a]
        nxt[a] = m
    prv[m] = a
    nxt[m] = b
    if b >= 0:
        prv[b] = m
    else:
        meta[TAIL] = m


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
    nxt = st[2]
    m = meta[HEAD]
    while m >= 0:
        if K.fits(core, job, m) and _runnable(core, job, cfg[m]):
            return m  # type: ignore[no-any-return]
        m = nxt[m]
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
    _relink(st, m, now)
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
    meta[HEAD] = 0 if N else -1
    meta[TAIL] = N - 1
    meta[PSIZE] = N
    nxt = np.arange(1, N + 1, dtype=np.int64)
    nxt[-1:] = -1
    prv = np.arange(-1, N - 1, dtype=np.int64)
    state = (
        meta,
        sched.idle_since,  # 1
        nxt,  # 2
        prv,  # 3
        np.array(sim.view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),  # 4
        np.arange(N, dtype=np.int64),  # 5 the one-slot pool
    )
    # lowest-index asks for first fits: the max tree; longest-idle walks its own order.
    return Kernel(step=step, state=state, tree=bool(meta[LONGEST] == 0 and meta[SINGLE] == 0))
