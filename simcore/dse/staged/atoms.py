"""What every atom of Tables 1-3 does, and the composition operator of Table 4.

:mod:`simcore.dse.staged.policy` knows the design space; this module gives each
atom its behaviour inside the scheduling cycle of :mod:`simcore.dse.staged.cycle`
(which says when the stages run and what "active" means). The behaviour
follows OpenDC's ``StageWorkflowService`` policies (``stage/job/*.kt``,
``stage/task/*.kt``, ``stage/resource/*.kt``, 2020), the paper's prototype;
every difference is listed here with its reason.

Admission (J2 jobs, T1 tasks). An admission atom gives OpenDC's *advice*:
ADMIT, DENY (skip this one, it stays incoming, look at the next) or STOP
(skip it and end the pass). Counts are read when the atom is asked, so a pass
sees its own earlier admissions (OpenDC does so for jobs; see the cycle's
docstring for tasks).

- ``Always``: ADMIT.
- ``Limit-Load(t)``: ADMIT while the load, active tasks per machine (OpenDC's
  ``load``), is below ``t``; else STOP.
- ``Limit-Active(n)`` (J2: jobs, T1: tasks): ADMIT while fewer than ``n`` are
  active, so at most ``n`` are active after the admission (Algorithm 1 and
  OpenDC: ``active < n``); else STOP.
- ``Limit-Job(n)``: ADMIT while the task's job has fewer than ``n`` active
  tasks; else DENY. *Deviation:* OpenDC's ``LimitPerJobTaskEligibilityPolicy``
  admits while ``active <= n``, which lets ``n + 1`` run; we read "does not
  exceed n" as for ``Limit-Active``, after the admission.
- ``Job-Balance(t)``: with the baseline ``max(active tasks / active jobs, 1)``,
  ADMIT if ``(active tasks of the job + 1) / baseline <= t``; else DENY.
  *Deviation:* OpenDC compares with ``<``; then ``t = 1`` (the low end of the
  range) would never admit a task while nothing runs and the workload would
  starve. The paper's "does not exceed" is ``<=``.
- ``Random(p)``: draw ``u`` uniform in [0, 1); ADMIT if ``u <= p`` or nothing
  is active (no active task for T1, no active job for J2), else DENY (OpenDC's
  ``RandomTaskEligibilityPolicy``; OpenDC has no random job admission, so J2
  uses the same rule with jobs). The draw is made every time the atom is asked.

Composition (Table 4: "admit if both p1 and p2 accept"): ADMIT if every
atom admits, else STOP if any says STOP, else DENY. The admission decision is
exactly Table 4's, whatever the order of the atoms; STOP winning over DENY
keeps a limit a limit when it is composed with a filter. The atoms without
randomness are asked first, and ``Random(p)`` atoms draw only when all of
those admit: a draw could not change the outcome otherwise, and a task (or
job) they refuse costs no random number. This is what lets the T1 pass skip
the rest of a job's tasks once a deterministic atom denied one of them (see
:mod:`simcore.dse.staged.cycle`).

Ordering (J3 jobs, T2 tasks). Each atom gives a number per job or task;
``(desc)`` negates it; a composition orders by the first atom's number, then
the second's, then by job or task number (OpenDC's ``thenBy { uid }``).

- J3 ``Submission-Time``: the job's submission (its first task's).
- J3 ``Job-Size``: its number of tasks.
- J3 ``Job-Duration``: its critical path, with each task's estimated
  duration (below). *Deviation:* OpenDC's ``DurationJobOrderPolicy`` sums
  the durations of all tasks; the paper's Table 1 says critical path.
- J3 ``Random``: a uniform number drawn once per job when it arrives
  (OpenDC: a random integer per job at submission).
- T2 ``Submission-Time``: the task's submission time (its job's, OpenDC's
  ``job.submittedAt``, unless a trace gives tasks of one job their own).
- T2 ``Task-Duration``: the task's estimated duration, its shortest
  processing time over the machines (the work on the fastest machine; the
  critical-path durations of :mod:`simcore.core.jobmetrics`). OpenDC reads the
  trace's runtime, which is also exact.
- T2 ``Task-Duration-History``: the mean duration (finish minus start, s) of
  the job's finished tasks; with none finished, larger than any (OpenDC's
  ``Long.MAX_VALUE``: last in ascending order, first in descending).
- T2 ``Task-Dependencies`` / ``Task-Dependents``: its number of parents /
  children in the job's graph.
- T2 ``Active-Per-Job``: the number of active tasks of its job (the task
  itself not counted).
- T2 ``Job-Completion``: the fraction of its job's tasks that finished.
- T2 ``Random``: a uniform number drawn per task (OpenDC: at ``taskReady``).

When the numbers of the last four are taken (they change while a task waits)
is the cycle's decision; see :mod:`simcore.dse.staged.cycle`.

Matching (R5). The task may go only to machines where it fits now in every
resource and where it can run at all (``Simulation.can_run``: a finite
processing time). "Processing elements available" are the free *cores*: the
cluster's first resource (``cpu`` in the Google presets and the section 4.1.3
cluster; a one-slot machine's ``slot`` in the profile study's). Atoms narrow the
candidates, a composition "matches using p1, then p2": each atom keeps the
candidates that are best by its criterion, the next one chooses among those,
and the lowest machine number ends any tie left.

- ``First-Fit``: the lowest-numbered candidate (OpenDC keeps the node order).
- ``Best-Fit`` / ``Worst-Fit``: the fewest / most free cores.
- ``Expensive`` / ``Cheap``: the fastest / slowest machine by
  :attr:`Cluster.speed <simcore.core.model.Cluster.speed>`; without speeds all are
  equal and the tie goes on to the next atom (or the lowest number).
- ``Random``: a uniformly drawn candidate, fresh for each task. *Deviation:*
  OpenDC's ``RandomResourceSelectionPolicy`` draws one random rank per
  machine at start-up, a fixed shuffled first fit; the paper's Table 3 says
  "match task with random resource".

Ties on free cores are exact float equality; the engine resets an emptied
machine to exactly its capacity, so whole-core requests compare exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.fit import EPS
from simcore.core.model import shortest_durations
from simcore.core.view import flat_view
from simcore.dse.staged.policy import Atom

if TYPE_CHECKING:
    from simcore.dse.staged.cycle import StagedRun

__all__ = ["ADMIT", "DENY", "STOP", "Advice", "admission", "job_order", "machine_matcher", "task_order"]

#: OpenDC's advice: admit and go on; skip this one and go on; skip it and end the pass.
ADMIT, DENY, STOP = 0, 1, 2

#: An admission stage: job (J2) or task (T1) number -> advice.
Advice = Callable[[int], int]


# -- admission: J2 and T1 ----------------------------------------------------------------------------------


def admission(stage: str, atoms: tuple[Atom, ...], run: StagedRun) -> tuple[Advice | None, Advice | None]:
    """A J2 or T1 composition as (deterministic part, random part); None where a part admits everything.

    Ask the deterministic part first; only if it admits, ask the random part
    (``Random(p)`` atoms, which answer ADMIT or DENY).
    """
    det = [f for f in (_admission_atom(stage, a, run) for a in atoms if a.name != "Random") if f is not None]
    rnd = [_admission_atom(stage, a, run) for a in atoms if a.name == "Random"]
    return _all_of(det), _all_of([f for f in rnd if f is not None])


def _all_of(fns: list[Advice]) -> Advice | None:
    """Table 4's composition of admissions: ADMIT if all admit, else STOP if any stops, else DENY."""
    if not fns:
        return None
    if len(fns) == 1:
        return fns[0]

    def composed(x: int) -> int:
        worst = ADMIT
        for f in fns:
            a = f(x)
            if a > worst:
                worst = a
        return worst

    return composed


