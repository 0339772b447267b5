"""The scheduling cycle of a staged scheduler: J1 decides when, J2-R5 decide what, as OpenDC's prototype does.

The paper's prototype is OpenDC's ``StageWorkflowService`` (2020; its cycle
lives on in ``WorkflowServiceImpl`` of ``opendc-workflow-service``). We follow
its cycle step by step; :mod:`simcore.dse.staged.atoms` gives each atom its
behaviour.

State. A job is *incoming* from the arrival of its first task until J2 admits
it, then *active* until its last task finishes. A task released by the engine
(its job arrived and its parents finished: ``on_arrival``) waits with its job
while the job is incoming, and joins the *incoming tasks* once the job is
active (dependents released at a completion join at once, as in OpenDC's
``onStateChanged``). A task is *active* from its admission by T1 until it
finishes; the load is active tasks per machine (OpenDC's ``load``).

*Choice: a task is active from its T1 admission.* Both OpenDC versions count a
task as active from its assignment at T3. In the 2021 service, T3 assigns
every queued task in the same cycle (the compute service queues it), so a task
is active from the cycle that admits it; we keep that meaning and also count
admissions made earlier in the same T1 pass, as OpenDC's J2 does for jobs.
OpenDC's lag (counts fixed for a whole T1 pass) would let ``Limit-Active(n)``
or ``Limit-Job(n)`` admit every task that arrived in one cycle, however many,
which makes them no limits at all for a bag of tasks submitted at once.

One cycle (``schedule()`` in OpenDC):

1. J2: incoming jobs are asked in arrival order; ADMIT makes the job active,
   DENY leaves it incoming (it is asked again next cycle), STOP ends the pass.
2. J3: an admitted job gets its J3 key (the atoms' numbers, then the job
   number); the active jobs that have incoming tasks are kept sorted by it.
3. T1: the pass goes through those jobs in J3 order, and through each job's
   incoming tasks in release order. ADMIT moves the task into the task queue,
   DENY leaves it (asked again next cycle), STOP ends the pass. When a
   deterministic atom (any but ``Random``) denies a task, the job's later
   tasks are left too: the answer depends on the task only through its job,
   and nothing changed since (:mod:`simcore.dse.staged.atoms`).
4. T2 + T3: the task queue is a heap ordered by T2 (then task number); the
   head task goes to the machine R5 picks among those where it fits. When it
   fits nowhere the cycle ends (head-of-line blocking, OpenDC's ``else
   break``): tasks behind it wait for the next cycle even if they would fit.

*Deviation: incoming tasks are kept per job, in J3 order.* OpenDC sorts only
the jobs admitted in one cycle (its job queue is emptied every cycle), appends
their ready tasks to one flat list, and appends a dependent released by a
completion at the end of that list. We keep each job's incoming tasks
together and visit the jobs in J3 order for as long as they are active,
which is what "sort jobs on criterion" says, and it makes a pass cost one
step per waiting *job* where a limit refuses a job's tasks (``Limit-Job``,
``Job-Balance``), not one per waiting task: with a backlog of thousands of
refused tasks, OpenDC's flat list costs that many steps at every event. As in
OpenDC, J3 matters only through T1: with ``T1=Always`` every task enters the
queue, and T2 alone orders it.

*Choice: T2 keys are taken when the task enters the queue.* Most T2 criteria
never change (submission, duration, dependencies, dependents, the random
number); ``Active-Per-Job``, ``Job-Completion`` and ``Task-Duration-History``
do while a task waits. OpenDC keeps them in a ``java.util.PriorityQueue``
whose comparator reads the current state, but a heap never re-sorts, so its
order follows the values at each insertion and sift, not the current ones.
We take every key once, at entry (T1 admission), so the queue is a heap with
fixed keys: deterministic, ``O(log n)`` per task, where re-sorting the whole
queue at each cycle would cost ``O(n log n)`` per event. A waiting task's
place therefore reflects its job's state when it was admitted.

J1 (when a cycle runs). A cycle is *requested* by every arrival and every
completion, and runs:

- ``Interactive``: at the same instant, after every event of that instant
  (``Simulation.wake_at(now)``; wake-ups come after the instant's completions
  and arrivals), so one cycle sees them all (OpenDC yields, then schedules).
- ``Batch(q)``: at the next multiple of ``q`` seconds strictly after the
  request (OpenDC: a delay of ``q - now mod q``); requests in between share it.
- ``Random``: after a delay of a whole number of milliseconds drawn uniformly
  from 0..199 (OpenDC: ``nextInt(200)`` ms), from the scheduler's generator;
  requests in between share it.

A cycle leaves work behind only when something is active, so a later
completion requests the next one: no policy of the space starves a drained
run. (The starvation guards: with nothing active, ``Limit-Load``,
``Limit-Active``, ``Limit-Job`` and ``Job-Balance`` admit, and ``Random``
admits whenever nothing is active.)

A task that fits nowhere while nothing runs (every machine empty) can never
start; it is dropped from the queue (counted in ``unrunnable``) rather than
block the queue for ever. ``check_compatible`` rules this out for capacity;
it remains possible only with a runtime model in which the task cannot run
on any machine that holds it.
"""

