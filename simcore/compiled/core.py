"""The engine's rules in compiled code: events, the fit rule, starts and completions.

A scheduler's kernel (its ``kernel.py``, beside its Python specification) is
one ``step`` function: the engine's event loop with the scheduler's decisions
inlined, built from the helpers here. Every helper does exactly what
:class:`simcore.core.engine.Simulation` does, in the same order and with the same
float operations, so a kernel that makes the specification's decisions gives
the same start time and machine for every job:

* events: the next completion (a binary heap ordered by ``(time, sequence)``,
  as the engine's ``heapq`` of tuples) unless the next arrival comes first;
  completions before arrivals at equal times; nothing past the horizon unless
  draining;
* :func:`start` checks what ``Simulation.start`` checks (arrived, queued, fits
  in every resource by the one fit rule ``free >= request - EPS``, a finite
  processing time) before changing anything: the capacity invariant holds in
  the compiled path too. A refused start sets an error code that the driver
  (:mod:`simcore.compiled.driver`) turns into the engine's ``SchedulingError``;
* :func:`complete` frees the machine (an idle machine exactly empty).

State is passed as one named tuple ``core`` (:class:`Core`) of the engine's own arrays (no copies:
the engine's view shows what a kernel did) and the heap as a tuple ``hp`` whose key array
a push may reallocate, which is why functions that start jobs return it.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from simcore.compiled.jit import inline, inline_always
from simcore.core.fit import EPS

# ctr (int64) slots
ARRIVED, STARTED, COMPLETED, SEQ, HSIZE, ERR, ERR_JOB, ERR_MACHINE, DRAW, SAMPLE = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
N_CTR = 10
# fl (float64) slots
NOW, HORIZON, DRAIN = 0, 1, 2
# dims (int64) slots
D_N, D_R, D_JOBS, D_MODE, D_ALL_RUNNABLE, D_CONFIGS, D_TREE = 0, 1, 2, 3, 4, 5, 6
# the fit tree (see ftree_first_fit): its leaf blocks (0: none), values per node
D_FTREE, D_FT_S = 7, 8
#: Machines per leaf block of the fit tree (a block is scanned, one cache line per resource).
FT_BLOCK = 8
# runtime model kinds (see simcore.compiled.driver.runtime_form)
FIXED, SPEED, RATE, PROFILE = 0, 1, 2, 3
# job states (the engine's)
QUEUED, RUNNING, DONE = 0, 1, 2
# error codes of start()
E_NOT_ARRIVED, E_NO_MACHINE, E_TWICE, E_NO_FIT, E_CANNOT_RUN = 1, 2, 3, 4, 5
# events
EV_COMPLETION, EV_ARRIVAL, EV_NONE = 0, 1, 2
# step() results (GO: no result yet, handle the event)
S_DONE, S_BUDGET, S_ERROR, S_DRAWS, S_GROW, GO = 0, 1, 2, 3, 4, -1
#: numpy's pairwise summation works on blocks of this many values.
PW_BLOCKSIZE = 128
#: Entries of row_sum's scratch: a range of n values waits at most at 2 log2(n / 128) + 1 places, far below this.
PW_DEPTH = 256

INF = math.inf
FIT_EPS = EPS


class Core(NamedTuple):
    """The engine's state as a kernel sees it (built by :func:`simcore.compiled.driver.build_core`).

    A named tuple, so a kernel reads ``core.free``, never a slot number: numba compiles a field by
    its name to the same code as a tuple's constant index. Per-machine rows are flat
    (``free[r * N + m]``), per-job requests too (``req[job * R + r]``).
    """

    free: Any  #: free capacity, R x N flat (the engine's own array)
    cap: Any  #: capacity, R x N flat
    req: Any  #: requests, jobs x R flat
    running: Any  #: jobs running per machine
    last: Any  #: the class of the last job each machine ran (-1: none)
    state: Any  #: each job's state (QUEUED, RUNNING, DONE)
    start_t: Any
    finish_t: Any
    machine_of: Any
    submit: Any  #: arrival times, ascending
    config_of: Any  #: each machine's configuration
    work: Any  #: the runtime model's work per job (see ``duration``)
    dcls: Any  #: its class per job
    tab: Any  #: its table (speeds, rates or warm times per class and configuration)
    tab2: Any  #: its second table (cold times of the profile model)
    ctr: Any  #: int64 counters: ARRIVED, STARTED, ... (the slot constants above)
    fl: Any  #: float64: NOW, HORIZON, DRAIN
    dims: Any  #: int64 sizes: D_N, D_R, ...
    job_class: Any
    tree: Any  #: the max tree (R x 2P; see ``tree_leaf``), or a stub
    tree_stack: Any  #: its search's stack
    leaf_of: Any  #: the tree leaf of each machine
    machine_at: Any  #: the machine at each leaf (-1: none)
    ft_nodes: Any  #: the fit tree's nodes (see ``ftree_block``)
    ft_weights: Any  #: its weight vectors (K x R flat)
    ft_thr: Any  #: scratch: a search's thresholds
    #: ``None`` or 1: whether the max tree / the fit tree is kept. Helpers pass them on as arguments and test them
    #: with ``is None``, which numba decides while compiling, so a kernel compiles only the structures it uses.
    tree_on: Any
    ftree_on: Any
    pw_stack: Any  #: row_sum's stack of pending ranges (three words each)
    pw_vals: Any  #: and of partial sums


@inline
def duration(core: Any, job: int, c: int, last_c: int) -> float:
    """``runtime.duration(job, c, last_c)`` of the workload's model (see ``runtime_form``)."""
    dims = core.dims
    mode = dims[D_MODE]
    work = core.work
    if mode == FIXED:
        return work[job]  # type: ignore[no-any-return]
    tab = core.tab
    if mode == SPEED:
        return work[job] * tab[0, c]  # type: ignore[no-any-return]
    k = core.dcls[job]
    if k < 0:
        k += tab.shape[0]  # the Python models index a list: -1 is the last row
    if mode == RATE:
        rate = tab[k, c]
        if rate <= 0:
            return INF
        return work[job] / rate  # type: ignore[no-any-return]
    if last_c == core.dcls[job]:
        return core.tab2[k, c]  # type: ignore[no-any-return]
    return tab[k, c]  # type: ignore[no-any-return]


