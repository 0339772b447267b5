"""Affinity's compiled kernel: the decisions of :class:`~simcore.schedulers.affinity.Affinity`, in numba.

The specification's queues and idle pool (:mod:`simcore.schedulers._profile_queues.kernel`),
and its two phases as it runs them:

* phase 1, hit group by hit group (database, or job type): the oldest waiting job
  of the group, by ``(submit, job)``, takes the first idle machine in head order
  whose last job type is in the group (``hitg``: each pool group's hit group);
* phase 2: the job types' heads, oldest first by ``(submit, type)`` (the
  specification's heap of tuples), each take the first idle machine in head order
  whose penalty (the specification's own table, ``penalty[k][type][last + 1]``)
  its wait covers, or every machine as a last resort; a type whose head fits
  nowhere is done for the pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline_always, njit
from simcore.schedulers._profile_queues import kernel as Q

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.affinity import Affinity


# meta slot: hit groups
NG = Q.FLAGS
# st slots after the shared ones


class AffinityState(NamedTuple):
    """Affinity's arrays (built by :func:`make`)."""

    q: Q.ProfileQueues  #: the queues and the idle pool
    pen: Any  #: penalty[k, g], g the pool group
    hitg: Any  #: the hit group of a pool group's last job type (-1: none)
    group_of: Any  #: each job type's group
    active: Any  #: scratch: types still in phase 2's heap


@inline_always
def _hits(core: Any, hp: Any, st: Any) -> Any:
    """Phase 1: cache hits, oldest job of each hit group first.

    Both phases run at every event: numba inlines them into ``step`` (their one call site each), where
    as calls each passed every array of ``core`` and ``st`` (328 words; 4-5 times slower than the patched build).
    """
    meta, qhead, qlen, order, hitg, group_of = st.q.meta, st.q.qhead, st.q.qlen, st.q.order, st.hitg, st.group_of
    submit = core.submit
    ctr = core.ctr
    n_types = meta[Q.NK]
    for g in range(meta[NG]):
        while meta[Q.PSIZE] > 0:
            best_k = -1
            best_s = 0.0
            best_j = 0
            for k in range(n_types):
                if group_of[k] != g or qlen[k] == 0:
                    continue
                j = qhead[k]
                s = submit[j]
                if best_k < 0 or s < best_s or (s == best_s and j < best_j):
                    best_k, best_s, best_j = k, s, j
            if best_k < 0:
                break
            hit = -1
            for i in range(meta[Q.NORD]):
                if hitg[order[i]] == g:
                    hit = i
                    break
            if hit < 0:
                break
            job = Q.queue_pop(st.q, best_k)
            hp = K.start_inlined(core, hp, job, Q.pool_pop(st.q, hit))
            if ctr[K.ERR] != 0:
                return hp
    return hp


@inline_always
def _waits(core: Any, hp: Any, st: Any) -> Any:
    """Phase 2: oldest head first, the first idle machine whose penalty its wait covers."""
    meta, qhead, qlen, order, pen, active = st.q.meta, st.q.qhead, st.q.qlen, st.q.order, st.pen, st.active
    submit = core.submit
    ctr = core.ctr
    n_types = meta[Q.NK]
    now = core.fl[K.NOW]
    last_resort = ctr[K.ARRIVED] == core.dims[K.D_JOBS] and ctr[K.STARTED] == ctr[K.COMPLETED]
    for k in range(n_types):
        active[k] = 1 if qlen[k] > 0 else 0
    while meta[Q.PSIZE] > 0:
        k = -1
        t = 0.0
        for x in range(n_types):
            if active[x] == 1:
                s = submit[qhead[x]]
                if k < 0 or s < t:
                    k, t = x, s
        if k < 0:
            return hp
        job = qhead[k]
        wait = now - t
        chosen = -1
        for i in range(meta[Q.NORD]):
            if last_resort or pen[k, order[i]] <= wait:
                chosen = i
                break
        if chosen < 0:
            active[k] = 0
            continue
        Q.queue_pop(st.q, k)
        hp = K.start_inlined(core, hp, job, Q.pool_pop(st.q, chosen))
        if ctr[K.ERR] != 0:
            return hp
        if qlen[k] == 0:
            active[k] = 0
    return hp


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with Affinity's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core.ctr
    fl = core.fl
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
            Q.pool_add(core, st.q, m)
        # The two phases, the second only while jobs wait and machines are idle after the first.
        meta = st.q.meta
        if meta[Q.WAITING] > 0 and meta[Q.PSIZE] > 0:
            hp = _hits(core, hp, st)
            if ctr[K.ERR] == 0 and meta[Q.WAITING] > 0 and meta[Q.PSIZE] > 0:
                hp = _waits(core, hp, st)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def make(sched: Affinity, sim: Simulation) -> Kernel:
    """Affinity's kernel state, after :meth:`Affinity.setup` (its penalty table, as it computed it)."""
    shared = Q.shared_state(sched, sim)
    n_types = int(shared.meta[Q.NK])
    n_mtypes = int(shared.meta[Q.NM])
    shared.meta[NG] = len(sched.group_types)
    # pen[k, g]: the specification's penalty[k][machine type][last + 1], g the pool group.
    pen = np.array(sched.penalty, dtype=np.float64).reshape(n_types, n_mtypes * (n_types + 1))
    hitg = np.array(
        [sched.group_of[g % (n_types + 1) - 1] if g % (n_types + 1) > 0 else -1 for g in range(pen.shape[1])],
        dtype=np.int64,
    )
    state = AffinityState(
        q=shared,
        pen=pen,
        hitg=hitg,
        group_of=np.array(sched.group_of, dtype=np.int64),
        active=np.zeros(n_types, dtype=np.int64),
    )

    def done() -> None:
        Q.restore(sched, state.q)

    return Kernel(step=step, state=state, done=done)
