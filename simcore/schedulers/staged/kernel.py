"""The staged scheduler's compiled kernel: the cycle of :mod:`simcore.dse.staged.cycle`, in numba.

The specification is :class:`~simcore.dse.staged.cycle.StagedRun` with the atoms of
:mod:`simcore.dse.staged.atoms`; this module makes the same decisions in the same
order with the same float operations, so every task starts on the same machine at
the same time (``tests/simcore/test_staged_kernel.py`` compares the two over the
whole design space). One compiled function serves every policy of the space: the
policy is data (atom codes and their arguments, :class:`Policy`), so a search that
simulates thousands of schedulers compiles once (and loads from the disk cache after).

Why it has its own event loop rather than :mod:`simcore.compiled.loop`'s: a staged
workload has task graphs (a task is released when its last parent finishes) and the
scheduler asks for wake-ups (J1), neither of which the core loop has. The loop below
is :meth:`Simulation._run_python <simcore.core.engine.Simulation._run_python>`
line by line: completions before arrivals at one instant, wake-ups after both,
samples taken before each event, the engine's start checks.

State has names, not positions: numba's named tuples of arrays (:class:`Engine`,
:class:`Policy`, :class:`Run`, :class:`Samples`) and one structured record of
counters (:data:`COUNTERS`), written as ``c.n_active_tasks``. One entry point,
:func:`step` (``numba.njit``, cached on disk in the directory :mod:`simcore.compiled.jit`
configures), calls helpers each compiled once (:func:`helper`, LLVM inlines them), and
the few large stages called in one or two places are inlined by numba (:func:`inline_always`).

Randomness. The specification draws uniforms from the injected generator in
batches, one number at a time, in a fixed order; the kernel takes the same numbers
in the same order from a buffer (:attr:`Run.draws`). Before each event the kernel
checks that the buffer holds more numbers than the event can use (:func:`draws_needed`),
else it returns and the driver appends more from the generator: consecutive calls of
``Generator.random`` give the one stream whatever the batch sizes, so the numbers
the kernel sees are the specification's.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any, TypeVar

import numba
import numba.extending
import numpy as np

from simcore.compiled import jit as _jit  # noqa: F401  (sets numba's cache directory before anything compiles)
from simcore.core.fit import EPS

# -- constants: the engine's, the atoms', the loop's -----------------------------------------------

INF = math.inf
FIT_EPS = EPS
#: The engine's task states (simcore.core.engine).
QUEUED, RUNNING, DONE = 0, 1, 2
#: Runtime model kinds of ``compiled_form`` (as simcore.compiled.core).
FIXED, SPEED, RATE = 0, 1, 2
#: OpenDC's advice (simcore.dse.staged.atoms).
ADMIT, DENY, STOP = 0, 1, 2
#: Deterministic admission atoms (J2, T1); ``Always`` is left out, ``Random`` goes apart.
LIMIT_LOAD, LIMIT_ACTIVE, LIMIT_JOB, JOB_BALANCE = 0, 1, 2, 3
#: J3 and T2 keys: a number fixed per job or task (precomputed), or one read when the key is taken.
K_STATIC, K_JOB_SUBMIT, K_RANDOM, K_HISTORY, K_ACTIVE, K_COMPLETION = 0, 1, 2, 3, 4, 5
#: R5 atoms.
FIRST_FIT, BEST_FIT, WORST_FIT, EXPENSIVE, CHEAP, R_RANDOM = 0, 1, 2, 3, 4, 5
#: J1 atoms.
INTERACTIVE, BATCH, J1_RANDOM = 0, 1, 2
#: J1 Random's delay: whole milliseconds below this (simcore.dse.staged.cycle.RANDOM_DELAY_MS).
RANDOM_DELAY_MS = 200
#: What ``step`` returns.
S_DONE, S_BUDGET, S_ERROR, S_DRAWS = 0, 1, 2, 3
#: Errors of the engine's start checks.
E_NO_FIT, E_CANNOT_RUN = 1, 2
#: numpy's pairwise summation: blocks of this many values (for samples identical to the bit).
PW_BLOCKSIZE = 128
PW_DEPTH = 256

# -- named state ------------------------------------------------------------------------------------

#: The engine's own arrays (no copies: the simulation's view shows the kernel's work) and its heap.
Engine = namedtuple(
    "Engine",
    "free cap req running last state start_t finish_t machine_of submit config_of job_class "
    "waiting child_ptr children work dcls tab tab2 heap_t heap_seq heap_job",
)
#: The policy as data: atom codes, arguments, signs and precomputed keys.
Policy = namedtuple(
    "Policy",
    "j2_det j2_arg j2_rnd t1_det t1_arg t1_rnd j3_kind j3_sign j3_static t2_kind t2_sign t2_static r5 speed",
)
#: The specification's per-job and per-task state, and the kernel's lists, queue and scratch.
Run = namedtuple(
    "Run",
    "job_of job_size job_state job_submit job_random job_active job_done hist_sum hist_cnt job_key "
    "task_next job_head job_tail incoming waiting queue task_key cand pick runnable draws",
)
#: The sample series and the scratch of their pairwise sums.
Samples = namedtuple("Samples", "sample_t s_queue s_running s_util total_cap safe_cap pw_stk pw_vals")

_I, _F = np.int64, np.float64
#: Every scalar of the run, by name (one record, mutable in the kernel).
COUNTERS = np.dtype(
    [
        *((name, _I) for name in ("arrived", "started", "completed", "held", "seq", "hsize", "sample")),
        *((name, _I) for name in ("n_machines", "n_resources", "n_tasks", "mode", "all_runnable", "n_configs")),
        *((name, _I) for name in ("err", "err_job", "err_machine", "pending", "j1", "j3_random", "draws_per_task")),
        *((name, _I) for name in ("n_active_jobs", "n_active_tasks", "in_lo", "in_hi", "n_waiting", "q_size")),
        *((name, _I) for name in ("unrunnable", "cycles", "draw", "n_draws", "blocked_task", "blocked_at")),
        *((name, _F) for name in ("now", "horizon", "drain", "timer", "quantum")),
    ]
)

F = TypeVar("F", bound=Callable[..., Any])
#: numba, untyped: its stubs do not know ``njit(_nrt=False)``.
_nb: Any = numba


def helper(fn: F) -> F:
    """A helper compiled once (per argument types) and called: numba's ``register_jitable``.

    Why not numba's IR inlining (``inline="always"``) for every helper, as the kernel had: numba
    builds and deep-copies a helper's IR anew at each call site, and again inside each helper that
    inlines it (64 inlinings of 30 helpers), which was most of the kernel's 21-24 CPU-s first
    compile (docs/notes/stagedc.md). A called helper is typed and lowered once; LLVM then inlines
    the small ones into their callers, so they cost no call at run time.

    A helper takes the arrays it reads where they are few (``uniform(r.draws, c)``), not the named
    tuples: its compile grows with the tuples in its signature, and numba compiles a helper once
    more for each other helper that calls it. ``_nrt=False``, as :func:`simcore.compiled.jit.njit`:
    no reference counting of the arrays taken out of the tuples at every access (4x slower with
    it); the kernel allocates nothing.
    """
    return _nb.extending.register_jitable(_nrt=False)(fn)  # type: ignore[no-any-return]


def inline_always(fn: F) -> F:
    """A large stage with one or two call sites, inlined there by numba (its IR, before typing).

    LLVM does not inline these (too large), and a call that is not inlined passes every array of
    the named tuples it takes as separate values (about 400 for ``e, p, r``: 27% slower with
    every stage called, measured). Their helpers are :func:`helper` functions, so an inlined stage
    is small IR; one stage inlines another (:func:`dispatch` inlines :func:`match`), none deeper.
    """
    return _nb.njit(nogil=True, _nrt=False, inline="always")(fn)  # type: ignore[no-any-return]


def entry(fn: F) -> F:
    """The kernel's entry point, called from Python: compiled once for every policy, cached on disk."""
    return _nb.njit(nogil=True, cache=True, _nrt=False)(fn)  # type: ignore[no-any-return]


