"""FCFS: the profile study's strawman, "simply assigns an incoming job to the first available machine".

Jobs start in arrival order; the head of the queue blocks the others until
some machine can take it. "First available machine" is read as the machine
that has been available longest (a FIFO of free machines, the natural
reading of a queue-based simulator); ``pick=lowest-index`` takes the free
machine with the lowest number instead (Table 1 order, so type 1 first).

Deviation / generalisation: the paper's machines run one job at a time. On
clusters whose machines hold several jobs, "available" means the job fits in
the machine's free capacity, and "available longest" means the machine whose
last job finished earliest.

Where a job cannot run (an infinite processing time: a rate of 0, LoTES
section 5.3) FCFS never starts it: the head takes the longest-idle (or
lowest-numbered) free machine among those where it can run, and blocks the
queue while there is none, as strict FCFS does.

Implementation (multi-resource ``longest-idle``): the rule is the argmin of
``idle_since`` over the machines where the head fits and can run, ties to the
lowest index (tests hold the implementation equal to that plain argmin).
Machines are kept in that ``(idle_since, index)`` order, an array with gaps (a
machine whose job finished moves to the back, leaving a gap; the gaps are
closed when the array is full), and the head takes the first machine in that
order where it fits and can run, read a block of ``BLOCK`` places at a time.
Each block keeps upper bounds of its machines' free capacity, per resource and
of the least over resources; a block whose bounds show that none of its
machines fits is skipped unread. The bounds need no update while machines stay
in place, as such a machine only loses capacity (it gains some only when a job
of it finishes, and then it moves to the back, raising the last block's
bounds); a block read in vain gets its exact bounds again. The front of the
order is machines that FCFS filled until nothing more fits, each full in some
resource, so a search reads about one block where the argmin read every
machine. A head that fitted nowhere waits for a completion, and then only the
machine that completed has more room than at its failed search, so only that
machine is examined (nothing starts while the head waits).

Versus the paper: the baseline of Figures 12-13; its run times come from a
profile table derived from the paper's stated findings (the paper prints no
table, see ``simcore/data/ncbi_profile.json``), so absolute completion times
are ours, not the paper's.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.core.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers.base import Param, Scheduler

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel

#: Machines examined per numpy pass of the ``longest-idle`` search (in idle order).
BLOCK = 256


@register("fcfs")
class FCFS(Scheduler):
    name = "fcfs"
    description = "First come, first served: the oldest job takes the machine that has been free longest"
    params = (
        Param("pick", str, "longest-idle", "which free machine FCFS takes", choices=("longest-idle", "lowest-index")),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.pick = str(options.get("pick", "longest-idle"))

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.queue: deque[int] = deque()
        # Time each machine last became free (-inf: never used, so index order decides at the start).
        self.idle_since = np.full(sim.n_machines, -np.inf)
        self._single = bool(np.all(sim.capacity == 1.0)) and bool(np.all(sim.request == 1.0))
        self._all_runnable = sim.all_runnable
        # One-slot fast path: a FIFO of idle machines is exactly "free longest" (ties in index order).
        self._idle: deque[int] = deque(range(sim.n_machines))
        self._idle_sorted = list(range(sim.n_machines))
        # Multi-resource longest-idle: the machines in (idle_since, index) order, with gaps (-1)
        # where a machine left; twice as long as the cluster so that gaps are seldom closed.
        n = sim.n_machines
        n_blocks = -(-2 * n // BLOCK)
        self._order = np.full(n_blocks * BLOCK, -1, dtype=np.int64)
        self._order[:n] = np.arange(n)
        self._end = n  # _order[:_end] is in use
        self._pos = list(range(n))  # where each machine is in _order
        self._last_move = -np.inf  # when a machine last moved to the back
        self._blocked = -1  # the head, while no machine took it
        # Per block of BLOCK places in _order: at least the largest free capacity of its machines per
        # resource, and at least the largest least-free-capacity-over-resources (see _longest_idle).
        self._bmax: list[list[float]] = [[]] * n_blocks
        self._bkey: list[float] = [-math.inf] * n_blocks
        self._tighten(0, n_blocks)

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.fcfs.kernel import make

        return make(self, sim)

    def on_arrival(self, job: int) -> None:
        self.queue.append(job)
        self._dispatch()

    def on_completion(self, job: int, machine: int) -> None:
        self.idle_since[machine] = self.sim.now
        if self._single:
            if self.pick == "longest-idle":
                self._idle.append(machine)
            else:
                import bisect

                bisect.insort(self._idle_sorted, machine)
            self._dispatch()
            return
        if self.pick == "longest-idle":
            self._to_back(machine)
        q = self.queue
        if q and self._blocked == q[0]:
            # Only this machine has more room than at the head's failed search.
            head = q[0]
            if not (self.sim.fits(head, machine) and self._runnable(head, machine)):
                return
            self._blocked = -1
            q.popleft()
            self.sim.start(head, machine)
        self._dispatch()

    def _dispatch(self) -> None:
        sim = self.sim
        q = self.queue
        if self._single:
            pool: Any = self._idle if self.pick == "longest-idle" else self._idle_sorted
            if self._all_runnable:
                while q and pool:
                    m = pool.popleft() if self.pick == "longest-idle" else pool.pop(0)
                    sim.start(q.popleft(), m)
                return
            while q and pool:
                # The first machine in pool order where the head can run; none blocks the queue.
                i = next((i for i, m in enumerate(pool) if sim.can_run(q[0], m)), -1)
                if i < 0:
                    return
                m = pool[i]
                del pool[i]
                sim.start(q.popleft(), m)
            return
        while q and self._blocked != q[0]:
            job = q[0]
            m = self._longest_idle(job) if self.pick == "longest-idle" else self._lowest_index(job)
            if m < 0:
                self._blocked = job
                return
            q.popleft()
            sim.start(job, m)

    def _runnable(self, job: int, m: int) -> bool:
        """Whether ``job`` can run on machine m's configuration (a finite time on an idle machine)."""
        return self._all_runnable or self.sim.runnable_configs(job)[self.sim.view.config_list[m]]

    def _lowest_index(self, job: int) -> int:
        """The lowest-numbered machine where ``job`` fits and can run, or -1."""
        view = self.sim.view
        if self._all_runnable:
            return view.first_fit(job)
        runnable = self.sim.runnable_configs(job)
        for c, (lo, hi) in enumerate(view.config_ranges):
            if runnable[c] and hi > lo:
                m = view.first_fit(job, lo, hi)
                if m >= 0:
                    return m
        return -1

    def _longest_idle(self, job: int) -> int:
        """The machine free longest (then lowest-numbered) where ``job`` fits and can run, or -1.

        The first such machine in ``_order``, block by block. A block is skipped when its
        bounds show that none of its machines fits: some resource's largest free capacity is
        below the job's floor, or the largest least-free-capacity is below the least floor
        (a machine that fits reaches every floor, so its least free capacity reaches the
        least one; this skips blocks of machines each full in some resource, the common case
        at the front of the order, where machines filled up).
        """
        view = self.sim.view
        floors = view.floors_of(job)
        least = min(floors)
        R = len(floors)
        free = view.free_by_resource
        runnable = None if self._all_runnable else np.array(self.sim.runnable_configs(job))
        bkey, bmax = self._bkey, self._bmax
        end = self._end
        for b in range(-(-end // BLOCK)):
            if bkey[b] < least:
                continue
            bm = bmax[b]
            if any(bm[r] < floors[r] for r in range(R)):
                continue
            ms = self._order[b * BLOCK : min((b + 1) * BLOCK, end)]
            have = free.take(ms, axis=1)  # a gap (-1) reads the last machine: masked below
            ok = ms >= 0
            for r in range(R):
                ok &= have[r] >= floors[r]
            if runnable is not None:
                ok &= runnable[view.config_of.take(ms)]
            k = int(ok.argmax())
            if ok[k]:
                return int(ms[k])
            self._tighten(b, b + 1, have)
        return -1

    def _tighten(self, b0: int, b1: int, have: Any = None) -> None:
        """Set the bounds of blocks ``b0..b1-1`` to their machines' exact maxima (``have``: their free capacity).

        Bounds stay valid between two tightenings without any update but one: a machine
        gains free capacity only when a job of it finishes, and then it moves to the back
        (``_to_back`` raises that block's bounds); in place, machines only lose capacity
        or leave.
        """
        ms = self._order[b0 * BLOCK : b1 * BLOCK]  # _order's length is a multiple of BLOCK
        if have is None or have.shape[1] != len(ms):
            have = self.sim.view.free_by_resource.take(ms, axis=1)
        have = np.where(ms >= 0, have, -np.inf)
        blocks = have.reshape(have.shape[0], b1 - b0, BLOCK)
        self._bmax[b0:b1] = blocks.max(axis=2).T.tolist()
        self._bkey[b0:b1] = blocks.min(axis=0).max(axis=1).tolist()

    def _to_back(self, m: int) -> None:
        """Machine m became free now: move it to its place in the (idle_since, index) order.

        Times never decrease, so that place is at the end, before only machines that became
        free at the same instant with a higher index.
        """
        now = self.sim.now
        order, pos, idle = self._order, self._pos, self.idle_since
        order[pos[m]] = -1
        if self._end == len(order):
            live = order[order >= 0]  # close the gaps, in order
            order[: len(live)] = live
            order[len(live) :] = -1
            for i, x in enumerate(live.tolist()):
                pos[x] = i
            self._end = len(live)
            self._tighten(0, len(self._bkey))
        end = p = self._end
        if now == self._last_move:
            q = end - 1
            while q >= 0 and (order[q] < 0 or (idle[order[q]] == now and order[q] > m)):
                if order[q] >= 0:
                    p = q  # m goes before this machine
                q -= 1
        if p < end:
            order[p + 1 : end + 1] = order[p:end].copy()
            for i in range(p + 1, end + 1):
                if order[i] >= 0:
                    pos[int(order[i])] = i
            order[p] = m
            pos[m] = p
            self._tighten(p // BLOCK, end // BLOCK + 1)
        else:
            order[p] = m
            pos[m] = p
            b = p // BLOCK
            have = self.sim.view.free[m].tolist()
            self._bmax[b] = [max(x, y) for x, y in zip(self._bmax[b], have, strict=True)]
            self._bkey[b] = max(self._bkey[b], min(have))
        self._end = end + 1
        self._last_move = now
