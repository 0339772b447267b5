"""Greedy's compiled kernel: the decisions of :class:`~simcore.schedulers.greedy.Greedy`, in numba.

The specification's data structures: per-machine FIFO queues (a linked list
over jobs), machines in buckets by queue length per configuration with the
same swap-remove order (in a hash table of fixed size, see ``_slot``) (a tie is broken by position
in those buckets, so their order must be the specification's), and the
same uniform draws in the same order (the driver refills the buffer from
the run's generator in batches of ``DRAW_BATCH``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, njit

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.greedy import Greedy

# -- the buckets, as the specification keeps them, without allocation --------------------------
# Bucket (c, L) is ``b = L * n_cfg + c``; its machines keep the specification's list order
# (append, pop the last, move the last into a removed one's place). Every machine is in
# exactly one bucket, so an open-addressing table of fixed size holds them all:
# key ``b * S + p + 1`` -> the machine at position p, key ``b * S`` -> the bucket's size
# (absent when empty), with S = machines + 1. At most 2N keys live at once in 4N+ slots.


_EMPTY = -1
_MIX = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64 (Fibonacci hashing)


class Buckets(NamedTuple):
    """The buckets' table (see above): helpers that keep the buckets take these four arrays only."""

    keys: Any  #: the table's keys (see _slot)
    vals: Any  #: and values
    pos: Any  #: each machine's position in its bucket
    stride: Any  #: [S], the key stride of a bucket


class GreedyState(NamedTuple):
    """Greedy's arrays (built by :func:`make`): its queues, buckets and draws."""

    qhead: Any  #: each machine's FIFO queue: its first job (-1: empty)
    qtail: Any  #: and last job
    qnext: Any  #: the job after each queued job
    qlen: Any  #: jobs waiting per machine
    minlen: Any  #: per configuration, the shortest queue of its machines
    buckets: Buckets  #: machines by (configuration, queue length), in the specification's order
    cfg: Any  #: each machine's configuration
    cfg_cap: Any  #: capacity per configuration (C x R)
    present: Any  #: configurations with machines
    ranges: Any  #: per configuration, its machines' range (C x 2)
    draws: Any  #: uniform draws (refilled by the driver)
    tied: Any  #: scratch: tied configurations
    unrunnable: Any  #: [jobs no machine can run]
    filled: Any  #: [1 once the buckets are filled] (by the kernel's first call, see _fill)


@inline
def _slot(keys: Any, key: int) -> int:
    """Where ``key`` is, or the empty slot where it would go (linear probing)."""
    mask = len(keys) - 1
    h = key * _MIX
    i = (h ^ (h >> 29)) & mask
    while keys[i] != _EMPTY and keys[i] != key:
        i = (i + 1) & mask
    return i


@inline
def _get(keys: Any, vals: Any, key: int) -> int:
    i = _slot(keys, key)
    return vals[i] if keys[i] == key else 0


@inline
def _put(keys: Any, vals: Any, key: int, v: int) -> None:
    i = _slot(keys, key)
    keys[i] = key
    vals[i] = v


@inline
def _delete(keys: Any, vals: Any, key: int) -> None:
    """Remove ``key`` (present), shifting later entries of its probe run back (no tombstones)."""
    mask = len(keys) - 1
    i = _slot(keys, key)
    j = i
    while True:
        j = (j + 1) & mask
        if keys[j] == _EMPTY:
            break
        h = keys[j] * _MIX
        k = (h ^ (h >> 29)) & mask
        # keys[j] may move to i unless its home k lies cyclically in (i, j]
        if (i <= j and i < k <= j) or (i > j and (k > i or k <= j)):
            continue
        keys[i] = keys[j]
        vals[i] = vals[j]
        i = j
    keys[i] = _EMPTY


@inline
def _bsize(bk: Any, b: int) -> int:
    return _get(bk.keys, bk.vals, b * bk.stride[0])


@inline
def _bget(bk: Any, b: int, p: int) -> int:
    return _get(bk.keys, bk.vals, b * bk.stride[0] + p + 1)


@inline
def _bappend(bk: Any, b: int, m: int) -> None:
    keys, vals, pos, S = bk.keys, bk.vals, bk.pos, bk.stride[0]
    size = _get(keys, vals, b * S)
    _put(keys, vals, b * S + size + 1, m)
    _put(keys, vals, b * S, size + 1)
    pos[m] = size


@inline
def _bremove(bk: Any, b: int, m: int) -> None:
    """``last = bucket.pop(); if last != m: bucket[pos[m]] = last``, as the specification does."""
    keys, vals, pos, S = bk.keys, bk.vals, bk.pos, bk.stride[0]
    size = _get(keys, vals, b * S)
    last = _get(keys, vals, b * S + size)
    _delete(keys, vals, b * S + size)
    if last != m:
        p = pos[m]
        _put(keys, vals, b * S + p + 1, last)
        pos[last] = p
    if size == 1:
        _delete(keys, vals, b * S)
    else:
        _put(keys, vals, b * S, size - 1)


@inline
def _fill(st: Any) -> None:
    """Every machine into bucket (its configuration, 0), in machine order, once (the kernel's first call)."""
    if st.filled[0] == 1:
        return
    cfg = st.cfg
    for m in range(len(cfg)):
        _bappend(st.buckets, cfg[m], m)  # bucket (c, 0) is c
    st.filled[0] = 1


@inline
def _move(qlen: Any, minlen: Any, cfg: Any, bk: Any, m: int, step: int) -> None:
    """``Greedy._move``: machine m's queue length changes by ``step``, buckets kept in the same order."""
    n_cfg = len(minlen)
    c = cfg[m]
    old = qlen[m]
    new = old + step
    qlen[m] = new
    _bremove(bk, old * n_cfg + c, m)
    _bappend(bk, new * n_cfg + c, m)
    if step > 0:
        if old == minlen[c] and _bsize(bk, old * n_cfg + c) == 0:
            minlen[c] = new
    elif new < minlen[c]:
        minlen[c] = new