# -- the engine: durations, starts, completions, its heap --------------------------------------------


@helper
def duration(work: Any, dcls: Any, tab: Any, tab2: Any, c: Any, job: int, cfg: int, last_c: int) -> float:
    """``runtime.duration(job, cfg, last_c)`` from the model's ``compiled_form`` (as simcore.compiled.core)."""
    if c.mode == FIXED:
        return work[job]  # type: ignore[no-any-return]
    if c.mode == SPEED:
        return work[job] * tab[0, cfg]  # type: ignore[no-any-return]
    k = dcls[job]
    if k < 0:
        k += tab.shape[0]  # the Python models index a list: -1 is the last row
    if c.mode == RATE:
        rate = tab[k, cfg]
        if rate <= 0:
            return INF
        return work[job] / rate  # type: ignore[no-any-return]
    if last_c == dcls[job]:
        return tab2[k, cfg]  # type: ignore[no-any-return]
    return tab[k, cfg]  # type: ignore[no-any-return]


@helper
def fits(free: Any, req: Any, c: Any, job: int, m: int) -> bool:
    """The engine's fit rule: ``free >= request - EPS`` in every resource."""
    N = c.n_machines
    R = c.n_resources
    for r in range(R):
        if not free[r * N + m] >= req[job * R + r] - FIT_EPS:
            return False
    return True


