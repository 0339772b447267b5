"""What the profile schedulers' kernels share: the per-type job queues and the idle pool, in numba.

The structures of :class:`~simcore.schedulers._profile_queues.ProfileQueueScheduler`
and :class:`~simcore.profiles.pool.IdlePool`, without allocation:

* a FIFO queue per job type: a linked list over jobs (``qnext``), the queue of
  job class ``k`` at index ``k`` (class -1, unknown, at the last index: the
  specification indexes a Python list);
* the idle pool: one FIFO of machines per group ``(machine type, last job
  type)``, group ``g = type * (K + 1) + last + 1`` (a linked list over machines),
  each machine with the pool's sequence number of its ``add``; and the
  non-empty groups in ``order``, sorted by their head's sequence number, which
  is ``IdlePool.nonempty()``. An add to an empty group appends it (its head is
  the newest of all heads); a pop moves the group back to its new head's place
  or drops it, so the order is kept without sorting.

``q.meta`` (int64) holds the counters; each scheduler kernel's state holds these
arrays as its field ``q`` (:class:`ProfileQueues`, :func:`shared_state`), beside its own.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled.jit import inline, inline_always

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers._profile_queues import ProfileQueueScheduler

# q.meta (int64) slots: job types, machine types, jobs waiting, idle machines, the pool's last
# sequence number, non-empty groups; then scheduler kernels' own flags from FLAGS on.
NK, NM, WAITING, PSIZE, SEQ, NORD, FLAGS = 0, 1, 2, 3, 4, 5, 6
N_META = 10


class ProfileQueues(NamedTuple):
    """The job queues and the idle pool (built by :func:`shared_state`); each kernel's state holds them as ``q``."""

    meta: Any  #: int64 counters (NK, NM, WAITING, ... above)
    qhead: Any  #: per job type, its queue's first job
    qtail: Any  #: and last
    qnext: Any  #: the job after each queued job
    qlen: Any  #: jobs per queue
    ghead: Any  #: per pool group, its first machine
    gtail: Any  #: and last
    gcount: Any  #: machines per group
    gnext: Any  #: the machine after each pooled machine
    mseq: Any  #: each machine's pool sequence number
    order: Any  #: the non-empty groups in head order (``IdlePool.nonempty()``)


@inline
def queue_push(core: Any, q: Any, job: int) -> None:
    """``queues[cls[job]].append(job)``; ``waiting += 1``."""
    meta, qhead, qtail, qnext, qlen = q.meta, q.qhead, q.qtail, q.qnext, q.qlen
    k = core.job_class[job]
    if k < 0:
        k += meta[NK]
    qnext[job] = -1
    if qlen[k] == 0:
        qhead[k] = job
    else:
        qnext[qtail[k]] = job
    qtail[k] = job
    qlen[k] += 1
    meta[WAITING] += 1


@inline
def queue_pop(q: Any, k: int) -> int:
    """``queues[k].popleft()``; ``waiting -= 1``."""
    meta, qhead, qnext, qlen = q.meta, q.qhead, q.qnext, q.qlen
    job = qhead[k]
    qhead[k] = qnext[job]
    qlen[k] -= 1
    meta[WAITING] -= 1
    return job  # type: ignore[no-any-return]


@inline
def pool_add(core: Any, q: Any, m: int) -> None:
    """``pool.add(m, config, last_class[m])``: at the back of its group."""
    meta, ghead, gtail, gcount, gnext, mseq, order = (
        q.meta,
        q.ghead,
        q.gtail,
        q.gcount,
        q.gnext,
        q.mseq,
        q.order,
    )
    g = core.config_of[m] * (meta[NK] + 1) + core.last[m] + 1
    meta[SEQ] += 1
    mseq[m] = meta[SEQ]
    gnext[m] = -1
    if gcount[g] == 0:
        ghead[g] = m
        order[meta[NORD]] = g  # the newest head of all: last in head order
        meta[NORD] += 1
    else:
        gnext[gtail[g]] = m
    gtail[g] = m
    gcount[g] += 1
    meta[PSIZE] += 1


