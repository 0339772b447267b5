"""Greedy-1/2/3's compiled kernel: the decisions of :mod:`simcore.schedulers.greedy_profile`, in numba.

One kernel for the three variants: they differ only in the cost table, which is
``cost[k, g]`` over the pool's groups ``g = machine type * (K + 1) + last + 1``
(:mod:`simcore.schedulers._profile_queues.kernel`). Greedy-1 and Greedy-2's tables,
and the best cold cost on another machine type (the second-best choice with one
idle machine), are the specification's own methods evaluated once before the run.
Greedy-3's table is its learned one, updated at each completion with the
specification's arithmetic (running mean), and its other-type cost is recomputed
from it (the mean of the observed cold entries, summed in the same order).

Each decision is the specification's: per waiting type, the cheapest idle group
(first minimum in head order, so the longest-idle machine on ties), its benefit
over the second best; the oldest type (first by submit time, then type) names a
group; the type with the largest benefit among those naming it wins (ties: the
older head).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, inline_always, njit
from simcore.schedulers._profile_queues import kernel as Q

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.greedy_profile import _GreedyProfile


# meta slots: Greedy-3 learns (1) or not (0)
LEARN = Q.FLAGS
# st slots after the shared ones


class GreedyProfileState(NamedTuple):
    """Greedy-1/2/3's arrays (built by :func:`make`)."""

    q: Q.ProfileQueues  #: the queues and the idle pool
    cost: Any  #: cost[k, g] over the pool's groups
    other: Any  #: Greedy-1/2's other_type_cost(k, machine type)
    count: Any  #: Greedy-3's observations per entry
    present: Any  #: machine types in the cluster
    entry: Any  #: the cost entry each running job used (type * G + group; -1: none)
    init: Any  #: [initial_cost_s]
    best_i: Any  #: scratch: each type's best group (position in order)
    best_b: Any  #: scratch: its benefit


@inline
def _learned_cold(st: Any, k: int, j: int) -> float:
    """Greedy-3's ``cold_cost(k, j)``: mean of the observed entries with a cold cache."""
    cost, count = st.cost, st.count
    n_types = st.q.meta[Q.NK]
    base = j * (n_types + 1)
    s = 0.0
    n = 0
    for p in range(n_types + 1):
        if count[k, base + p] != 0 and p - 1 != k:
            s += cost[k, base + p]
            n += 1
    if n == 0:
        return st.init[0]  # type: ignore[no-any-return]
    return s / n


@inline
def _other_type_cost(st: Any, k: int, j: int) -> float:
    """``other_type_cost(k, j)``: the least cold cost on a present machine type other than ``j``."""
    if st.q.meta[LEARN] == 0:
        return st.other[k, j]  # type: ignore[no-any-return]
    present = st.present
    r = K.INF
    first = True
    for x in range(len(present)):
        c = present[x]
        if c == j:
            continue
        v = _learned_cold(st, k, c)
        if first or v < r:
            r = v
            first = False
    return r