@helper
def heap_less(heap_t: Any, heap_seq: Any, a: int, b: int) -> bool:
    ta = heap_t[a]
    tb = heap_t[b]
    return ta < tb or (ta == tb and heap_seq[a] < heap_seq[b])  # type: ignore[no-any-return]


@helper
def heap_swap(heap_t: Any, heap_seq: Any, heap_job: Any, a: int, b: int) -> None:
    heap_t[a], heap_t[b] = heap_t[b], heap_t[a]
    heap_seq[a], heap_seq[b] = heap_seq[b], heap_seq[a]
    heap_job[a], heap_job[b] = heap_job[b], heap_job[a]


@helper
def start(e: Any, c: Any, job: int, m: int) -> None:
    """``Simulation.start(job, m)``: the checks a staged choice can fail, then the start; a refusal sets ``c.err``."""
    N = c.n_machines
    R = c.n_resources
    if not fits(e.free, e.req, c, job, m):
        c.err, c.err_job, c.err_machine = E_NO_FIT, job, m
        return
    p = duration(e.work, e.dcls, e.tab, e.tab2, c, job, e.config_of[m], e.last[m])
    if not (0.0 <= p < INF):
        c.err, c.err_job, c.err_machine = E_CANNOT_RUN, job, m
        return
    for r in range(R):
        e.free[r * N + m] -= e.req[job * R + r]
    e.state[job] = RUNNING
    e.running[m] += 1
    c.started += 1
    e.start_t[job] = c.now
    e.machine_of[job] = m
    c.seq += 1
    # the completion heap, ordered by (time, sequence) as the engine's heapq of tuples
    i = c.hsize
    e.heap_t[i] = c.now + p
    e.heap_seq[i] = c.seq
    e.heap_job[i] = job
    c.hsize += 1
    while i > 0:
        up = (i - 1) >> 1
        if not heap_less(e.heap_t, e.heap_seq, i, up):
            break
        heap_swap(e.heap_t, e.heap_seq, e.heap_job, i, up)
        i = up


@helper
def complete(e: Any, c: Any) -> int:
    """The earliest running task finishes now; its machine is freed (an idle machine exactly empty)."""
    job = e.heap_job[0]
    c.hsize -= 1
    last = c.hsize
    e.heap_t[0], e.heap_seq[0], e.heap_job[0] = e.heap_t[last], e.heap_seq[last], e.heap_job[last]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= last:
            break
        if a + 1 < last and heap_less(e.heap_t, e.heap_seq, a + 1, a):
            a += 1
        if not heap_less(e.heap_t, e.heap_seq, a, i):
            break
        heap_swap(e.heap_t, e.heap_seq, e.heap_job, a, i)
        i = a
    N = c.n_machines
    R = c.n_resources
    m = e.machine_of[job]
    left = e.running[m] - 1
    e.running[m] = left
    for r in range(R):
        if left == 0:
            e.free[r * N + m] = e.cap[r * N + m]
        else:
            e.free[r * N + m] += e.req[job * R + r]
    e.state[job] = DONE
    e.finish_t[job] = c.now
    c.completed += 1
    e.last[m] = e.job_class[job]
    return job  # type: ignore[no-any-return]