def _admission_atom(stage: str, atom: Atom, run: StagedRun) -> Advice | None:
    name = atom.name
    jobs = stage == "J2"
    if name == "Always":
        return None
    if name == "Limit-Load":
        limit = float(atom.args[0])
        machines = float(run.n_machines)

        def limit_load(x: int) -> int:
            return ADMIT if run.n_active_tasks / machines < limit else STOP

        return limit_load
    if name == "Limit-Active":
        n = int(atom.args[0])
        if jobs:

            def limit_active_jobs(x: int) -> int:
                return ADMIT if run.n_active_jobs < n else STOP

            return limit_active_jobs

        def limit_active_tasks(x: int) -> int:
            return ADMIT if run.n_active_tasks < n else STOP

        return limit_active_tasks
    if name == "Limit-Job":
        n = int(atom.args[0])
        job_active = run.job_active_tasks
        job_of = run.job_of

        def limit_job(t: int) -> int:
            return ADMIT if job_active[job_of[t]] < n else DENY

        return limit_job
    if name == "Job-Balance":
        tol = float(atom.args[0])
        job_active = run.job_active_tasks
        job_of = run.job_of

        def job_balance(t: int) -> int:
            jobs_now = run.n_active_jobs
            base = run.n_active_tasks / jobs_now if jobs_now else 0.0
            if base < 1.0:
                base = 1.0
            return ADMIT if (job_active[job_of[t]] + 1) / base <= tol else DENY

        return job_balance
    if name == "Random":
        p = float(atom.args[0])
        uniform = run.uniform
        if jobs:

            def random_jobs(x: int) -> int:
                return ADMIT if uniform() <= p or run.n_active_jobs == 0 else DENY

            return random_jobs

        def random_tasks(x: int) -> int:
            return ADMIT if uniform() <= p or run.n_active_tasks == 0 else DENY

        return random_tasks
    raise AssertionError(f"no behaviour for {stage} atom {name}")  # parse_policy admits only known atoms


