"""LoTES's compiled kernel: the online dispatch of :class:`~simcore.schedulers.lotes.LoTESDispatcher`, in numba.

The offline plan (stages 1 and 2) is computed in Python by ``setup`` as
before; the kernel gets its result as arrays: the scores ``W = OFFSET + v``
(the scheduler's own array, so ``kappa`` reads the kernel's work), the
roulette wheels per class, the classes served per configuration and the
planned configurations per class. The specification's structures, kept
equivalent:

* "the fitting machine of highest v, ties to the lowest index" is the first
  strict maximum among the machines of the range that fit and can run
  (``W > 0`` always, so that is the specification's argmax of ``W x fits``),
  found by a depth-first search, left first, in a max tree of the class's
  scores that skips subtrees whose maximum is not above the best so far (the
  machines it meets are those a scan would take, in the same order);
* the class queues and the orphan queue are doubly linked lists over jobs in
  arrival order (a search resumes after the job it took, as the
  specification's ``idx + 1``), with a lower bound of their fit floors as
  the specification's ``min_floor`` shortcut;
* the uniforms are the same numbers in the same order: a ring of two blocks
  of ``U_BLOCK`` that starts with the block ``setup`` drew; before an arrival
  the kernel asks for the next block (``Kernel.refill``) when fewer remain
  than one arrival can use (one per planned configuration of a class), and
  the generator gives the same stream whatever the moment of the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, inline_always, njit

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.lotes.dispatch import LoTESDispatcher


# st.info (int64) slots: uniforms consumed, uniforms written, most an arrival uses, jobs queued, runtime mode
U_POS, U_AVAIL, U_MAX, N_QUEUED, MODE = 0, 1, 2, 3, 4
# The specification's runtime modes (dispatch.FIXED, CONFIG, GENERAL)
FIXED, CONFIG, GENERAL = 0, 1, 2


class LoTESState(NamedTuple):
    """LoTES's arrays (built by :func:`make`): its plan, wheels, queues and scratch."""

    W: Any  #: the scores W[k, m] (the specification's array, shared)
    labels: Any  #: each job's class
    woff: Any  #: wheel offsets per class
    wcfg: Any  #: wheel configurations
    wp: Any  #: wheel probabilities
    wcum: Any  #: their cumulative sums (the specification's floats)
    soff: Any  #: served classes per configuration: offsets
    served: Any  #: the classes themselves
    poff: Any  #: planned configurations per class: offsets
    pcfg: Any  #: the configurations themselves
    cfg_cap: Any  #: capacity per configuration (C x R)
    cfg_lo: Any  #: each configuration's first machine
    cfg_hi: Any  #: and its end
    ubuf: Any  #: the uniforms' ring
    info: Any  #: int64 slots U_POS... (above)
    qhead: Any  #: queue heads (class queues, then the orphans)
    qtail: Any  #: queue tails
    qnext: Any  #: next job in its queue
    qprev: Any  #: previous job
    qlen: Any  #: jobs per queue
    qfloor: Any  #: lower bound of each queue's fit floors
    untried: Any  #: scratch: wheel entries not yet tried
    prio: Any  #: scratch: the priority list
    v: Any  #: scratch: v per class
    resume: Any  #: scratch: where each class's search resumes
    wtree: Any  #: per class, a max tree of W over the machines (_best_machine)
    wdims: Any  #: [P, N] of the score trees


@inline
def _uniform(st: Any) -> float:
    ub = st.ubuf
    info = st.info
    u = ub[info[U_POS] % len(ub)]
    info[U_POS] += 1
    return u  # type: ignore[no-any-return]