@inline
def _shortest_queue(core: Any, st: Any, job: int) -> int:
    """``Greedy._shortest_queue``: fewest waiting jobs among machines that could hold and run ``job``."""
    minlen, cfg_cap, present, draws, tied = st.minlen, st.cfg_cap, st.present, st.draws, st.tied
    n_cfg = len(minlen)
    req = core.req
    ctr = core.ctr
    dims = core.dims
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
            if not K.fits_one(cfg_cap[c, r], req[jb + r]):
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
            total = _bsize(st.buckets, L * n_cfg + c)
        elif L == best:
            tied[ntied] = c
            ntied += 1
            total += _bsize(st.buckets, L * n_cfg + c)
    if best < 0:
        return -1
    if total == 1:
        return _bget(st.buckets, best * n_cfg + tied[0], 0)
    u = draws[ctr[K.DRAW]]
    ctr[K.DRAW] += 1
    k = int(u * total)
    for i in range(ntied):
        b = best * n_cfg + tied[i]
        size = _bsize(st.buckets, b)
        if k < size:
            return _bget(st.buckets, b, k)
        k -= size
    b = best * n_cfg + tied[ntied - 1]
    return _bget(st.buckets, b, _bsize(st.buckets, b) - 1)


@inline
def _runnable_first_fit(core: Any, ranges: Any, job: int) -> int:
    """First fit among the machines of configurations where ``job`` can run (``Greedy.on_arrival`` when the
    first machine it fits cannot run it), or -1."""
    for c in range(core.dims[K.D_CONFIGS]):
        lo, hi = ranges[c, 0], ranges[c, 1]
        if hi > lo and K.runnable_config(core, job, c):
            m = K.first_fit(core, job, lo, hi)
            if m >= 0:
                return m
    return -1


@inline
def _enqueue(qhead: Any, qtail: Any, qnext: Any, m: int, job: int) -> None:
    """``machine_queue[m].append(job)``."""
    qnext[job] = -1
    if qhead[m] < 0:
        qhead[m] = job
    else:
        qnext[qtail[m]] = job
    qtail[m] = job


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with Greedy's decisions (see :mod:`simcore.compiled.loop`).

    The arrival's and the completion's rules are written here, not in helpers of their own: a helper that
    LLVM does not inline copies the state tuples at every call (see :func:`simcore.compiled.jit.inline`).
    """
    ctr, fl, dims = core.ctr, core.fl, core.dims
    qhead, qtail, qnext, qlen, minlen, cfg, bk = st.qhead, st.qtail, st.qnext, st.qlen, st.minlen, st.cfg, st.buckets
    _fill(st)
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        if kind == K.EV_ARRIVAL and ctr[K.DRAW] >= len(st.draws):
            return K.S_DRAWS, hp
        fl[K.NOW] = t
        if kind == K.EV_ARRIVAL:
            # Greedy.on_arrival: the first machine where the job fits (and can run), else the shortest queue.
            job = K.arrive(core)
            m = K.first_fit(core, job, 0, dims[K.D_N])
            if m >= 0 and dims[K.D_ALL_RUNNABLE] == 0 and not K.can_run(core, job, m):
                m = _runnable_first_fit(core, st.ranges, job)
            if m >= 0:
                hp = K.start_inlined(core, hp, job, m)
            else:
                m = _shortest_queue(core, st, job)
                if m < 0:
                    st.unrunnable[0] += 1
                else:
                    _enqueue(qhead, qtail, qnext, m, job)
                    _move(qlen, minlen, cfg, bk, m, 1)
        else:
            # Greedy.on_completion: the machine's queue starts, head first, while its head fits.
            job, m = K.complete(core, hp)
            while qhead[m] >= 0 and K.fits(core, qhead[m], m):
                head = qhead[m]
                qhead[m] = qnext[head]
                hp = K.start_inlined(core, hp, head, m)
                if ctr[K.ERR] != 0:
                    return K.S_ERROR, hp
                _move(qlen, minlen, cfg, bk, m, -1)
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
    slots = 1
    while slots < 4 * (2 * N + 1):
        slots *= 2
    keys = np.full(slots, _EMPTY, dtype=np.int64)
    vals = np.zeros(slots, dtype=np.int64)
    pos = np.zeros(N, dtype=np.int64)
    unrunnable = np.zeros(1, dtype=np.int64)
    state = GreedyState(
        qhead=np.full(N, -1, dtype=np.int64),
        qtail=np.full(N, -1, dtype=np.int64),
        qnext=np.empty(sim.n_jobs, dtype=np.int64),
        qlen=np.zeros(N, dtype=np.int64),
        minlen=np.zeros(n_cfg, dtype=np.int64),
        buckets=Buckets(keys=keys, vals=vals, pos=pos, stride=np.array([N + 1], dtype=np.int64)),
        cfg=cfg,
        cfg_cap=np.ascontiguousarray(sim.cluster.capacity, dtype=np.float64),
        present=np.array(sched.cfg_present, dtype=np.int64),
        ranges=np.array(view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),
        draws=np.zeros(DRAW_BATCH),
        tied=np.zeros(n_cfg, dtype=np.int64),
        unrunnable=unrunnable,
        filled=np.zeros(1, dtype=np.int64),
    )

    def done() -> None:
        sched.unrunnable = int(unrunnable[0])

    return Kernel(step=step, state=state, draws=state.draws, done=done, fit_tree=True)