@helper
def pairwise_sum(a: Any, lo: int, n: int, stk: Any, vals: Any) -> float:
    """``a[lo:lo+n].sum()`` as numpy reduces a contiguous row, to the bit (its pairwise summation).

    Blocks of up to 128 values: eight partial sums, then the rest; a longer range is split in
    two (the first part a multiple of eight long) and the two sums added. An explicit stack of
    ranges (``stk``) and of partial sums (``vals``) replaces the recursion.
    """
    stk[0], stk[1], stk[2] = lo, n, 0
    sp = 1
    vp = 0
    while sp > 0:
        sp -= 1
        first, count, combine = stk[3 * sp], stk[3 * sp + 1], stk[3 * sp + 2]
        if combine == 1:
            vp -= 1
            vals[vp - 1] = vals[vp - 1] + vals[vp]
        elif count <= PW_BLOCKSIZE:
            if count < 8:
                res = 0.0
                for i in range(count):
                    res += a[first + i]
            else:
                r0, r1, r2, r3 = a[first], a[first + 1], a[first + 2], a[first + 3]
                r4, r5, r6, r7 = a[first + 4], a[first + 5], a[first + 6], a[first + 7]
                i = 8
                stop = count - (count % 8)
                while i < stop:
                    r0 += a[first + i]
                    r1 += a[first + i + 1]
                    r2 += a[first + i + 2]
                    r3 += a[first + i + 3]
                    r4 += a[first + i + 4]
                    r5 += a[first + i + 5]
                    r6 += a[first + i + 6]
                    r7 += a[first + i + 7]
                    i += 8
                res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                while i < count:
                    res += a[first + i]
                    i += 1
            vals[vp] = res
            vp += 1
        else:
            n2 = count // 2
            n2 -= n2 % 8
            stk[3 * sp], stk[3 * sp + 1], stk[3 * sp + 2] = first, count, 1
            stk[3 * sp + 3], stk[3 * sp + 4], stk[3 * sp + 5] = first + n2, count - n2, 0
            stk[3 * sp + 6], stk[3 * sp + 7], stk[3 * sp + 8] = first, n2, 0
            sp += 3
    return vals[0]  # type: ignore[no-any-return]


@helper
def take_sample(free: Any, s: Any, c: Any) -> None:
    """``Simulation._sample``: queue (released, not started), running tasks, utilisation per resource."""
    si = c.sample
    N = c.n_machines
    s.s_queue[si] = c.arrived - c.held - c.started
    s.s_running[si] = c.started - c.completed
    for r in range(c.n_resources):
        used = s.total_cap[r] - pairwise_sum(free, r * N, N, s.pw_stk, s.pw_vals)
        s.s_util[si, r] = used / s.safe_cap[r]
    c.sample += 1


# -- the specification's state: uniforms, task lists, sorted jobs, the task queue ---------------------


@helper
def uniform(draws: Any, c: Any) -> float:
    """The next uniform of the specification's stream (``StagedRun.uniform``)."""
    u = draws[c.draw]
    c.draw += 1
    return u  # type: ignore[no-any-return]


@helper
def job_less(job_key: Any, a: int, b: int) -> bool:
    """Job a's J3 key before job b's: tuple order of the atoms' numbers, then the job number."""
    for k in range(job_key.shape[1]):
        x = job_key[a, k]
        y = job_key[b, k]
        if x != y:
            return x < y  # type: ignore[no-any-return]
    return a < b