@inline
def can_run(core: Any, job: int, m: int) -> bool:
    p = duration(core, job, core.config_of[m], core.last[m])
    return 0.0 <= p < INF


@inline
def runnable_config(core: Any, job: int, c: int) -> bool:
    """Whether ``job`` has a finite time on an idle machine of configuration ``c``."""
    p = duration(core, job, c, -1)
    return 0.0 <= p < INF


# -- the fit rule, once: every kernel compares free capacity with requests through these ------------


@inline
def fit_floor(request: float) -> float:
    """The least free capacity in which ``request`` fits: ``request - EPS`` (:func:`simcore.core.fit.fit_floor`)."""
    return request - FIT_EPS


@inline
def reaches(free: float, floor: float) -> bool:
    """Whether free capacity ``free`` reaches a fit floor (:func:`fit_floor`): the rule's comparison, ``>=``."""
    return free >= floor


@inline
def fits_one(free: float, request: float) -> bool:
    """The engine's fit rule in one resource: ``free >= request - EPS``."""
    return reaches(free, fit_floor(request))


@inline
def fits(core: Any, job: int, m: int) -> bool:
    """The engine's fit rule: ``free >= request - EPS`` in every resource."""
    free = core.free
    req = core.req
    dims = core.dims
    N = dims[D_N]
    R = dims[D_R]
    jb = job * R
    for r in range(R):
        if not fits_one(free[r * N + m], req[jb + r]):
            return False
    return True


@inline
def fits_floors(free: Any, N: int, R: int, m: int, floors: Any) -> bool:
    """The fit rule with the floors at hand: machine m's free capacity reaches ``floors[r]`` (a request minus
    the engine's tolerance, as :func:`fits` computes it) in every resource."""
    for r in range(R):
        if not reaches(free[r * N + m], floors[r]):
            return False
    return True


@inline
def first_fit(core: Any, job: int, lo: int, hi: int) -> int:
    """Lowest-numbered machine in ``lo..hi-1`` where ``job`` fits now, or -1 (``EngineView.first_fit``)."""
    return _first_fit(core.ftree_on, core.tree_on, core, job, lo, hi)


