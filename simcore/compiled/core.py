"""The engine's rules in compiled code: events, the fit rule, starts and completions.

A scheduler's kernel (its ``kernel.py``, beside its Python specification) is
one ``step`` function: the engine's event loop with the scheduler's decisions
inlined, built from the helpers here. Every helper does exactly what
:class:`simcore.engine.Simulation` does, in the same order and with the same
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

State is passed as one tuple ``core`` of the engine's own arrays (no copies:
the engine's view shows what a kernel did) and the heap as a tuple ``hp`` that
a push may reallocate, which is why functions that start jobs return it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simcore.compiled.jit import inline, njit
from simcore.fit import EPS

# ctr (int64) slots
ARRIVED, STARTED, COMPLETED, SEQ, HSIZE, ERR, ERR_JOB, ERR_MACHINE, DRAW, SAMPLE = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
N_CTR = 10
# fl (float64) slots
NOW, HORIZON, DRAIN = 0, 1, 2
# dims (int64) slots
D_N, D_R, D_JOBS, D_MODE, D_ALL_RUNNABLE, D_CONFIGS = 0, 1, 2, 3, 4, 5
# runtime model kinds (see simcore.compiled.driver.runtime_form)
FIXED, SPEED, RATE, PROFILE = 0, 1, 2, 3
# job states (the engine's)
QUEUED, RUNNING, DONE = 0, 1, 2
# error codes of start()
E_NOT_ARRIVED, E_NO_MACHINE, E_TWICE, E_NO_FIT, E_CANNOT_RUN = 1, 2, 3, 4, 5
# events
EV_COMPLETION, EV_ARRIVAL, EV_NONE = 0, 1, 2
# step() results (GO: no result yet, handle the event)
S_DONE, S_BUDGET, S_ERROR, S_DRAWS, GO = 0, 1, 2, 3, -1
#: numpy's pairwise summation works on blocks of this many values.
PW_BLOCKSIZE = 128

INF = math.inf
FIT_EPS = EPS


@inline
def duration(core: Any, job: int, c: int, last_c: int) -> float:
    """``runtime.duration(job, c, last_c)`` of the workload's model (see ``runtime_form``)."""
    dims = core[17]
    mode = dims[D_MODE]
    work = core[11]
    if mode == FIXED:
        return work[job]  # type: ignore[no-any-return]
    tab = core[13]
    if mode == SPEED:
        return work[job] * tab[0, c]  # type: ignore[no-any-return]
    k = core[12][job]
    if k < 0:
        k += tab.shape[0]  # the Python models index a list: -1 is the last row
    if mode == RATE:
        rate = tab[k, c]
        if rate <= 0:
            return INF
        return work[job] / rate  # type: ignore[no-any-return]
    if last_c == core[12][job]:
        return core[14][k, c]  # type: ignore[no-any-return]
    return tab[k, c]  # type: ignore[no-any-return]


@inline
def can_run(core: Any, job: int, m: int) -> bool:
    p = duration(core, job, core[10][m], core[4][m])
    return 0.0 <= p < INF


@inline
def runnable_config(core: Any, job: int, c: int) -> bool:
    """Whether ``job`` has a finite time on an idle machine of configuration ``c``."""
    p = duration(core, job, c, -1)
    return 0.0 <= p < INF


@inline
def fits(core: Any, job: int, m: int) -> bool:
    """The engine's fit rule: ``free >= request - EPS`` in every resource."""
    free = core[0]
    req = core[2]
    dims = core[17]
    N = dims[D_N]
    R = dims[D_R]
    jb = job * R
    for r in range(R):
        if not free[r * N + m] >= req[jb + r] - FIT_EPS:
            return False
    return True


@inline
def first_fit(core: Any, job: int, lo: int, hi: int) -> int:
    """Lowest-numbered machine in ``lo..hi-1`` where ``job`` fits now, or -1 (``EngineView.first_fit``)."""
    free = core[0]
    req = core[2]
    dims = core[17]
    N = dims[D_N]
    R = dims[D_R]
    jb = job * R
    if R == 2:
        f0 = req[jb] - FIT_EPS
        f1 = req[jb + 1] - FIT_EPS
        for m in range(lo, hi):
            if free[m] >= f0 and free[N + m] >= f1:
                return m
        return -1
    for m in range(lo, hi):
        ok = True
        for r in range(R):
            if not free[r * N + m] >= req[jb + r] - FIT_EPS:
                ok = False
                break
        if ok:
            return m
    return -1


# -- the completion heap: (time, sequence) keys, job payload ---------------------------------


@inline
def _less(ht: Any, hs: Any, a: int, b: int) -> bool:
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])  # type: ignore[no-any-return]


@inline
def heap_push(hp: Any, size: int, t: float, seq: int, job: int) -> Any:
    ht, hs, hj = hp
    if size == len(ht):
        cap = max(16, 2 * len(ht))
        nt = np.empty(cap, np.float64)
        ns = np.empty(cap, np.int64)
        nj = np.empty(cap, np.int64)
        nt[:size] = ht[:size]
        ns[:size] = hs[:size]
        nj[:size] = hj[:size]
        ht, hs, hj = nt, ns, nj
    i = size
    ht[i] = t
    hs[i] = seq
    hj[i] = job
    while i > 0:
        p = (i - 1) >> 1
        if _less(ht, hs, i, p):
            ht[i], ht[p] = ht[p], ht[i]
            hs[i], hs[p] = hs[p], hs[i]
            hj[i], hj[p] = hj[p], hj[i]
            i = p
        else:
            break
    return (ht, hs, hj)