@inline_always
def _decide(core: Any, hp: Any, st: Any) -> Any:
    """The decisions after each event, until no job waits or no machine is idle.

    Inlined by numba into ``step`` (its one call site): as a call it passed every array of ``core``
    and ``st`` at every event (about 330 words; the kernel ran 3 times slower than the patched build).
    """
    meta, qhead, qlen, order, gcount = st.q.meta, st.q.qhead, st.q.qlen, st.q.order, st.q.gcount
    cost, entry, best_i, best_b = st.cost, st.entry, st.best_i, st.best_b
    submit = core.submit
    ctr = core.ctr
    n_types = meta[Q.NK]
    while meta[Q.WAITING] > 0 and meta[Q.PSIZE] > 0:
        nord = meta[Q.NORD]
        oldest_k = -1
        oldest_t = K.INF
        for k in range(n_types):
            if qlen[k] == 0:
                continue
            b_i = 0
            b_cost = K.INF
            b_n = 0
            second = K.INF
            for i in range(nord):
                g = order[i]
                c = cost[k, g]
                if c < b_cost:
                    if b_cost < second:
                        second = b_cost
                    b_i, b_cost, b_n = i, c, gcount[g]
                elif c < second:
                    second = c
            if b_n >= 2:
                second = b_cost  # an identical machine is the second-best choice
            elif meta[Q.PSIZE] == 1:
                second = _other_type_cost(st, k, order[b_i] // (n_types + 1))
            best_i[k] = b_i
            best_b[k] = second - b_cost if second < K.INF else K.INF
            t = submit[qhead[k]]
            if t < oldest_t:
                oldest_t, oldest_k = t, k
        target = best_i[oldest_k]
        win_k = oldest_k
        win_b = best_b[oldest_k]
        win_t = oldest_t
        for k in range(n_types):
            if qlen[k] == 0 or best_i[k] != target or k == oldest_k:
                continue
            t = submit[qhead[k]]
            b = best_b[k]
            if b > win_b or (b == win_b and t < win_t):
                win_k, win_b, win_t = k, b, t
        job = Q.queue_pop(st.q, win_k)
        g = order[target]
        m = Q.pool_pop(st.q, target)
        entry[job] = win_k * cost.shape[1] + g  # (type, machine type, last + 1), for Greedy-3's learning
        hp = K.start_inlined(core, hp, job, m)
        if ctr[K.ERR] != 0:
            return hp
    return hp


@inline
def _learn(core: Any, st: Any, job: int) -> None:
    """Greedy-3's ``on_completion``: the running mean of the entry the job used."""
    cost, count, entry = st.cost, st.count, st.entry
    e = entry[job]
    entry[job] = -1
    G = cost.shape[1]
    k = e // G
    g = e - k * G
    observed = core.fl[K.NOW] - core.start_t[job]
    n = count[k, g] + 1
    count[k, g] = n
    old = cost[k, g] if n > 1 else 0.0
    cost[k, g] = old + (observed - old) / n


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with Greedy-1/2/3's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core.ctr
    fl = core.fl
    learn = st.q.meta[LEARN] == 1
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        fl[K.NOW] = t
        if kind == K.EV_ARRIVAL:
            Q.queue_push(core, st.q, K.arrive(core))
        else:
            job, m = K.complete(core, hp)
            if learn:
                _learn(core, st, job)
            Q.pool_add(core, st.q, m)
        hp = _decide(core, hp, st)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def make(sched: _GreedyProfile, sim: Simulation, learn: bool) -> Kernel:
    """The kernel state after ``setup``: the cost table as the scheduler's methods give it."""
    shared = Q.shared_state(sched, sim)
    meta = shared.meta
    n_types = int(meta[Q.NK])
    n_mtypes = int(meta[Q.NM])
    meta[LEARN] = 1 if learn else 0
    G = n_mtypes * (n_types + 1)
    if learn:
        # Greedy-3's own tables, (type, machine type, last + 1) flattened; copied back after the run.
        cost = np.array(sched.learned, dtype=np.float64).reshape(n_types, G)  # type: ignore[attr-defined]
        count = np.array(sched.count, dtype=np.int64).reshape(n_types, G)  # type: ignore[attr-defined]
        other = np.zeros((n_types, n_mtypes))
    else:
        cost = np.array(
            [[sched.cost(k, g // (n_types + 1), g % (n_types + 1) - 1) for g in range(G)] for k in range(n_types)],
            dtype=np.float64,
        ).reshape(n_types, G)
        count = np.zeros((n_types, G), dtype=np.int64)
        other = np.array(
            [[sched.other_type_cost(k, j) for j in range(n_mtypes)] for k in range(n_types)], dtype=np.float64
        ).reshape(n_types, n_mtypes)
    entry = np.full(max(sim.n_jobs, 1), -1, dtype=np.int64)
    state = GreedyProfileState(
        q=shared,
        cost=cost,
        other=other,
        count=count,
        present=np.array(sched.present, dtype=np.int64),
        entry=entry,
        init=np.array([getattr(sched, "initial_cost_s", 0.0)], dtype=np.float64),
        best_i=np.zeros(n_types, dtype=np.int64),
        best_b=np.zeros(n_types, dtype=np.float64),
    )

    def done() -> None:
        Q.restore(sched, state.q)
        if learn:
            sched.learned = cost.reshape(n_types, n_mtypes, n_types + 1).tolist()  # type: ignore[attr-defined]
            sched.count = count.reshape(n_types, n_mtypes, n_types + 1).tolist()  # type: ignore[attr-defined]
            running = np.flatnonzero(entry >= 0).tolist()
            sched.entry = {  # type: ignore[attr-defined]
                z: (e // G, (e % G) // (n_types + 1), (e % G) % (n_types + 1)) for z in running for e in [int(entry[z])]
            }

    return Kernel(step=step, state=state, done=done)