@inline
def _first_fit(ftree_on: Any, tree_on: Any, core: Any, job: int, lo: int, hi: int) -> int:
    """:func:`first_fit` through the structure the kernel keeps (``ftree_on``/``tree_on``: see :class:`Core`)."""
    if ftree_on is not None:
        return ftree_first_fit(core, job, lo, hi)
    if tree_on is not None:
        leaf = tree_first_fit(core, job, lo, hi)
        return core.machine_at[leaf] if leaf >= 0 else -1
    free = core.free
    req = core.req
    dims = core.dims
    N = dims[D_N]
    R = dims[D_R]
    jb = job * R
    if R == 2:
        f0 = fit_floor(req[jb])
        f1 = fit_floor(req[jb + 1])
        for m in range(lo, hi):
            if reaches(free[m], f0) and reaches(free[N + m], f1):
                return m
        return -1
    for m in range(lo, hi):
        ok = True
        for r in range(R):
            if not fits_one(free[r * N + m], req[jb + r]):
                ok = False
                break
        if ok:
            return m
    return -1


@inline
def free_changed(core: Any, m: int) -> None:
    """Machine m's free capacity changed: refresh the search structures the kernel keeps."""
    _refresh(core.tree_on, core.ftree_on, core, m)


@inline
def _refresh(tree_on: Any, ftree_on: Any, core: Any, m: int) -> None:
    if tree_on is not None:
        tree_set(core, m)
    if ftree_on is not None:
        ftree_set(core, m)


# -- a max tree over machines per resource: first fit in O(log N) instead of a scan ----------
# tree[r, P + leaf] is the free capacity in resource r of the machine at that leaf (-inf for
# none): leaf m holds machine m unless a kernel orders the leaves its own way (core.leaf_of maps
# machines to leaves, core.machine_at leaves to machines; FCFS orders them by idle time). tree[r, i]
# is the larger of its two children, so a subtree whose maximum in some resource is
# below the request's floor holds no fitting machine and is skipped. The comparisons are the
# fit rule's own (free >= request - EPS), so the first fit found is the scan's.


# Helpers that stay calls after LLVM's inlining take the few arrays they use, not ``core``: a call passes
# every array of a tuple it is given as separate words (seven an array, about 200 for ``core``).


@inline
def tree_leaf(core: Any, leaf: int) -> None:
    """Refresh a leaf from the machine it holds (``core.machine_at``; -1: empty, ``-inf``) and the maxima above it."""
    _tree_leaf(core.tree, core.free, core.dims, core.machine_at, leaf)


@inline
def _tree_leaf(tree: Any, free: Any, dims: Any, machine_at: Any, leaf: int) -> None:
    N = dims[D_N]
    P = dims[D_TREE]
    m = machine_at[leaf]
    for r in range(dims[D_R]):
        i = P + leaf
        tree[r, i] = free[r * N + m] if m >= 0 else -INF
        i >>= 1
        while i >= 1:
            a = tree[r, 2 * i]
            b = tree[r, 2 * i + 1]
            tree[r, i] = a if a >= b else b
            i >>= 1


@inline
def tree_set(core: Any, m: int) -> None:
    """Machine m's free capacity changed: refresh its leaf (``core.leaf_of``) and the maxima above it."""
    tree_leaf(core, core.leaf_of[m])


@inline
def tree_first_fit(core: Any, job: int, lo: int, hi: int) -> int:
    """The lowest leaf in ``lo..hi-1`` whose machine fits ``job``, or -1."""
    return _tree_search(core.tree, core.req, core.dims, core.tree_stack, job, lo, hi)


@inline
def _tree_search(tree: Any, req: Any, dims: Any, stack: Any, job: int, lo: int, hi: int) -> int:
    R = dims[D_R]
    P = dims[D_TREE]
    jb = job * R
    # Depth-first, left child first; a node is (index, first machine, size). The stack is
    # preallocated (core.tree_stack): at most two entries per level are waiting.
    stack[0], stack[1], stack[2] = 1, 0, P
    sp = 1
    while sp > 0:
        sp -= 1
        node, a, size = stack[3 * sp], stack[3 * sp + 1], stack[3 * sp + 2]
        if a >= hi or a + size <= lo:
            continue
        ok = True
        for r in range(R):
            if not fits_one(tree[r, node], req[jb + r]):
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