# -- ordering: J3 and T2 -----------------------------------------------------------------------------------

JobKey = Callable[[int], float]
TaskKey = Callable[[int, int], float]


def job_order(atoms: tuple[Atom, ...], run: StagedRun) -> Callable[[int], tuple[float, ...]]:
    """J3: job number -> its sort key (the atoms' numbers, then the job number)."""
    parts = [_job_key(a, run) for a in atoms]
    if len(parts) == 1:
        only = parts[0]
        return lambda j: (only(j), j)
    return lambda j: (*(f(j) for f in parts), j)


def _job_key(atom: Atom, run: StagedRun) -> JobKey:
    sign = -1.0 if atom.direction == "desc" else 1.0
    name = atom.name
    if name == "Submission-Time":
        submit = run.job_submit
        return lambda j: sign * submit[j]
    if name == "Job-Size":
        size = flat_view(sign * run.job_size_array.astype(np.float64))
        return lambda j: size[j]
    if name == "Job-Duration":
        cp = flat_view(sign * run.graph.critical_path(estimated_durations(run)))
        return lambda j: cp[j]
    if name == "Random":
        run.job_random_key = True
        drawn = run.job_random
        return lambda j: drawn[j]
    raise AssertionError(f"no behaviour for J3 atom {name}")


def task_order(atoms: tuple[Atom, ...], run: StagedRun) -> Callable[[int, int], tuple[float, ...]]:
    """T2: (task, its job) -> its sort key in the task queue (the atoms' numbers, then the task number)."""
    parts = [_task_key(a, run) for a in atoms]
    if len(parts) == 1:
        only = parts[0]
        return lambda t, j: (only(t, j), t)
    return lambda t, j: (*(f(t, j) for f in parts), t)


def _task_key(atom: Atom, run: StagedRun) -> TaskKey:
    sign = -1.0 if atom.direction == "desc" else 1.0
    name = atom.name
    if name == "Submission-Time":
        submit = flat_view(sign * np.asarray(run.sim.submit, dtype=np.float64))
        return lambda t, j: submit[t]
    if name == "Task-Duration":
        est = flat_view(sign * estimated_durations(run))
        return lambda t, j: est[t]
    if name == "Task-Duration-History":
        run.keep_history = True
        hist_sum = run.hist_sum
        hist_cnt = run.hist_cnt
        none = sign * float("inf")

        def history(t: int, j: int) -> float:
            c = hist_cnt[j]
            return sign * hist_sum[j] / c if c else none

        return history
    if name == "Task-Dependencies":
        deps = flat_view(sign * run.graph.n_parents.astype(np.float64))
        return lambda t, j: deps[t]
    if name == "Task-Dependents":
        kids = flat_view(sign * np.diff(run.graph.child_ptr).astype(np.float64))
        return lambda t, j: kids[t]
    if name == "Active-Per-Job":
        active = run.job_active_tasks
        return lambda t, j: sign * active[j]
    if name == "Job-Completion":
        done = run.job_done
        size = run.job_size
        return lambda t, j: sign * done[j] / size[j]
    if name == "Random":
        uniform = run.uniform
        return lambda t, j: uniform()
    raise AssertionError(f"no behaviour for T2 atom {name}")