@helper
def task_less(task_key: Any, a: int, b: int) -> bool:
    """Task a's T2 key before task b's: tuple order of the atoms' numbers, then the task number."""
    for k in range(task_key.shape[1]):
        x = task_key[a, k]
        y = task_key[b, k]
        if x != y:
            return x < y  # type: ignore[no-any-return]
    return a < b


@helper
def enqueue_job(waiting: Any, job_key: Any, c: Any, j: int) -> None:
    """Insert job j into the J3-sorted jobs with incoming tasks (``bisect.insort``)."""
    lo = 0
    hi = c.n_waiting
    while lo < hi:
        mid = (lo + hi) >> 1
        if job_less(job_key, j, waiting[mid]):
            hi = mid
        else:
            lo = mid + 1
    for i in range(c.n_waiting, lo, -1):
        waiting[i] = waiting[i - 1]
    waiting[lo] = j
    c.n_waiting += 1


@helper
def append_task(task_next: Any, job_head: Any, job_tail: Any, j: int, t: int) -> None:
    """Task t joins the end of job j's incoming tasks (release order)."""
    task_next[t] = -1
    if job_head[j] < 0:
        job_head[j] = t
    else:
        task_next[job_tail[j]] = t
    job_tail[j] = t


@helper
def queue_push(q: Any, task_key: Any, c: Any, t: int) -> None:
    i = c.q_size
    q[i] = t
    c.q_size += 1
    while i > 0:
        up = (i - 1) >> 1
        if not task_less(task_key, q[i], q[up]):
            break
        q[i], q[up] = q[up], q[i]
        i = up


@helper
def queue_pop(q: Any, task_key: Any, c: Any) -> None:
    c.q_size -= 1
    n = c.q_size
    q[0] = q[n]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= n:
            break
        if a + 1 < n and task_less(task_key, q[a + 1], q[a]):
            a += 1
        if not task_less(task_key, q[a], q[i]):
            break
        q[a], q[i] = q[i], q[a]
        i = a


# -- the atoms ----------------------------------------------------------------------------------------


@helper
def advise(codes: Any, args: Any, jobs: bool, job_active: Any, c: Any, j: int) -> int:
    """A deterministic J2 (``jobs``) or T1 composition for job j (or a task of job j): the worst advice."""
    worst = ADMIT
    for k in range(len(codes)):
        code = codes[k]
        x = args[k]
        if code == LIMIT_LOAD:
            a = ADMIT if c.n_active_tasks / float(c.n_machines) < x else STOP
        elif code == LIMIT_ACTIVE:
            a = ADMIT if (c.n_active_jobs if jobs else c.n_active_tasks) < x else STOP
        elif code == LIMIT_JOB:
            a = ADMIT if job_active[j] < x else DENY
        else:  # JOB_BALANCE
            jobs_now = c.n_active_jobs
            base = c.n_active_tasks / jobs_now if jobs_now else 0.0
            if base < 1.0:
                base = 1.0
            a = ADMIT if (job_active[j] + 1) / base <= x else DENY
        if a > worst:
            worst = a
    return worst


@helper
def advise_random(probs: Any, active: int, draws: Any, c: Any) -> int:
    """The ``Random(p)`` atoms of a composition: each draws; ADMIT if ``u <= p`` or nothing is active."""
    worst = ADMIT
    for k in range(len(probs)):
        a = ADMIT if uniform(draws, c) <= probs[k] or active == 0 else DENY
        if a > worst:
            worst = a
    return worst


@helper
def job_key(p: Any, r: Any, j: int) -> None:
    """J3: job j's key, taken at its admission."""
    for k in range(len(p.j3_kind)):
        kind = p.j3_kind[k]
        if kind == K_STATIC:
            r.job_key[j, k] = p.j3_static[k, j]
        elif kind == K_JOB_SUBMIT:
            r.job_key[j, k] = p.j3_sign[k] * r.job_submit[j]
        else:  # K_RANDOM: drawn at the job's arrival
            r.job_key[j, k] = r.job_random[j]