# -- the fit tree: first fit with little backtracking when there are several resources ----------
# The max tree above keeps each resource's maximum apart, so with two resources a subtree
# passes when one machine has the CPU and another the memory: in a nearly full cluster a
# search then visits hundreds of nodes (216 a search on the bench's google scenario). The
# fit tree also keeps, per node, the maximum over its machines of K combined values
# ``h_k(m) = min_r(w[k, r] * free[r, m])`` for weight vectors ``w[k]`` in the directions of
# typical requests (the driver picks them from the workload; any positive weights are
# correct, good ones only prune more). A machine where the job fits (``free >= f`` with
# ``f = request - EPS``) has ``h_k(m) >= min_r(w[k, r] * f[r])`` for every k, as rounded
# multiplication by a positive number and min are monotone: a node below that is skipped
# without losing a fit. Leaves are blocks of FT_BLOCK machines (machine order), scanned with
# the fit rule itself, so the machine found is the scan's. Layout: node i's S = R + K values
# at ``nodes[i * S : (i + 1) * S]`` (R maxima of free, then the K combined maxima, K =
# ``driver.FIT_TREE_K``, none for one resource) side by side; nodes 1..2B-1 over B blocks (a
# power of two), block b at B + b. Updates stop at the first node whose values are unchanged.
# core.ft_nodes nodes, core.ft_weights weights (K x R, flat), core.ft_thr scratch for a search's thresholds.


@inline
def ftree_block(core: Any, b: int) -> None:
    """Recompute block b's values from its machines and the maxima above it (until one is unchanged)."""
    _ftree_block(core.free, core.dims, core.ft_nodes, core.ft_weights, b)


@inline
def _ftree_block(free: Any, dims: Any, nodes: Any, w: Any, b: int) -> None:
    N = dims[D_N]
    R = dims[D_R]
    S = dims[D_FT_S]
    B = dims[D_FTREE]
    K = S - R
    i = B + b
    base = i * S
    for s in range(S):
        nodes[base + s] = -INF
    m0 = b * FT_BLOCK
    m1 = min(m0 + FT_BLOCK, N)
    for r in range(R):
        x = nodes[base + r]
        for m in range(m0, m1):
            v = free[r * N + m]
            if v > x:
                x = v
        nodes[base + r] = x
    for k in range(K):
        x = nodes[base + R + k]
        for m in range(m0, m1):
            h = w[k * R] * free[m]
            for r in range(1, R):
                v = w[k * R + r] * free[r * N + m]
                if v < h:
                    h = v
            if h > x:
                x = h
        nodes[base + R + k] = x
    i >>= 1
    while i >= 1:
        a = 2 * i * S
        changed = False
        for s in range(S):
            x = nodes[a + s]
            y = nodes[a + S + s]
            v = x if x >= y else y
            if v != nodes[i * S + s]:
                nodes[i * S + s] = v
                changed = True
        if not changed:
            break
        i >>= 1