@inline
def heap_pop(hp: Any, size: int) -> int:
    """Remove the least entry (``size`` > 0); returns its job."""
    ht, hs, hj = hp
    job = hj[0]
    last = size - 1
    ht[0] = ht[last]
    hs[0] = hs[last]
    hj[0] = hj[last]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= last:
            break
        b = a + 1
        c = b if b < last and _less(ht, hs, b, a) else a
        if _less(ht, hs, c, i):
            ht[i], ht[c] = ht[c], ht[i]
            hs[i], hs[c] = hs[c], hs[i]
            hj[i], hj[c] = hj[c], hj[i]
            i = c
        else:
            break
    return job  # type: ignore[no-any-return]


# -- the engine's actions ------------------------------------------------------------------


@inline
def fail(core: Any, code: int, job: int, m: int) -> None:
    ctr = core[15]
    if ctr[ERR] == 0:
        ctr[ERR] = code
        ctr[ERR_JOB] = job
        ctr[ERR_MACHINE] = m


@inline
def start(core: Any, hp: Any, job: int, m: int) -> Any:
    """``Simulation.start(job, m)``: every check before any change; a refusal sets ``ctr[ERR]``."""
    free, req, running, last, state = core[0], core[2], core[3], core[4], core[5]
    ctr = core[15]
    dims = core[17]
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
    p = duration(core, job, core[10][m], last[m])
    if not (0.0 <= p < INF):
        fail(core, E_CANNOT_RUN, job, m)
        return hp
    jb = job * R
    for r in range(R):
        free[r * N + m] -= req[jb + r]
    now = core[16][NOW]
    state[job] = RUNNING
    running[m] += 1
    ctr[STARTED] += 1
    core[6][job] = now
    core[8][job] = m
    ctr[SEQ] += 1
    hp = heap_push(hp, ctr[HSIZE], now + p, ctr[SEQ], job)
    ctr[HSIZE] += 1
    return hp


@inline
def next_event(core: Any, hp: Any) -> tuple[int, float]:
    """The next event's kind and time, as the engine's loop picks it (``EV_NONE``: the run is over)."""
    ctr = core[15]
    fl = core[16]
    i = ctr[ARRIVED]
    n = core[17][D_JOBS]
    nxt = core[9][i] if i < n else INF
    if ctr[HSIZE] > 0 and hp[0][0] <= nxt:
        kind = EV_COMPLETION
        t = hp[0][0]
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
    ctr = core[15]
    ctr[ARRIVED] += 1
    return ctr[ARRIVED] - 1  # type: ignore[no-any-return]


@inline
def complete(core: Any, hp: Any) -> tuple[int, int]:
    """The earliest running job finishes now; its machine is freed. Returns ``(job, machine)``."""
    free, cap, req, running, last = core[0], core[1], core[2], core[3], core[4]
    ctr = core[15]
    dims = core[17]
    N = dims[D_N]
    R = dims[D_R]
    job = heap_pop(hp, ctr[HSIZE])
    ctr[HSIZE] -= 1
    m = core[8][job]
    left = running[m] - 1
    running[m] = left
    if left == 0:
        for r in range(R):
            free[r * N + m] = cap[r * N + m]  # an idle machine is exactly empty
    else:
        jb = job * R
        for r in range(R):
            free[r * N + m] += req[jb + r]
    core[5][job] = DONE
    core[7][job] = core[16][NOW]
    ctr[COMPLETED] += 1
    last[m] = core[18][job]
    return job, m


# -- samples of the queue, running jobs and utilisation, as the Python loop takes them ---------


@njit
def _pairwise(a: Any, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo+n]`` (its ``pairwise_sum``), so the sums agree to the bit."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= PW_BLOCKSIZE:
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
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, lo, n2) + _pairwise(a, lo + n2, n - n2)  # type: ignore[no-any-return]


@inline
def row_sum(a: Any, lo: int, n: int) -> float:
    """``a[lo:lo+n].sum()`` as numpy reduces a contiguous row (its identity 0 plus the pairwise sum)."""
    return _pairwise(a, lo, n)


@inline
def take_sample(core: Any, smp: Any, si: int) -> None:
    """``Simulation._sample``: queue length, running jobs and utilisation per resource."""
    s_queue, s_running, s_util, total_cap, safe_cap = smp[1], smp[2], smp[3], smp[4], smp[5]
    ctr = core[15]
    free = core[0]
    dims = core[17]
    N = dims[D_N]
    s_queue[si] = ctr[ARRIVED] - ctr[STARTED]
    s_running[si] = ctr[STARTED] - ctr[COMPLETED]
    for r in range(dims[D_R]):
        s_util[si, r] = (total_cap[r] - row_sum(free, r * N, N)) / safe_cap[r]


@inline
def before_event(core: Any, hp: Any, smp: Any, done: int, budget: int) -> tuple[int, int, float]:
    """The loop's head: the next event, samples due before it, the chunk's budget.

    Returns ``(GO, kind, t)`` to handle the event, else ``(S_DONE or S_BUDGET, kind, t)``.
    """
    kind, t = next_event(core, hp)
    if kind == EV_NONE:
        return S_DONE, kind, t
    ctr = core[15]
    sample_t = smp[0]
    n_s = len(sample_t)
    while ctr[SAMPLE] < n_s and t >= sample_t[ctr[SAMPLE]]:
        take_sample(core, smp, ctr[SAMPLE])
        ctr[SAMPLE] += 1
    if done >= budget:
        return S_BUDGET, kind, t
    return GO, kind, t
