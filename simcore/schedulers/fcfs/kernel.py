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
* ``longest-idle`` prunes that search with a second tree over the same
  leaves, of each machine's least free capacity over its resources (its
  "key"; the maxima above). Idle order interleaves the configurations, so a
  subtree's per-resource maxima often come from different machines, each
  full in another resource (the front of the order is machines that filled
  up: FCFS packs the one free longest until nothing more fits), and pass
  while no machine of the subtree fits: without the key a search backtracked
  through about 2,400 nodes on the ``google`` bench. A machine that fits has
  a key at least the least of the job's floors, so a subtree below that is
  skipped; it is a necessary condition only, the per-resource maxima and the
  fit rule still decide. With it a search visits about 32 nodes there. (One
  idle order per configuration, searched one configuration after the other,
  also stops the interleaving but costs a search per configuration: without
  the key it was still slower than Greedy, with it slower than one order with it.)
* A head that fitted nowhere stays blocked until a completion: only the
  machine that completed has more free capacity than at the failed search,
  so only it is examined (as the specification does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, inline_always, njit

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.fcfs import FCFS


# st.meta (int64) slots
SINGLE, LONGEST, QHEAD, BLOCKED, CNT, KEYS, PSTART, PSIZE = 0, 1, 2, 3, 4, 5, 6, 7


class FCFSState(NamedTuple):
    """FCFS's arrays (built by :func:`make`): its flags and the idle order."""

    meta: Any  #: int64 flags and counters (the slots above)
    idle_since: Any  #: each machine's idle time (the specification's own array, shared)
    ranges: Any  #: per configuration, its machines' range (C x 2)
    pool: Any  #: the one-slot pool
    last_back: Any  #: the time of the last move to the back
    keys: Any  #: the key tree (see the docstring)


# The small helpers take the arrays they read, not ``core``: LLVM inlines them, and one that it does not
# costs a call of a few dozen words.


@inline_always
def _least_free(free: Any, dims: Any, m: int) -> float:
    """Machine m's least free capacity over its resources (``-inf`` for no machine: an empty leaf)."""
    if m < 0:
        return -K.INF
    N = dims[K.D_N]
    v = free[m]
    for r in range(1, dims[K.D_R]):
        x = free[r * N + m]
        if x < v:
            v = x
    return v  # type: ignore[no-any-return]


@inline_always
def _key_leaf(free: Any, dims: Any, machine_at: Any, key: Any, leaf: int) -> None:
    """Refresh a leaf's key from the machine it holds, and the maxima above it.

    The climb stops at the first node whose maximum does not change: the ones above it
    then do not change either.
    """
    i = dims[K.D_TREE] + leaf
    key[i] = _least_free(free, dims, machine_at[leaf])
    i >>= 1
    while i >= 1:
        a = key[2 * i]
        b = key[2 * i + 1]
        v = a if a >= b else b
        if key[i] == v:
            break
        key[i] = v
        i >>= 1


@inline_always
def _leaf(tree: Any, free: Any, dims: Any, machine_at: Any, key: Any, leaf: int) -> None:
    """A leaf now holds another machine (or none): refresh both trees above it.

    As :func:`~simcore.compiled.core.tree_leaf` for the engine's tree, but each climb stops
    at the first node whose maximum does not change.
    """
    N = dims[K.D_N]
    m = machine_at[leaf]
    for r in range(dims[K.D_R]):
        i = dims[K.D_TREE] + leaf
        tree[r, i] = free[r * N + m] if m >= 0 else -K.INF
        i >>= 1
        while i >= 1:
            a = tree[r, 2 * i]
            b = tree[r, 2 * i + 1]
            v = a if a >= b else b
            if tree[r, i] == v:
                break
            tree[r, i] = v
            i >>= 1
    _key_leaf(free, dims, machine_at, key, leaf)


@inline_always
def _changed(core: Any, st: Any, m: int) -> None:
    """Machine m's free capacity changed (a start; the engine refreshed its own tree)."""
    if st.meta[LONGEST] == 1 and st.meta[SINGLE] == 0:
        _key_leaf(core.free, core.dims, core.machine_at, st.keys, core.leaf_of[m])


@inline
def _build_keys(free: Any, dims: Any, machine_at: Any, key: Any) -> None:
    """The key tree from scratch: every leaf, then each level from its children."""
    P = dims[K.D_TREE]
    for leaf in range(P):
        key[P + leaf] = _least_free(free, dims, machine_at[leaf])
    for i in range(P - 1, 0, -1):
        a = key[2 * i]
        b = key[2 * i + 1]
        key[i] = a if a >= b else b


@inline
def _compact(meta: Any, tree: Any, free: Any, dims: Any, leaf_of: Any, mat: Any, key: Any) -> None:
    """Leaves exhausted: close the gaps moved machines left, in order, and rebuild the tree."""
    P = dims[K.D_TREE]
    w = 0
    for leaf in range(meta[CNT]):
        m = mat[leaf]
        if m >= 0:
            mat[w] = m
            leaf_of[m] = w
            w += 1
    for leaf in range(w, P):
        mat[leaf] = -1
    meta[CNT] = w
    # Both trees from scratch, a level at a time (each node once; a climb from every leaf
    # would redo the upper levels P times).
    N = dims[K.D_N]
    for r in range(dims[K.D_R]):
        for leaf in range(P):
            x = mat[leaf]
            tree[r, P + leaf] = free[r * N + x] if x >= 0 else -K.INF
        for i in range(P - 1, 0, -1):
            a = tree[r, 2 * i]
            b = tree[r, 2 * i + 1]
            tree[r, i] = a if a >= b else b
    _build_keys(free, dims, mat, key)


@inline_always
def _to_back(core: Any, st: Any, m: int, now: float) -> None:
    """Machine m's last job finished at ``now``: move it to its place in the ``(idle_since, index)`` order.

    Times never decrease, so that place is at the end, before only machines that became
    free at the same instant with a higher index (the leaves after them shift right).
    """
    meta, idle, last_t, key = st.meta, st.idle_since, st.last_back, st.keys
    tree, free, dims = core.tree, core.free, core.dims
    lof, mat = core.leaf_of, core.machine_at
    P = dims[K.D_TREE]
    old = lof[m]
    mat[old] = -1
    idle[m] = now
    if meta[CNT] == P:
        _compact(meta, tree, free, dims, lof, mat, key)  # rebuilds both trees, leaf ``old`` empty
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
    mat[p] = m
    lof[m] = p
    meta[CNT] = cnt + 1
    last_t[0] = now
    # The trees above the leaves that changed: ``old``, then p..cnt. A node's maximum is a function of its
    # leaves, so refreshing them after all the moves (each climb stopping at an unchanged node) leaves the
    # trees the moves' one-by-one refreshes left; one call site, so that numba copies ``_leaf`` once.
    for k in range(cnt - p + 2):
        _leaf(tree, free, dims, mat, key, old if k == 0 else p + k - 1)


@inline
def _runnable(core: Any, job: int, c: int) -> bool:
    return core.dims[K.D_ALL_RUNNABLE] == 1 or K.runnable_config(core, job, c)


@inline_always
def _idle_fit(tree: Any, key: Any, req: Any, dims: Any, stack: Any, job: int, lo: int, hi: int) -> int:
    """The lowest leaf in ``lo..hi-1`` whose machine fits ``job``, or -1.

    :func:`~simcore.compiled.core.tree_first_fit` with the key test first (see the module
    docstring). At a leaf the key test is implied by the fit test, so the leaf found is the
    first that fits.
    """
    R = dims[K.D_R]
    P = dims[K.D_TREE]
    jb = job * R
    least = K.fit_floor(req[jb])  # the least floor: a fitting machine's key reaches it
    for r in range(1, R):
        f = K.fit_floor(req[jb + r])
        if f < least:
            least = f
    # a node is (index, first leaf, size); at most two entries per level wait
    stack[0], stack[1], stack[2] = 1, 0, P
    sp = 1
    while sp > 0:
        sp -= 1
        node, a, size = stack[3 * sp], stack[3 * sp + 1], stack[3 * sp + 2]
        if a >= hi or a + size <= lo or not K.reaches(key[node], least):
            continue
        ok = True
        for r in range(R):
            if not K.fits_one(tree[r, node], req[jb + r]):
                ok = False
                break
        if not ok:
            continue
        if size == 1:
            return a  # type: ignore[no-any-return]
        half = size >> 1
        # right child first onto the stack, so the left one is examined first
        stack[3 * sp], stack[3 * sp + 1], stack[3 * sp + 2] = 2 * node + 1, a + half, half
        stack[3 * sp + 3], stack[3 * sp + 4], stack[3 * sp + 5] = 2 * node, a, half
        sp += 2
    return -1


@inline_always
def _next_start(core: Any, st: Any, mc: int) -> tuple[int, int]:
    """The queue's head and the machine it starts on now, or ``(-1, -1)``: it waits (multi-resource clusters).

    ``mc``: the machine a completion just freed (-1: none), the only one with more room than at a
    blocked head's failed search (as the specification examines only it). Otherwise the head takes,
    among the machines where it fits and can run (idle-machine time), the lowest numbered one or the
    one free longest; none: it is blocked until a completion.
    """
    meta = st.meta
    job = meta[QHEAD]
    if job >= core.ctr[K.ARRIVED]:
        return -1, -1
    if meta[BLOCKED] == job:
        if mc >= 0 and K.fits(core, job, mc) and _runnable(core, job, core.config_of[mc]):
            meta[BLOCKED] = -1
            meta[QHEAD] += 1
            return job, mc
        return -1, -1  # nothing has more room than at its failed search
    m = -1
    if meta[LONGEST] == 0:
        ranges = st.ranges
        for c in range(len(ranges)):
            lo, hi = ranges[c, 0], ranges[c, 1]
            if hi > lo and _runnable(core, job, c):
                m = K.first_fit(core, job, lo, hi)
                if m >= 0:
                    break
    else:
        # The leaves are in (idle_since, index) order: the first fitting leaf where the job can
        # run holds the machine free longest. A leaf whose machine cannot run it is passed over.
        mat = core.machine_at
        cnt = meta[CNT]
        lo = 0
        while True:
            leaf = _idle_fit(core.tree, st.keys, core.req, core.dims, core.tree_stack, job, lo, cnt)
            if leaf < 0:
                break
            if _runnable(core, job, core.config_of[mat[leaf]]):
                m = mat[leaf]
                break
            lo = leaf + 1
    if m < 0:
        meta[BLOCKED] = job
        return -1, -1
    meta[QHEAD] += 1
    return job, m


@inline_always
def _pool_take(core: Any, st: Any) -> tuple[int, int]:
    """One-slot machines: the queue's head and the idle machine it takes from the pool, in the
    specification's order, or ``(-1, -1)``."""
    meta, pool = st.meta, st.pool
    N = len(pool)
    if meta[QHEAD] >= core.ctr[K.ARRIVED] or meta[PSIZE] <= 0:
        return -1, -1
    job = meta[QHEAD]
    s0 = meta[PSTART]
    size = meta[PSIZE]
    i = 0
    if core.dims[K.D_ALL_RUNNABLE] != 1:
        i = -1
        for k in range(size):
            if K.can_run(core, job, pool[(s0 + k) % N]):
                i = k
                break
        if i < 0:
            return -1, -1
    m = pool[(s0 + i) % N]
    if meta[LONGEST] == 1 and i == 0:
        meta[PSTART] = (s0 + 1) % N
    else:
        for k in range(i, size - 1):  # close the gap (del pool[i])
            pool[(s0 + k) % N] = pool[(s0 + k + 1) % N]
    meta[PSIZE] = size - 1
    meta[QHEAD] += 1
    return job, m


@inline
def _release(meta: Any, pool: Any, m: int) -> None:
    """A one-slot machine is idle again: back into the pool (at the end, or in index order)."""
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


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with FCFS's decisions (see :mod:`simcore.compiled.loop`).

    An event, then the specification's dispatch: the queue's head starts, in arrival order, until
    one has no machine. Each stage has one call site here (see :func:`stage`).
    """
    ctr = core.ctr
    fl = core.fl
    meta = st.meta
    single = meta[SINGLE] == 1
    if meta[KEYS] == 0 and not single and meta[LONGEST] == 1:
        # the first call: the engine's tree was just built from its free capacity
        _build_keys(core.free, core.dims, core.machine_at, st.keys)
        meta[KEYS] = 1
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        fl[K.NOW] = t
        mc = -1  # the machine a completion freed
        if kind == K.EV_ARRIVAL:
            K.arrive(core)
        else:
            job, mc = K.complete(core, hp)
            if single:
                st.idle_since[mc] = t
                _release(meta, st.pool, mc)
            elif meta[LONGEST] == 1:
                _to_back(core, st, mc, t)  # refreshes the key of its old and new leaf
            else:
                st.idle_since[mc] = t
        while True:
            if single:
                job, m = _pool_take(core, st)
            else:
                job, m = _next_start(core, st, mc)
            if job < 0:
                break
            hp = K.start_inlined(core, hp, job, m)
            _changed(core, st, m)
            if ctr[K.ERR] != 0:
                break
            mc = -1
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
    multi = meta[SINGLE] == 0
    longest = bool(multi and meta[LONGEST] == 1)
    meta[CNT] = N  # leaves in use: at first machine i at leaf i (never used: idle since -inf, index order)
    state = FCFSState(
        meta=meta,
        idle_since=sched.idle_since,
        ranges=np.array(sim.view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),
        pool=np.arange(N, dtype=np.int64),  # the one-slot pool
        last_back=np.array([-np.inf]),  # the time of the last move to the back
        keys=np.full(2 * _tree_size(N, 2 * N) if longest else 1, -np.inf),  # the key tree (see the docstring)
    )
    # Multi-resource FCFS searches the engine's max tree; longest-idle with leaves in idle order,
    # twice as many as machines so that a move to the back seldom needs a compaction.
    return Kernel(step=step, state=state, tree=bool(multi), tree_leaves=2 * N if longest else 0)


def _tree_size(n_machines: int, leaves: int) -> int:
    """The engine's tree's number of leaves for ``leaves`` (``build_core``'s P): a power of two."""
    P = 1
    while P < max(n_machines, leaves):
        P *= 2
    return P