@inline
def _best_machine(core: Any, st: Any, j: int, k: int, job: int) -> int:
    """``_best_machine``: the machine of configuration j (M: any) with the highest W among
    those where ``job`` fits (and can run); lowest index among ties; -1 if none."""
    W = st.W
    mode = st.info[MODE]
    dims = core.dims
    N = dims[K.D_N]
    M = len(st.cfg_lo)
    if j < M:
        if mode == CONFIG and not K.runnable_config(core, job, j):
            return -1
        lo, hi = st.cfg_lo[j], st.cfg_hi[j]
    else:
        lo, hi = 0, N
    best = -1
    best_w = 0.0
    # Depth-first over class k's max tree of W, left first, into subtrees whose maximum beats
    # the best fitting machine so far: the machines met are those a scan would take, in order.
    # Subtrees of at least a block where the engine's fit tree finds no machine with room for the
    # job are skipped (a scan would find none there either): on the paper-scale Figure 11 point a
    # search met 125 machines without room before one with room (W favours the machines the plan
    # left room for, not those that have it), and 350 nodes; the fit tree's nodes are this tree's
    # nodes of the same index (both cover the machines in halves, down to its blocks).
    wt = st.wtree
    P = st.wdims[0]
    use_ft = P == K.FT_BLOCK * dims[K.D_FTREE]
    if use_ft:
        K.ftree_query(core, job)
    base = k * 2 * P
    i = 1
    a = 0
    size = P
    while a < hi:
        if a + size > lo and wt[base + i] > best_w and (size < K.FT_BLOCK or not use_ft or K.ftree_may_fit(core, i)):
            if size > 1:
                i = 2 * i
                size >>= 1
                continue
            if K.fits(core, job, a) and (mode != GENERAL or K.can_run(core, job, a)):
                best = a
                best_w = W[k * N + a]
        while i & 1:  # up while a right child, then to the right sibling
            if i == 1:
                return best
            i >>= 1
            a -= size
            size <<= 1
        i += 1
        a += size
    return best


@inline
def _score_changed(st: Any, k: int, m: int) -> None:
    """W[k, m] changed: refresh its leaf in class k's max tree and the maxima above it."""
    W, wt = st.W, st.wtree
    P, N = st.wdims[0], st.wdims[1]
    base = k * 2 * P
    i = P + m
    wt[base + i] = W[k * N + m]
    i >>= 1
    while i >= 1:
        x = wt[base + 2 * i]
        y = wt[base + 2 * i + 1]
        v = x if x >= y else y
        if wt[base + i] == v:
            break  # the maxima above are unchanged too
        wt[base + i] = v
        i >>= 1


@inline
def _any_machine(core: Any, st: Any, k: int, job: int, skip_k: int) -> int:
    """``_any_machine``; ``skip_k`` >= 0: skip the configurations of class ``skip_k``'s wheel."""
    mode = st.info[MODE]
    M = len(st.cfg_lo)
    if skip_k < 0 and mode != CONFIG:
        return _best_machine(core, st, M, k, job)
    W = st.W
    N = core.dims[K.D_N]
    woff, wcfg = st.woff, st.wcfg
    best = -1
    best_w = 0.0
    for j in range(M):
        if st.cfg_lo[j] == st.cfg_hi[j]:
            continue
        if skip_k >= 0:
            skip = False
            for i in range(woff[skip_k], woff[skip_k + 1]):
                if wcfg[i] == j:
                    skip = True
                    break
            if skip:
                continue
        m = _best_machine(core, st, j, k, job)
        if m >= 0 and W[k * N + m] > best_w:
            best = m
            best_w = W[k * N + m]
    return best


@inline
def _started(core: Any, st: Any, m: int, k: int) -> None:
    """Job started on m (class k): v[k, m] has one less free slot, in the scores and their tree."""
    st.W[k * core.dims[K.D_N] + m] -= 1.0
    _score_changed(st, k, m)


@inline
def _fallback(core: Any, st: Any, job: int, k: int, tried: int) -> int:
    """``_fallback``'s choice: the other wheel configurations by roulette, then any machine with room; -1 if
    none (the caller starts the job, once, where the arrival's other choices start it)."""
    woff, wcfg, wp = st.woff, st.wcfg, st.wp
    left = st.untried
    base = woff[k]
    n = woff[k + 1] - base
    nl = 0
    for i in range(n):
        if i != tried:
            left[nl] = i
            nl += 1
    while nl > 0:
        s = 0.0
        for t in range(nl):
            s += wp[base + left[t]]
        u = _uniform(st) * s
        acc = 0.0
        pick = nl - 1
        for t in range(nl):
            acc += wp[base + left[t]]
            if u < acc:
                pick = t
                break
        c = wcfg[base + left[pick]]
        for t in range(pick, nl - 1):
            left[t] = left[t + 1]
        nl -= 1
        m = _best_machine(core, st, c, k, job)
        if m >= 0:
            return m
    return -1