@helper
def task_key(p: Any, r: Any, c: Any, t: int, j: int) -> None:
    """T2: task t's key (its job j), taken as it enters the queue."""
    for k in range(len(p.t2_kind)):
        kind = p.t2_kind[k]
        sign = p.t2_sign[k]
        if kind == K_STATIC:
            v = p.t2_static[k, t]
        elif kind == K_HISTORY:
            cnt = r.hist_cnt[j]
            v = sign * r.hist_sum[j] / cnt if cnt else sign * INF
        elif kind == K_ACTIVE:
            v = sign * r.job_active[j]
        elif kind == K_COMPLETION:
            v = sign * r.job_done[j] / r.job_size[j]
        else:  # K_RANDOM
            v = uniform(r.draws, c)
        r.task_key[t, k] = v


@helper
def match_one(e: Any, p: Any, r: Any, c: Any, t: int, atom: int, check_runnable: bool) -> int:
    """:func:`match` for one atom (a First-Fit after it changes nothing): one pass over the machines.

    The best candidate by the atom's criterion, the lowest-numbered among equals (only a strictly
    better one replaces it); Random: a uniform pick among the candidates, drawn only if there is one.
    """
    N = c.n_machines
    lowest = atom == BEST_FIT or atom == CHEAP
    key = e.free if atom == BEST_FIT or atom == WORST_FIT else p.speed  # free cores: resource 0's row
    found = -1
    count = 0
    best = 0.0
    for m in range(N):
        if not fits(e.free, e.req, c, t, m) or (check_runnable and not r.runnable[e.config_of[m]]):
            continue
        if atom == FIRST_FIT:
            return m
        if atom == R_RANDOM:
            r.pick[count] = m
            count += 1
            continue
        v = key[m]
        if found < 0 or (v < best if lowest else v > best):
            found = m
            best = v
    if atom == R_RANDOM:
        return r.pick[int(uniform(r.draws, c) * count)] if count else -1
    return found


@inline_always
def match(e: Any, p: Any, r: Any, c: Any, t: int) -> int:
    """R5: the machine task t starts on now, or -1 where it fits nowhere (``atoms.machine_matcher``)."""
    N = c.n_machines
    check_runnable = c.all_runnable == 0
    if check_runnable:
        for cfg in range(c.n_configs):
            d = duration(e.work, e.dcls, e.tab, e.tab2, c, t, cfg, -1)
            r.runnable[cfg] = 0.0 <= d < INF
    atom = p.r5[0]
    if len(p.r5) == 1 or p.r5[1] == FIRST_FIT:
        return match_one(e, p, r, c, t, atom, check_runnable)
    first = -1
    for m in range(N):
        ok = fits(e.free, e.req, c, t, m) and (not check_runnable or r.runnable[e.config_of[m]])
        r.cand[m] = ok
        if ok and first < 0:
            first = m
    if first < 0:
        return -1
    for k in range(len(p.r5)):
        atom = p.r5[k]
        if atom == FIRST_FIT:
            return first
        if atom == R_RANDOM:
            count = 0
            for m in range(N):
                if r.cand[m]:
                    count += 1
            pick = int(uniform(r.draws, c) * count)
            for m in range(N):
                if r.cand[m]:
                    if pick == 0:
                        return m
                    pick -= 1
        lowest = atom == BEST_FIT or atom == CHEAP
        key = e.free if atom == BEST_FIT or atom == WORST_FIT else p.speed  # free cores: resource 0's row
        best = key[first]
        for m in range(first + 1, N):
            if r.cand[m] and (key[m] < best if lowest else key[m] > best):
                best = key[m]
        first = -1
        for m in range(N):
            if r.cand[m]:
                r.cand[m] = key[m] == best
                if r.cand[m] and first < 0:
                    first = m
    return first


# -- the cycle ------------------------------------------------------------------------------------------


@helper
def request(draws: Any, c: Any) -> None:
    """J1: ask for the next cycle (``StagedRun._request``); one wake-up is pending at a time."""
    c.pending = 1
    now = c.now
    if c.j1 == INTERACTIVE:
        c.timer = now
    elif c.j1 == BATCH:
        q = c.quantum
        t = (math.floor(now / q) + 1.0) * q
        if t <= now:
            t = now + q
        c.timer = t
    else:
        c.timer = now + int(uniform(draws, c) * RANDOM_DELAY_MS) / 1000.0