from __future__ import annotations

import bisect
import heapq
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.taskgraph import TaskGraph
from simcore.core.view import flat_view
from simcore.dse.staged.atoms import ADMIT, DENY, admission, job_order, machine_matcher, task_order
from simcore.dse.staged.policy import Policy

if TYPE_CHECKING:
    from simcore.core.engine import Simulation

__all__ = ["DRAW_BATCH", "RANDOM_DELAY_MS", "StagedRun"]

#: Uniform numbers are drawn from the injected generator in batches (one numpy call per batch).
DRAW_BATCH = 4096
#: J1 Random: the delay is a whole number of milliseconds below this (OpenDC's ``nextInt(200)``).
RANDOM_DELAY_MS = 200


class StagedRun:
    """The per-run state and the cycle of one staged policy on one simulation."""

    def __init__(self, policy: Policy, sim: Simulation, rng: np.random.Generator) -> None:
        self.sim = sim
        self.rng = rng
        self._draws: list[float] = []
        n = sim.n_jobs
        self.n_machines = sim.n_machines
        self._graph = sim.graph
        # Per-job and per-task state in numpy arrays read and written through flat memoryviews
        # (scalar access at list speed, 8 bytes or less per entry, no Python object per job).
        if sim.graph is None:  # every task a job of its own
            job_of = np.arange(n, dtype=np.int64)
            job_size = np.ones(n, dtype=np.int64)
        else:
            job_of = sim.graph.job_of
            job_size = sim.graph.job_size
        J = len(job_size)
        self._arrays: dict[str, NDArray[Any]] = {
            "job_state": np.zeros(J, dtype=np.int8),
            "job_submit": np.zeros(J, dtype=np.float64),
            "job_random": np.zeros(J, dtype=np.float64),
            "job_active_tasks": np.zeros(J, dtype=np.int64),
            "job_done": np.zeros(J, dtype=np.int64),
            "hist_sum": np.zeros(J, dtype=np.float64),
            "hist_cnt": np.zeros(J, dtype=np.int64),
        }
        a = self._arrays
        self.job_of: Any = flat_view(np.ascontiguousarray(job_of, dtype=np.int64))
        self.job_size: Any = flat_view(np.ascontiguousarray(job_size, dtype=np.int64))
        self.job_size_array = job_size
        #: 0 not arrived, 1 incoming, 2 active, 3 finished.
        self.job_state: Any = flat_view(a["job_state"])
        self.job_submit: Any = flat_view(a["job_submit"])
        self.job_random: Any = flat_view(a["job_random"])
        self.job_random_key = False
        #: Released tasks not yet admitted by T1, per job, in release order (incoming and active jobs).
        self.job_tasks: dict[int, list[int]] = {}
        #: J3 sort key of each active job (taken at admission).
        self.job_key: dict[int, tuple[float, ...]] = {}
        self.job_active_tasks: Any = flat_view(a["job_active_tasks"])
        self.job_done: Any = flat_view(a["job_done"])
        self.keep_history = False
        self.hist_sum: Any = flat_view(a["hist_sum"])
        self.hist_cnt: Any = flat_view(a["hist_cnt"])
        self.n_active_jobs = 0
        self.n_active_tasks = 0
        #: Incoming jobs in arrival order.
        self.incoming_jobs: list[int] = []
        #: J3 keys of the active jobs that have incoming tasks, sorted: the T1 pass's order.
        self.waiting_jobs: list[tuple[float, ...]] = []
        #: The task queue: a heap of T2 keys, each ending with the task number.
        self.queue: list[tuple[float, ...]] = []
        self.unrunnable = 0
        self.cycles = 0
        self._pending = False

        self.j2, self.j2_random = admission("J2", policy.J2, self)
        self.j3 = job_order(policy.J3, self)
        # T1's deterministic part answers the same for every task of a job until the state changes,
        # so after its DENY the pass skips the job's other tasks (nothing changes before the pass
        # moves on). Its random part draws per task, and a DENY from it skips that task only.
        self.t1, self.t1_random = admission("T1", policy.T1, self)
        self.key = task_order(policy.T2, self)
        self.match = machine_matcher(policy.R5, self)
        j1 = policy.J1[0]
        self.j1 = j1.name
        self.quantum = float(j1.args[0]) if j1.name == "Batch" else 0.0

    @property
    def graph(self) -> TaskGraph:
        """The workload's task graph; one-task jobs when it has none (built only if an atom asks)."""
        if self._graph is None:
            self._graph = TaskGraph.single_tasks(self.sim.n_jobs)
        return self._graph

    # -- randomness ------------------------------------------------------------------------------------
    def uniform(self) -> float:
        """A uniform number in [0, 1) from the injected generator."""
        if not self._draws:
            self._draws = self.rng.random(DRAW_BATCH).tolist()[::-1]
        return self._draws.pop()

    # -- events ----------------------------------------------------------------------------------------
    def on_arrival(self, task: int) -> None:
        j = self.job_of[task]
        state = self.job_state[j]
        if state == 2:
            waiting = self.job_tasks.get(j)
            if waiting:
                waiting.append(task)
            else:
                self.job_tasks[j] = [task]
                bisect.insort(self.waiting_jobs, self.job_key[j])
        elif state == 0:
            self.job_state[j] = 1
            self.job_submit[j] = self.sim.now
            if self.job_random_key:
                self.job_random[j] = self.uniform()
            self.job_tasks[j] = [task]
            self.incoming_jobs.append(j)
        else:
            self.job_tasks[j].append(task)
        if not self._pending:
            self._request()

    def on_completion(self, task: int, machine: int) -> None:
        j = self.job_of[task]
        self.n_active_tasks -= 1
        self.job_active_tasks[j] -= 1
        done = self.job_done[j] + 1
        self.job_done[j] = done
        if self.keep_history:
            self.hist_sum[j] += self.sim.now - float(self.sim.start_t[task])
            self.hist_cnt[j] += 1
        if done == self.job_size[j]:
            self.job_state[j] = 3
            self.n_active_jobs -= 1
            del self.job_key[j]
        if not self._pending:
            self._request()

    def on_wake(self) -> None:
        self._pending = False
        self.cycle()

    def _request(self) -> None:
        """J1: ask the engine for the next cycle."""
        self._pending = True
        sim = self.sim
        now = sim.now
        if self.j1 == "Interactive":
            sim.wake_at(now)
        elif self.j1 == "Batch":
            q = self.quantum
            t = (math.floor(now / q) + 1.0) * q
            if t <= now:  # rounding at a huge time
                t = now + q
            sim.wake_at(t)
        else:
            sim.wake_at(now + int(self.uniform() * RANDOM_DELAY_MS) / 1000.0)

    # -- the cycle -------------------------------------------------------------------------------------
    def cycle(self) -> None:
        self.cycles += 1
        if self.incoming_jobs:
            self._admit_jobs()
        if self.waiting_jobs:
            self._admit_tasks()
        if self.queue:
            self._dispatch()

    def _admit_jobs(self) -> None:
        """J2, then J3: admitted jobs take their place in the J3-sorted list of jobs."""
        incoming = self.incoming_jobs
        advise = self.j2
        state = self.job_state
        rnd = self.j2_random
        if advise is None and rnd is None:
            admitted = incoming[:]
            incoming.clear()
            for j in admitted:
                state[j] = 2
            self.n_active_jobs += len(admitted)
        else:
            admitted = []
            denied: list[int] = []
            stop = len(incoming)
            for i, j in enumerate(incoming):
                a = ADMIT if advise is None else advise(j)
                if a == ADMIT and rnd is not None:
                    a = rnd(j)
                if a == ADMIT:
                    admitted.append(j)
                    state[j] = 2
                    self.n_active_jobs += 1
                elif a == DENY:
                    denied.append(j)
                else:
                    stop = i
                    break
            incoming[:stop] = denied
        if not admitted:
            return
        order = self.j3
        keys = self.job_key
        waiting = self.waiting_jobs
        if len(admitted) == 1:
            k = keys[admitted[0]] = order(admitted[0])
            bisect.insort(waiting, k)
            return
        for j in admitted:
            k = keys[j] = order(j)
            waiting.append(k)
        waiting.sort()

    def _admit_tasks(self) -> None:
        """T1: jobs in J3 order, each job's tasks in release order; admitted tasks enter the queue."""
        jobs = self.waiting_jobs
        advise = self.t1
        job_tasks = self.job_tasks
        active = self.job_active_tasks
        key = self.key
        queue = self.queue
        push = heapq.heappush
        rnd = self.t1_random
        if advise is None and rnd is None:
            for entry in jobs:
                j = int(entry[-1])
                tasks = job_tasks.pop(j)
                for t in tasks:
                    push(queue, key(t, j))
                    active[j] += 1  # before the next key: Active-Per-Job counts earlier admissions
                self.n_active_tasks += len(tasks)
            jobs.clear()
            return
        keep: list[tuple[float, ...]] = []
        for idx, entry in enumerate(jobs):
            j = int(entry[-1])
            tasks = job_tasks[j]
            denied: list[int] = []
            stop = False
            i = 0
            n = len(tasks)
            while i < n:
                t = tasks[i]
                a = ADMIT if advise is None else advise(t)
                if a == DENY:
                    break  # the job's later tasks get the same answer: nothing changed
                if a == ADMIT and rnd is not None and rnd(t) == DENY:
                    denied.append(t)
                elif a == ADMIT:
                    push(queue, key(t, j))
                    active[j] += 1
                    self.n_active_tasks += 1
                else:
                    stop = True
                    break
                i += 1
            if i:
                tasks[:i] = denied
            if tasks:
                keep.append(entry)
            else:
                del job_tasks[j]
            if stop:
                keep.extend(jobs[idx + 1 :])
                break
        self.waiting_jobs = keep

    def _dispatch(self) -> None:
        """T3 + R5: start queue heads while R5 finds a machine; stop at the first that fits nowhere."""
        queue = self.queue
        match = self.match
        sim = self.sim
        start = sim.start
        pop = heapq.heappop
        while queue:
            t = int(queue[0][-1])
            m = match(t)
            if m < 0:
                if sim.started == sim.completed:  # every machine is empty: it can never start
                    pop(queue)
                    self._drop(t)
                    continue
                return
            pop(queue)
            start(t, m)

    def _drop(self, task: int) -> None:
        j = self.job_of[task]
        self.unrunnable += 1
        self.n_active_tasks -= 1
        self.job_active_tasks[j] -= 1