@inline_always
def pool_pop(q: Any, i: int) -> int:
    """``pool.pop(key)`` of the group at position ``i`` in head order; keeps the order.

    Once per start: numba copies it into the caller, where LLVM left it a call of 80 words (every array of ``q``).
    """
    meta, ghead, gcount, gnext, mseq, order = q.meta, q.ghead, q.gcount, q.gnext, q.mseq, q.order
    g = order[i]
    m = ghead[g]
    gcount[g] -= 1
    meta[PSIZE] -= 1
    n = meta[NORD]
    if gcount[g] == 0:
        for j in range(i, n - 1):
            order[j] = order[j + 1]
        meta[NORD] = n - 1
        return m  # type: ignore[no-any-return]
    h = gnext[m]
    ghead[g] = h
    s = mseq[h]
    j = i
    while j + 1 < n and mseq[ghead[order[j + 1]]] < s:
        order[j] = order[j + 1]
        j += 1
    order[j] = g
    return m  # type: ignore[no-any-return]


def shared_state(sched: ProfileQueueScheduler, sim: Simulation) -> ProfileQueues:
    """The shared slots, filled as :meth:`ProfileQueueScheduler.setup` leaves its queues and pool.

    Setup left every queue empty and every machine in the pool in machine order
    (``initial_pool``); the kernel's pool is built from the Python pool, so it starts identical.
    """
    n_types = int(sched.rt.cold.shape[0])
    n_mtypes = int(sched.rt.cold.shape[1])
    N = sim.n_machines
    G = n_mtypes * (n_types + 1)
    meta = np.zeros(N_META, dtype=np.int64)
    meta[NK] = n_types
    meta[NM] = n_mtypes
    state = ProfileQueues(
        meta=meta,
        qhead=np.full(n_types, -1, dtype=np.int64),
        qtail=np.full(n_types, -1, dtype=np.int64),
        qnext=np.full(max(sim.n_jobs, 1), -1, dtype=np.int64),
        qlen=np.zeros(n_types, dtype=np.int64),
        ghead=np.full(G, -1, dtype=np.int64),
        gtail=np.full(G, -1, dtype=np.int64),
        gcount=np.zeros(G, dtype=np.int64),
        gnext=np.full(max(N, 1), -1, dtype=np.int64),
        mseq=np.zeros(max(N, 1), dtype=np.int64),
        order=np.zeros(G, dtype=np.int64),
    )
    ghead, gtail, gcount, gnext, mseq, order = (
        state.ghead,
        state.gtail,
        state.gcount,
        state.gnext,
        state.mseq,
        state.order,
    )
    heads = sched.pool.nonempty()
    for (config, last), _, _ in heads:
        g = config * (n_types + 1) + last + 1
        prev = -1
        for seq, m in sched.pool.groups[(config, last)]:
            mseq[m] = seq
            if prev < 0:
                ghead[g] = m
            else:
                gnext[prev] = m
            prev = m
            gcount[g] += 1
        gtail[g] = prev
    for i, (key, _, _) in enumerate(heads):
        order[i] = key[0] * (n_types + 1) + key[1] + 1
    meta[NORD] = len(heads)
    meta[PSIZE] = sched.pool.size
    meta[SEQ] = sched.pool._seq
    return state


def restore(sched: ProfileQueueScheduler, state: ProfileQueues) -> None:
    """After a run: the Python queues, pool and waiting count as the specification leaves them."""
    meta, qhead, qnext, qlen = state.meta, state.qhead, state.qnext, state.qlen
    n_types = int(meta[NK])
    for k in range(n_types):
        q: deque[int] = deque()
        z = int(qhead[k])
        for _ in range(int(qlen[k])):
            q.append(z)
            z = int(qnext[z])
        sched.queues[k] = q
    sched.waiting = int(meta[WAITING])
    ghead, gcount, gnext, mseq, order = state.ghead, state.gcount, state.gnext, state.mseq, state.order
    pool = sched.pool
    for members in pool.groups.values():
        members.clear()
    for i in range(int(meta[NORD])):
        g = int(order[i])
        key = (g // (n_types + 1), g % (n_types + 1) - 1)
        members = pool.groups.setdefault(key, deque())
        m = int(ghead[g])
        for _ in range(int(gcount[g])):
            members.append((int(mseq[m]), m))
            m = int(gnext[m])
    pool.size = int(meta[PSIZE])
    pool._seq = int(meta[SEQ])