@inline_always
def on_arrival(r: Any, c: Any, t: int) -> None:
    """``StagedRun.on_arrival``: a released task waits with its job (incoming or active)."""
    j = r.job_of[t]
    state = r.job_state[j]
    if state == 2:
        empty = r.job_head[j] < 0
        append_task(r.task_next, r.job_head, r.job_tail, j, t)
        if empty:
            enqueue_job(r.waiting, r.job_key, c, j)
    elif state == 0:
        r.job_state[j] = 1
        r.job_submit[j] = c.now
        if c.j3_random:
            r.job_random[j] = uniform(r.draws, c)
        append_task(r.task_next, r.job_head, r.job_tail, j, t)
        r.incoming[c.in_hi] = j
        c.in_hi += 1
    else:
        append_task(r.task_next, r.job_head, r.job_tail, j, t)
    if c.pending == 0:
        request(r.draws, c)


@helper
def on_completion(e: Any, r: Any, c: Any, t: int) -> None:
    """``StagedRun.on_completion`` (history is always kept: only its key reads it)."""
    j = r.job_of[t]
    c.n_active_tasks -= 1
    r.job_active[j] -= 1
    done = r.job_done[j] + 1
    r.job_done[j] = done
    r.hist_sum[j] += c.now - e.start_t[t]
    r.hist_cnt[j] += 1
    if done == r.job_size[j]:
        r.job_state[j] = 3
        c.n_active_jobs -= 1
    if c.pending == 0:
        request(r.draws, c)


@inline_always
def admit_jobs(p: Any, r: Any, c: Any) -> None:
    """J2 then J3 (``StagedRun._admit_jobs``): denied jobs stay incoming, in order, ahead of the unasked."""
    lo, hi = c.in_lo, c.in_hi
    w = lo  # denied jobs are written back from lo on (never past the one being read)
    i = lo
    stopped = False
    while i < hi:
        j = r.incoming[i]
        a = advise(p.j2_det, p.j2_arg, True, r.job_active, c, j)
        if a == ADMIT and len(p.j2_rnd):
            a = advise_random(p.j2_rnd, c.n_active_jobs, r.draws, c)
        if a == ADMIT:
            r.job_state[j] = 2
            c.n_active_jobs += 1
            job_key(p, r, j)
            enqueue_job(r.waiting, r.job_key, c, j)
        elif a == DENY:
            r.incoming[w] = j
            w += 1
        else:
            stopped = True
            break
        i += 1
    if not stopped:
        c.in_hi = w
        return
    # the list is now: the denied ones, then the jobs from i on; move the denied up against i
    for k in range(w - lo):
        r.incoming[i - 1 - k] = r.incoming[w - 1 - k]
    c.in_lo = i - (w - lo)


@inline_always
def admit_tasks(p: Any, r: Any, c: Any) -> None:
    """T1 (``StagedRun._admit_tasks``): jobs in J3 order, each job's tasks in release order."""
    n = c.n_waiting
    kept = 0
    idx = 0
    stopped = False
    while idx < n and not stopped:
        j = r.waiting[idx]
        idx += 1
        prev = -1
        t = r.job_head[j]
        while t >= 0:
            nxt = r.task_next[t]
            a = advise(p.t1_det, p.t1_arg, False, r.job_active, c, j)
            if a == DENY:
                break  # the job's later tasks get the same answer: nothing changed
            if a == STOP:
                stopped = True
                break
            if len(p.t1_rnd) and advise_random(p.t1_rnd, c.n_active_tasks, r.draws, c) == DENY:
                prev = t  # it stays incoming, in its place
            else:
                if prev < 0:
                    r.job_head[j] = nxt
                else:
                    r.task_next[prev] = nxt
                if r.job_tail[j] == t:
                    r.job_tail[j] = prev
                task_key(p, r, c, t, j)
                queue_push(r.queue, r.task_key, c, t)
                r.job_active[j] += 1  # after its key: Active-Per-Job counts earlier admissions
                c.n_active_tasks += 1
            t = nxt
        if r.job_head[j] >= 0:
            r.waiting[kept] = j
            kept += 1
    if kept == idx:  # nothing left the list: the rest stays where it is
        return
    while idx < n:
        r.waiting[kept] = r.waiting[idx]
        kept += 1
        idx += 1
    c.n_waiting = kept