@inline
def _push(core: Any, st: Any, q: int, job: int) -> None:
    qhead, qtail, qnext, qprev, qalive, qmin = st.qhead, st.qtail, st.qnext, st.qprev, st.qlen, st.qfloor
    req = core.req
    R = core.dims[K.D_R]
    K.list_append(qnext, qprev, qhead, q, qtail, q, job)
    qalive[q] += 1
    for r in range(R):
        f = K.fit_floor(req[job * R + r])
        if f < qmin[q, r]:
            qmin[q, r] = f
    st.info[N_QUEUED] += 1


@inline
def _unlink(st: Any, q: int, job: int) -> None:
    qhead, qtail, qnext, qprev, qalive, qmin = st.qhead, st.qtail, st.qnext, st.qprev, st.qlen, st.qfloor
    K.list_unlink(qnext, qprev, qhead, q, qtail, q, job)
    qalive[q] -= 1
    if qalive[q] == 0:
        for r in range(qmin.shape[1]):
            qmin[q, r] = K.INF
    st.info[N_QUEUED] -= 1


@inline
def _first_runnable(core: Any, st: Any, q: int, node: int, m: int) -> int:
    """The first queued job from ``node`` on that fits on ``m`` and can run there, or -1."""
    qmin = st.qfloor
    free = core.free
    dims = core.dims
    N = dims[K.D_N]
    for r in range(dims[K.D_R]):
        if not K.reaches(free[r * N + m], qmin[q, r]):
            return -1  # below every queued job's floor (the specification's min_floor)
    fixed = st.info[MODE] == FIXED
    qnext = st.qnext
    while node >= 0:
        if K.fits(core, node, m) and (fixed or K.can_run(core, node, m)):
            return node
        node = qnext[node]
    return -1


@inline
def _enqueue(core: Any, st: Any, job: int, k: int) -> None:
    poff, pcfg, cap = st.poff, st.pcfg, st.cfg_cap
    req = core.req
    R = core.dims[K.D_R]
    fixed = st.info[MODE] == FIXED
    planned = False
    for i in range(poff[k], poff[k + 1]):
        c = pcfg[i]
        ok = True
        for r in range(R):
            if not K.fits_one(cap[c, r], req[job * R + r]):
                ok = False
                break
        if ok and (fixed or K.runnable_config(core, job, c)):
            planned = True
            break
    K_ = len(st.woff) - 1
    _push(core, st, k if planned else K_, job)


@inline_always
def _arrival(core: Any, hp: Any, st: Any, job: int) -> Any:
    """``on_arrival``: the wheel's configuration, else ``_fallback``'s, else any machine; else the queue.

    One site starts the job (each site is a copy of ``core.start``'s code): the specification's
    choices are made in its order, and the first machine found is started.
    """
    k = st.labels[job]
    woff, wcfg, wcum = st.woff, st.wcfg, st.wcum
    base = woff[k]
    n = woff[k + 1] - base
    if n > 0:
        u = _uniform(st)
        idx = 0
        while idx < n and wcum[base + idx] <= u:  # bisect_right
            idx += 1
        if idx >= n:
            idx = n - 1
        m = _best_machine(core, st, wcfg[base + idx], k, job)
        if m < 0:
            m = _fallback(core, st, job, k, idx)
        if m < 0:  # any remaining machine (configurations off the wheel): highest v, lowest index
            m = _any_machine(core, st, k, job, k)
    else:
        m = _any_machine(core, st, k, job, -1)
    if m >= 0:
        hp = K.start_inlined(core, hp, job, m)
        _started(core, st, m, k)
        return hp
    _enqueue(core, st, job, k)
    return hp