def estimated_durations(run: StagedRun) -> NDArray[np.float64]:
    """Each task's estimated duration (s): its shortest processing time over the configurations."""
    sim = run.sim
    return shortest_durations(sim.runtime, sim.n_jobs, sim.view.n_configs)


# -- matching: R5 ------------------------------------------------------------------------------------------


def machine_matcher(atoms: tuple[Atom, ...], run: StagedRun) -> Callable[[int], int]:
    """R5: task number -> the machine it starts on now, or -1 when it fits nowhere."""
    sim = run.sim
    view = sim.view
    N = view.n_machines
    names = [a.name for a in atoms]
    if names[0] == "First-Fit" and sim.all_runnable:
        return view.first_fit

    candidates = _candidates(run)
    speed = _machine_speed(run)
    # Up to the first atom that leaves no tie (First-Fit, Random), the rest cannot matter.
    used: list[str] = []
    for name in names:
        used.append(name)
        if name in ("First-Fit", "Random"):
            break
    if all(n in ("First-Fit", "Expensive", "Cheap") for n in used):
        # A fixed order of the machines: the first candidate in it.
        keys: list[NDArray[Any]] = [np.arange(N)]
        for name in reversed(used):
            if name == "Expensive":
                keys.append(-speed)
            elif name == "Cheap":
                keys.append(speed)
        order = np.lexsort(keys)

        def static_match(t: int) -> int:
            mask = candidates(t)[order]
            k = int(mask.argmax())
            return int(order[k]) if mask[k] else -1

        return static_match

    free_cores = view.free_by_resource[0]
    uniform = run.uniform

    def narrowing_match(t: int) -> int:
        cand = candidates(t)
        first = int(cand.argmax())
        if not cand[first]:
            return -1
        for name in used:
            if name == "First-Fit":
                return first
            if name == "Random":
                idx = np.flatnonzero(cand)
                return int(idx[int(uniform() * len(idx))])
            if name in ("Best-Fit", "Worst-Fit"):
                key = free_cores
            else:
                key = speed
            vals = key[cand]
            best = vals.min() if name in ("Best-Fit", "Cheap") else vals.max()
            np.logical_and(cand, key == best, out=cand)
            first = int(cand.argmax())
        return first

    return narrowing_match


def _candidates(run: StagedRun) -> Callable[[int], NDArray[np.bool_]]:
    """Task number -> a mask of the machines where it fits now (and can run at all); one array, reused."""
    sim = run.sim
    view = sim.view
    N = view.n_machines
    R = view.n_resources
    all_runnable = sim.all_runnable
    rows = list(view.free_by_resource)
    req = view.request_flat
    ok = np.empty(N, dtype=bool)
    tmp = np.empty(N, dtype=bool)
    counts = sim.cluster.counts

    def candidates(t: int) -> NDArray[np.bool_]:
        tb = t * R
        np.greater_equal(rows[0], req[tb] - EPS, out=ok)
        for r in range(1, R):
            np.greater_equal(rows[r], req[tb + r] - EPS, out=tmp)
            np.logical_and(ok, tmp, out=ok)
        if not all_runnable:
            np.logical_and(ok, np.repeat(np.array(sim.runnable_configs(t), dtype=bool), counts), out=ok)
        return ok

    return candidates


def _machine_speed(run: StagedRun) -> NDArray[np.float64]:
    """Each machine's speed (:attr:`Cluster.speed <simcore.core.model.Cluster.speed>`); all 1 without speeds."""
    cluster = run.sim.cluster
    view = run.sim.view
    if cluster.speed is None:
        return np.ones(view.n_machines, dtype=np.float64)
    return np.asarray(cluster.speed, dtype=np.float64)[view.config_of]