@inline_always
def dispatch(e: Any, p: Any, r: Any, c: Any) -> None:
    """T3 + R5 (``StagedRun._dispatch``): start queue heads until one fits nowhere."""
    while c.q_size > 0:
        t = r.queue[0]
        # A head that fit nowhere still fits nowhere while no task completed (starts only take capacity,
        # and no random number is drawn for a task without candidates): skip the scan.
        if t == c.blocked_task and c.completed == c.blocked_at:
            return
        m = match(e, p, r, c, t)
        if m < 0:
            if c.started == c.completed:  # every machine is empty: it can never start
                queue_pop(r.queue, r.task_key, c)
                c.unrunnable += 1
                c.n_active_tasks -= 1
                r.job_active[r.job_of[t]] -= 1
                continue
            c.blocked_task = t
            c.blocked_at = c.completed
            return
        queue_pop(r.queue, r.task_key, c)
        start(e, c, t, m)
        if c.err != 0:
            return


@helper
def release(waiting: Any, state: Any, c: Any, ch: int) -> bool:
    """A parent of task ch finished: ch is queued if that was its last; True if it has arrived (released now)."""
    left = waiting[ch] - 1
    waiting[ch] = left
    if left == 0:
        state[ch] = QUEUED
        if ch < c.arrived:
            c.held -= 1
            return True
    return False


@helper
def draws_needed(c: Any) -> int:
    """Uniforms one event may use at most: per waiting task, one per random atom that may ask about it."""
    if c.draws_per_task == 0:
        return 0
    return c.draws_per_task * (c.arrived - c.started + 2)  # type: ignore[no-any-return]


@entry
def step(e: Any, p: Any, r: Any, s: Any, cs: Any, budget: int) -> int:
    """The engine's loop (``Simulation._run_python``) with the staged cycle, for up to ``budget`` events."""
    c = cs[0]
    n = c.n_tasks
    n_s = len(s.sample_t)
    done = 0
    while True:
        i = c.arrived
        nxt = e.submit[i] if i < n else INF
        kind = 3
        t = INF
        if c.hsize > 0 and e.heap_t[0] <= nxt:
            t = e.heap_t[0]
            kind = 0
        elif i < n:
            t = nxt
            kind = 1
        if c.timer < t:  # wake-ups come after the completions and arrivals of their instant
            t = c.timer
            kind = 2
        elif kind == 3:
            return S_DONE
        if t > c.horizon and c.drain == 0.0:
            return S_DONE
        while c.sample < n_s and t >= s.sample_t[c.sample]:
            take_sample(e.free, s, c)
        if done >= budget:
            return S_BUDGET
        if c.n_draws - c.draw < draws_needed(c):
            return S_DRAWS
        c.now = t
        if kind == 1:
            c.arrived = i + 1
            if e.waiting[i] > 0:
                c.held += 1  # released when its last parent finishes
            else:
                on_arrival(r, c, i)
        elif kind == 2:
            c.timer = INF
            c.pending = 0
            # the cycle (StagedRun.cycle), written here: its stages are inlined (see inline_always)
            c.cycles += 1
            if c.in_hi > c.in_lo:
                admit_jobs(p, r, c)
            if c.n_waiting > 0:
                admit_tasks(p, r, c)
            if c.q_size > 0:
                dispatch(e, p, r, c)
        else:
            job = complete(e, c)
            on_completion(e, r, c, job)
            # children whose last parent it was are queued, and arrived ones released
            for k in range(e.child_ptr[job], e.child_ptr[job + 1]):
                if release(e.waiting, e.state, c, e.children[k]):
                    on_arrival(r, c, e.children[k])
        if c.err != 0:
            return S_ERROR
        done += 1