@inline
def ftree_set(core: Any, m: int) -> None:
    """Machine m's free capacity changed: refresh its block and the nodes above it."""
    ftree_block(core, m // FT_BLOCK)


@inline
def ftree_query(core: Any, job: int) -> None:
    """A search's thresholds for ``job`` (``core.ft_thr``): its fit floors, then their combined values."""
    _ftree_query(core.req, core.dims, core.ft_weights, core.ft_thr, job)


@inline
def _ftree_query(req: Any, dims: Any, w: Any, thr: Any, job: int) -> None:
    R = dims[D_R]
    S = dims[D_FT_S]
    jb = job * R
    for r in range(R):
        thr[r] = fit_floor(req[jb + r])
    for k in range(S - R):
        h = w[k * R] * thr[0]
        for r in range(1, R):
            v = w[k * R + r] * thr[r]
            if v < h:
                h = v
        thr[R + k] = h


@inline
def ftree_may_fit(core: Any, i: int) -> bool:
    """Whether fit-tree node i may hold a machine where the job of :func:`ftree_query` fits (False: none)."""
    return _node_may_fit(core.ft_nodes, core.ft_thr, core.dims[D_FT_S], i)


@inline
def _node_may_fit(nodes: Any, thr: Any, S: int, i: int) -> bool:
    base = i * S
    for s in range(S):
        if not reaches(nodes[base + s], thr[s]):
            return False
    return True


@inline
def ftree_first_fit(core: Any, job: int, lo: int, hi: int) -> int:
    """The lowest machine in ``lo..hi-1`` where ``job`` fits now, or -1 (what a scan finds)."""
    return _ftree_search(core.free, core.req, core.dims, core.ft_nodes, core.ft_weights, core.ft_thr, job, lo, hi)


@inline
def _ftree_search(free: Any, req: Any, dims: Any, nodes: Any, w: Any, thr: Any, job: int, lo: int, hi: int) -> int:
    N = dims[D_N]
    R = dims[D_R]
    B = dims[D_FTREE]
    S = dims[D_FT_S]
    if hi > N:
        hi = N
    if lo < 0:
        lo = 0
    if lo >= hi:
        return -1
    _ftree_query(req, dims, w, thr, job)
    blo = lo // FT_BLOCK
    bhi = (hi - 1) // FT_BLOCK  # the last block, inclusive
    # Depth-first, left first, without a stack: node i holds blocks a..a+size-1.
    i = 1
    a = 0
    size = B
    while True:
        if a > bhi:
            return -1
        ok = a + size > blo and _node_may_fit(nodes, thr, S, i)
        if ok:
            if size > 1:
                i = 2 * i
                size >>= 1
                continue
            m0 = a * FT_BLOCK
            m1 = m0 + FT_BLOCK
            if m0 < lo:
                m0 = lo
            if m1 > hi:
                m1 = hi
            for m in range(m0, m1):
                if fits_floors(free, N, R, m, thr):
                    return m
        # next: up while a right child, then to the right sibling
        while i & 1:
            if i == 1:
                return -1
            i >>= 1
            a -= size
            size <<= 1
        i += 1
        a += size


# -- intrusive doubly linked lists over job (or slot) numbers ---------------------------------
# Kernels queue jobs in lists kept in arrays: ``nxt[z]``/``prv[z]`` link item z (-1: none), and a
# list's ends are ``heads[h]`` and ``tails[t]`` (one array of heads per family of lists, or two
# slots of one info array). Appending and unlinking are O(1) and allocate nothing.


@inline
def list_append(nxt: Any, prv: Any, heads: Any, h: int, tails: Any, t: int, z: int) -> None:
    """Append item ``z`` at the tail of the list whose ends are ``heads[h]`` and ``tails[t]``."""
    last = tails[t]
    nxt[z] = -1
    prv[z] = last
    if last >= 0:
        nxt[last] = z
    else:
        heads[h] = z
    tails[t] = z


@inline
def list_unlink(nxt: Any, prv: Any, heads: Any, h: int, tails: Any, t: int, z: int) -> None:
    """Take item ``z`` out of the list whose ends are ``heads[h]`` and ``tails[t]`` (its links are left)."""
    p, n = prv[z], nxt[z]
    if p >= 0:
        nxt[p] = n
    else:
        heads[h] = n
    if n >= 0:
        prv[n] = p
    else:
        tails[t] = p


# -- the completion heap: (time, sequence) keys ---------------------------------------------
# A 4-ary heap whose entries are two float64 side by side (the time, then the sequence number,
# exact below 2**53): a node's four children are 64 contiguous bytes, one cache line, where a
# binary heap of separate arrays misses the cache at every level (a run at load 0.9 on 10,000
# machines keeps about 100,000 jobs running). The job of an entry is ``job_of_seq[sequence]``:
# a job starts once, so sequence numbers and started jobs correspond one to one. Pop order is
# by (time, sequence) as the engine's heapq of tuples, so it is the same order.


@inline
def _less(hk: Any, a: int, b: int) -> bool:
    ta = hk[2 * a]
    tb = hk[2 * b]
    return ta < tb or (ta == tb and hk[2 * a + 1] < hk[2 * b + 1])  # type: ignore[no-any-return]


@inline
def _swap(hk: Any, a: int, b: int) -> None:
    hk[2 * a], hk[2 * b] = hk[2 * b], hk[2 * a]
    hk[2 * a + 1], hk[2 * b + 1] = hk[2 * b + 1], hk[2 * a + 1]


@inline
def heap_push(hp: Any, size: int, t: float, seq: int, job: int) -> Any:
    hk, jos = hp  # room is guaranteed by before_event (at most every queued job starts in one event)
    jos[seq] = job
    i = size
    hk[2 * i] = t
    hk[2 * i + 1] = float(seq)
    while i > 0:
        p = (i - 1) >> 2
        if _less(hk, i, p):
            _swap(hk, i, p)
            i = p
        else:
            break
    return (hk, jos)


@inline
def heap_pop(hp: Any, size: int) -> int:
    """Remove the least entry (``size`` > 0); returns its job."""
    hk, jos = hp
    job = jos[int(hk[1])]
    last = size - 1
    hk[0] = hk[2 * last]
    hk[1] = hk[2 * last + 1]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= last:
            break
        best = c
        stop = min(c + 4, last)
        for k in range(c + 1, stop):
            if _less(hk, k, best):
                best = k
        if _less(hk, best, i):
            _swap(hk, best, i)
            i = best
        else:
            break
    return job  # type: ignore[no-any-return]


@inline
def heap_top(hp: Any) -> float:
    return hp[0][0]  # type: ignore[no-any-return]


# -- the engine's actions ------------------------------------------------------------------


@inline
def fail(core: Any, code: int, job: int, m: int) -> None:
    ctr = core.ctr
    if ctr[ERR] == 0:
        ctr[ERR] = code
        ctr[ERR_JOB] = job
        ctr[ERR_MACHINE] = m


@inline
def start(core: Any, hp: Any, job: int, m: int) -> Any:
    """``Simulation.start(job, m)``: every check before any change; a refusal sets ``ctr[ERR]``."""
    free, req, running, last, state = core.free, core.req, core.running, core.last, core.state
    ctr = core.ctr
    dims = core.dims
    N = dims[D_N]
    R = dims[D_R]
    if job >= ctr[ARRIVED] or job < 0:
        fail(core, E_NOT_ARRIVED, job, m)
        return hp
    if m < 0 or m >= N:
        fail(core, E_NO_MACHINE, job, m)
        return hp
    if state[job] != QUEUED:
        fail(core, E_TWICE, job, m)
        return hp
    if not fits(core, job, m):
        fail(core, E_NO_FIT, job, m)
        return hp
    p = duration(core, job, core.config_of[m], last[m])
    if not (0.0 <= p < INF):
        fail(core, E_CANNOT_RUN, job, m)
        return hp
    jb = job * R
    for r in range(R):
        free[r * N + m] -= req[jb + r]
    free_changed(core, m)
    now = core.fl[NOW]
    state[job] = RUNNING
    running[m] += 1
    ctr[STARTED] += 1
    core.start_t[job] = now
    core.machine_of[job] = m
    ctr[SEQ] += 1
    hp = heap_push(hp, ctr[HSIZE], now + p, ctr[SEQ], job)
    ctr[HSIZE] += 1
    return hp


#: :func:`start`, copied into its caller by numba (:func:`~simcore.compiled.jit.inline_always`), for the one or
#: two places a kernel starts jobs on its per-event path. LLVM does not inline ``start`` (too large for its
#: threshold), and the call it leaves passes every array of ``core`` and ``hp`` as separate words (about 220 a
#: start). The rule stays written once, here. Keep the sites few: each is another copy of ``start`` to type,
#: lower and optimise (about 1.5 CPU-s of LoTES's first compile each).
start_inlined = inline_always(start)


@inline
def next_event(core: Any, hp: Any) -> tuple[int, float]:
    """The next event's kind and time, as the engine's loop picks it (``EV_NONE``: the run is over)."""
    ctr = core.ctr
    fl = core.fl
    i = ctr[ARRIVED]
    n = core.dims[D_JOBS]
    nxt = core.submit[i] if i < n else INF
    if ctr[HSIZE] > 0 and heap_top(hp) <= nxt:
        kind = EV_COMPLETION
        t = heap_top(hp)
    elif i < n:
        kind = EV_ARRIVAL
        t = nxt
    else:
        return EV_NONE, INF
    if t > fl[HORIZON] and fl[DRAIN] == 0.0:
        return EV_NONE, t
    return kind, t


@inline
def arrive(core: Any) -> int:
    """The next job arrives; returns it."""
    ctr = core.ctr
    ctr[ARRIVED] += 1
    return ctr[ARRIVED] - 1  # type: ignore[no-any-return]


@inline
def complete(core: Any, hp: Any) -> tuple[int, int]:
    """The earliest running job finishes now; its machine is freed. Returns ``(job, machine)``."""
    free, cap, req, running, last = core.free, core.cap, core.req, core.running, core.last
    ctr = core.ctr
    dims = core.dims
    N = dims[D_N]
    R = dims[D_R]
    job = heap_pop(hp, ctr[HSIZE])
    ctr[HSIZE] -= 1
    m = core.machine_of[job]
    left = running[m] - 1
    running[m] = left
    if left == 0:
        for r in range(R):
            free[r * N + m] = cap[r * N + m]  # an idle machine is exactly empty
    else:
        jb = job * R
        for r in range(R):
            free[r * N + m] += req[jb + r]
    free_changed(core, m)
    core.state[job] = DONE
    core.finish_t[job] = core.fl[NOW]
    ctr[COMPLETED] += 1
    last[m] = core.job_class[job]
    return job, m


# -- samples of the queue, running jobs and utilisation, as the Python loop takes them ---------


@inline
def _pairwise_block(a: Any, lo: int, n: int) -> float:
    """numpy's ``pairwise_sum`` of ``a[lo:lo+n]`` for ``n <= PW_BLOCKSIZE``: eight partial sums, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res  # type: ignore[no-any-return]


@inline
def row_sum(core: Any, a: Any, lo: int, n: int) -> float:
    """``a[lo:lo+n].sum()`` as numpy reduces a contiguous row, to the bit: its pairwise summation.

    numpy splits a range of more than ``PW_BLOCKSIZE`` values in two (the first part a multiple of
    eight values long), sums each part so, and adds the two sums. The same splits and additions here,
    with an explicit stack (``core.pw_stack``, ``core.pw_vals``) instead of recursion, which numba
    would compile as a function of its own.
    """
    if n <= PW_BLOCKSIZE:
        return _pairwise_block(a, lo, n)
    stk = core.pw_stack  # entries (first, count, 0: to sum | 1: add the two sums on top of vals)
    vals = core.pw_vals
    stk[0], stk[1], stk[2] = lo, n, 0
    sp = 1
    vp = 0
    while sp > 0:
        sp -= 1
        first, count, combine = stk[3 * sp], stk[3 * sp + 1], stk[3 * sp + 2]
        if combine == 1:
            vp -= 1
            vals[vp - 1] = vals[vp - 1] + vals[vp]  # the first part's sum plus the second's
        elif count <= PW_BLOCKSIZE:
            vals[vp] = _pairwise_block(a, first, count)
            vp += 1
        else:
            n2 = count // 2
            n2 -= n2 % 8
            # popped in reverse: the first part, then the second, then their addition
            stk[3 * sp], stk[3 * sp + 1], stk[3 * sp + 2] = first, count, 1
            stk[3 * sp + 3], stk[3 * sp + 4], stk[3 * sp + 5] = first + n2, count - n2, 0
            stk[3 * sp + 6], stk[3 * sp + 7], stk[3 * sp + 8] = first, n2, 0
            sp += 3
    return vals[0]  # type: ignore[no-any-return]


@inline
def take_sample(core: Any, smp: Any, si: int) -> None:
    """``Simulation._sample``: queue length, running jobs and utilisation per resource."""
    s_queue, s_running, s_util, total_cap, safe_cap = smp[1], smp[2], smp[3], smp[4], smp[5]
    ctr = core.ctr
    free = core.free
    dims = core.dims
    N = dims[D_N]
    s_queue[si] = ctr[ARRIVED] - ctr[STARTED]
    s_running[si] = ctr[STARTED] - ctr[COMPLETED]
    for r in range(dims[D_R]):
        s_util[si, r] = (total_cap[r] - row_sum(core, free, r * N, N)) / safe_cap[r]


@inline
def before_event(core: Any, hp: Any, smp: Any, done: int, budget: int) -> tuple[int, int, float]:
    """The loop's head: the next event, samples due before it, the chunk's budget.

    Returns ``(GO, kind, t)`` to handle the event, else ``(S_DONE, S_BUDGET or S_GROW, kind, t)``.
    """
    kind, t = next_event(core, hp)
    if kind == EV_NONE:
        return S_DONE, kind, t
    ctr = core.ctr
    sample_t = smp[0]
    n_s = len(sample_t)
    while ctr[SAMPLE] < n_s and t >= sample_t[ctr[SAMPLE]]:
        take_sample(core, smp, ctr[SAMPLE])
        ctr[SAMPLE] += 1
    if done >= budget:
        return S_BUDGET, kind, t
    # One event starts at most every queued job and the arriving one: the heap must have room for them.
    if 2 * (ctr[HSIZE] + ctr[ARRIVED] - ctr[STARTED] + 1) > len(hp[0]):
        return S_GROW, kind, t
    return GO, kind, t