@inline_always
def _completion(core: Any, hp: Any, st: Any, job: int, m: int) -> Any:
    """``on_completion``: machine m's score back, then its queued jobs by class priority, then orphans."""
    W, labels = st.W, st.labels
    N = core.dims[K.D_N]
    W[labels[job] * N + m] += 1.0
    _score_changed(st, labels[job], m)
    if st.info[N_QUEUED] == 0:
        return hp
    soff, served = st.soff, st.served
    qhead, qnext, qalive = st.qhead, st.qnext, st.qlen
    order, v, pos = st.prio, st.v, st.resume
    Kc = len(st.woff) - 1
    ctr = core.ctr
    j = core.config_of[m]
    n = 0
    for i in range(soff[j], soff[j + 1]):
        k = served[i]
        if qalive[k] > 0:
            # insertion by -v, stable: after every class of v at least as high
            vk = W[k * N + m]
            t = n
            while t > 0 and v[order[t - 1]] < vk:
                order[t] = order[t - 1]
                t -= 1
            order[t] = k
            v[k] = vk
            pos[k] = qhead[k]
            n += 1
    if n == 0 and qalive[Kc] == 0:
        return hp
    # The specification's two loops, the classes by priority and then the orphans, as one loop with one
    # start (each site that starts a job is a copy of ``core.start``'s code): the same jobs, in order.
    h = 0  # order[h:n] is the specification's list
    node = -2  # where the orphans' search resumes (-2: not begun; it begins at their queue's head)
    while True:
        if h < n:
            q = order[h]
            z = _first_runnable(core, st, q, pos[q], m)
            if z < 0:
                h += 1  # nothing more of this class fits here
                continue
            k = q
        else:
            if qalive[Kc] == 0:
                break
            if node == -2:
                node = qhead[Kc]
            q = Kc
            z = _first_runnable(core, st, Kc, node, m)
            if z < 0:
                break
            k = labels[z]
        nxt = qnext[z]
        _unlink(st, q, z)
        hp = K.start_inlined(core, hp, z, m)
        _started(core, st, m, k)
        if ctr[K.ERR] != 0:
            return hp
        if q == Kc:
            node = nxt
        else:
            pos[k] = nxt
            v[k] -= 1.0
            t = h  # the class moves down past classes whose v is now strictly higher
            while t + 1 < n and v[order[t + 1]] > v[k]:
                order[t], order[t + 1] = order[t + 1], order[t]
                t += 1
    return hp


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with LoTES's online decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core.ctr
    fl = core.fl
    info = st.info
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        if kind == K.EV_ARRIVAL and info[U_AVAIL] - info[U_POS] < info[U_MAX]:
            return K.S_DRAWS, hp
        fl[K.NOW] = t
        if kind == K.EV_ARRIVAL:
            hp = _arrival(core, hp, st, K.arrive(core))
        else:
            job, m = K.complete(core, hp)
            hp = _completion(core, hp, st, job, m)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def _flat(rows: list[list[Any]], dtype: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Ragged rows as (offsets, values)."""
    off = np.zeros(len(rows) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(r) for r in rows])
    vals = np.array([x for r in rows for x in r], dtype=dtype)
    return off, vals


def make(sched: LoTESDispatcher, sim: Simulation) -> Kernel:
    """The kernel's state from what :meth:`LoTESDispatcher.setup` built (the plan, scores, first uniforms)."""
    from simcore.schedulers.lotes.dispatch import U_BLOCK

    R = sim.view.n_resources
    M = sim.view.n_configs
    plan = sched.plan
    assert plan is not None
    Kc = plan.classes.n_classes
    W = sched._W.reshape(-1)  # a view: kappa and v() read the kernel's work
    assert np.shares_memory(W, sched._W)
    woff, wcfg = _flat(sched._wheel_cfg, np.int64)
    _, wp = _flat(sched._wheel_p, np.float64)
    _, wcum = _flat(sched._wheel_cum, np.float64)
    soff, served = _flat(sched._served_by_cfg, np.int64)
    poff, pcfg = _flat(sched._planned_cfgs, np.int64)
    N = sim.n_machines
    wt, P = _score_trees(sched._W.reshape(Kc, N))
    ubuf = np.zeros(2 * U_BLOCK)
    ubuf[:U_BLOCK] = sched._u
    most = max([len(c) for c in sched._wheel_cfg] + [1])
    info = np.array([sched._ui, U_BLOCK, most, 0, sched._mode], dtype=np.int64)
    state = LoTESState(
        W=W,
        labels=np.ascontiguousarray(sched.labels, dtype=np.int64),
        woff=woff,  # wheel offsets per class
        wcfg=wcfg,  # wheel configurations
        wp=wp,  # wheel probabilities
        wcum=wcum,  # their cumulative sums (the specification's floats)
        soff=soff,  # served classes per configuration: offsets
        served=served,
        poff=poff,  # planned configurations per class: offsets
        pcfg=pcfg,
        cfg_cap=np.ascontiguousarray(sim.cluster.capacity, dtype=np.float64),
        cfg_lo=np.array([lo for lo, _ in sim.view.config_ranges], dtype=np.int64),
        cfg_hi=np.array([hi for _, hi in sim.view.config_ranges], dtype=np.int64),
        ubuf=ubuf,  # the uniforms' ring
        info=info,
        qhead=np.full(Kc + 1, -1, dtype=np.int64),  # queue heads (class queues, then the orphans)
        qtail=np.full(Kc + 1, -1, dtype=np.int64),  # queue tails
        qnext=np.full(max(sim.n_jobs, 1), -1, dtype=np.int64),  # next job in its queue
        qprev=np.full(max(sim.n_jobs, 1), -1, dtype=np.int64),  # previous job
        qlen=np.zeros(Kc + 1, dtype=np.int64),  # jobs per queue
        qfloor=np.full((Kc + 1, R), np.inf),  # lower bound of each queue's fit floors
        untried=np.zeros(max(M, 1), dtype=np.int64),  # scratch: wheel entries not yet tried
        prio=np.zeros(max(Kc, 1), dtype=np.int64),  # scratch: the priority list
        v=np.zeros(max(Kc, 1)),  # scratch: v per class
        resume=np.zeros(max(Kc, 1), dtype=np.int64),  # scratch: where each class's search resumes
        wtree=wt,  # per class, a max tree of W over the machines (_best_machine)
        wdims=np.array([P, N], dtype=np.int64),
    )
    rng = sched.rng

    def refill() -> None:
        at = int(info[U_AVAIL]) % len(ubuf)
        ubuf[at : at + U_BLOCK] = rng.random(U_BLOCK)
        info[U_AVAIL] += U_BLOCK

    def done() -> None:
        _queues_back(sched, state, sim.view.request)

    return Kernel(step=step, state=state, refill=refill, done=done, fit_tree=True)


def _score_trees(W: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], int]:
    """Per class, a max tree of its scores over the machines (flat), and its leaf count P: leaf P + m holds
    ``W[k, m]`` (-inf past the last machine), each inner node the larger of its children."""
    Kc, N = W.shape
    P = 1
    while P < N:
        P *= 2
    trees = np.full((Kc, 2 * P), -np.inf)
    trees[:, P : P + N] = W
    lo = P // 2
    while lo >= 1:
        np.maximum(trees[:, 2 * lo : 4 * lo : 2], trees[:, 2 * lo + 1 : 4 * lo : 2], out=trees[:, lo : 2 * lo])
        lo //= 2
    return trees.reshape(-1), P


def _queues_back(sched: LoTESDispatcher, state: LoTESState, request: np.ndarray[Any, Any]) -> None:
    """The Python queues as the specification leaves them after the run (jobs still waiting, in arrival order)."""
    from simcore.schedulers.lotes.queues import ClassQueue

    sched.n_queued = int(state.info[N_QUEUED])
    qhead, qnext = state.qhead, state.qnext
    Kc = len(qhead) - 1
    R = request.shape[1]
    for q in range(Kc + 1):
        fresh = ClassQueue(R)
        z = int(qhead[q])
        while z >= 0:
            fresh.push(z, request[z])
            z = int(qnext[z])
        if q < Kc:
            sched.queues[q] = fresh
        else:
            sched.orphans = fresh
