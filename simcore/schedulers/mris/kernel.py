"""MRIS's compiled kernel: the decisions of :class:`~simcore.schedulers.mris.MRIS`, in numba.

Kept as the specification keeps them, because they decide float values or order:

* the candidate slots (job id and request per slot, a started job's slot
  emptied), the logical size of the slot arrays and the moments they are
  compacted: compaction recomputes the running total of the candidates'
  requests (equation 6's numerator) as numpy sums it (over the slots in
  order: one column of one resource is numpy's pairwise sum, two or more
  resources a plain sum row after row), so alpha is the same to the bit;
* the backlog (FIFO), the window, and every step of ``_place_new`` and
  ``_select_on`` in the same order (the engine's fit rule before each start).

The selection (``_select``) is computed with the same float operations as
the specification (profit, scarcity, efficiency, item profits, the division
step's ``floor((c + tol) / w)``, the capacity update ``c - x * w``) but
without sorting the items: the specification sorts them once and then
repeatedly takes the first item of which one job still fits, which is the
least such item in the sort's order (highest e, highest item profit, oldest
application, largest item, then position); items that no longer fit never
fit again (capacity only shrinks), so each pass scans only the items that
fitted in the previous one. The division step (an item that does not fit
whole) looks at the item's group: the live items of equal e from it onward
in that order.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, inline_always, njit

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.mris import MRIS


# st.info (int64) slots: slots in use, logical size of the slot arrays, candidates, backlog head and
# tail, the window, selections run
USED, SIZE, ALIVE, BL_HEAD, BL_TAIL, WINDOW, SELECTIONS = 0, 1, 2, 3, 4, 5, 6
INF = np.inf


class MRISState(NamedTuple):
    """MRIS's arrays (built by :func:`make`): its candidates, backlog and the selection's scratch."""

    ids: Any  #: ids per slot
    creq: Any  #: requests per slot, resource-major (r * P + slot)
    slot_of: Any  #: slot of each candidate
    total: Any  #: total request of the candidates
    backlog: Any  #: the backlog (FIFO: head and tail in info)
    app: Any  #: application of each job
    info: Any
    ranges: Any
    fit_slots: Any  #: scratch: slots that fit
    rank: Any  #: scratch: their application's rank, then the jobs chosen
    app_rank: Any  #: rank of each application in a selection (-1: none)
    app_first: Any  #: first slot of each ranked application
    app_fit: Any  #: its candidates that fit
    app_profit: Any  #: its profit p_j
    app_eff: Any  #: its efficiency e_j
    it_app: Any  #: items: application rank
    it_job: Any  #: items: jobs
    it_profit: Any  #: items: profit
    it_used: Any  #: items: used
    it_fit: Any  #: items that still fit
    chosen: Any  #: jobs chosen per application
    new_fit: Any  #: first fit of each new candidate
    new_jobs: Any  #: the new candidates being placed
    fscratch: Any  #: float scratch (see _select)


# -- the candidate set, as the specification keeps it -----------------------------------------


@inline
def _compact(core: Any, st: Any, grow: bool) -> None:
    """``MRIS._compact``: live slots moved to the front in order; the total recomputed as numpy sums it."""
    ids, creq, slot_of, total, info = st.ids, st.creq, st.slot_of, st.total, st.info
    R = core.dims[K.D_R]
    P = len(ids)
    n = info[USED]
    w = 0
    for s in range(n):
        j = ids[s]
        if j >= 0:
            if w != s:
                ids[w] = j
                for r in range(R):
                    creq[r * P + w] = creq[r * P + s]
            slot_of[j] = w
            w += 1
    for s in range(w, n):
        ids[s] = -1
        for r in range(R):
            creq[r * P + s] = INF
    if grow and w > info[SIZE] // 2:
        info[SIZE] *= 2
    info[USED] = w
    if R == 1:
        # a (alive, 1) array: numpy reduces the contiguous column pairwise
        total[0] = K.row_sum(core, creq, 0, w)
    else:
        for r in range(R):
            acc = 0.0
            for s in range(w):
                acc += creq[r * P + s]
            total[r] = acc


@inline_always
def _add(core: Any, st: Any, job: int) -> None:
    """``MRIS._add``: ``job`` joins the candidates in the next slot (the slots compacted first when full).

    On the arrival path (one call per job). numba inlines it (``inline_always``): LLVM would not,
    because of the call to :func:`_compact` in it (every array of ``core`` and ``st``, 378 words),
    and each arrival would pay a call of the same size.
    """
    ids, creq, slot_of, total, info = st.ids, st.creq, st.slot_of, st.total, st.info
    req = core.req
    R = core.dims[K.D_R]
    P = len(ids)
    if info[USED] == info[SIZE]:
        _compact(core, st, True)
    k = info[USED]
    ids[k] = job
    jb = job * R
    for r in range(R):
        creq[r * P + k] = req[jb + r]
    slot_of[job] = k
    info[USED] = k + 1
    info[ALIVE] += 1
    for r in range(R):
        total[r] += req[jb + r]


@inline
def _remove(core: Any, st: Any, job: int) -> None:
    ids, creq, slot_of, total, info = st.ids, st.creq, st.slot_of, st.total, st.info
    req = core.req
    R = core.dims[K.D_R]
    P = len(ids)
    k = slot_of[job]
    ids[k] = -1
    for r in range(R):
        creq[r * P + k] = INF
    info[ALIVE] -= 1
    if info[ALIVE] == 0:
        info[USED] = 0
        for r in range(R):
            total[r] = 0.0
    else:
        jb = job * R
        for r in range(R):
            total[r] -= req[jb + r]


@inline_always
def _refill(core: Any, st: Any, out: Any, off: int, extra: int) -> int:
    """``MRIS._refill`` (written to ``out[off:]``; returns how many joined), after ``extra`` if >= 0.

    ``extra``: an arriving job that joins the candidates (``MRIS._add``) when there is room. The
    backlog is then empty (it holds jobs only while the candidates fill the window: every
    start is followed by a refill), so it is the only job added, as in the specification.
    Inlined by numba, as :func:`_add` (its one call site, in :func:`_place`).
    """
    backlog, info = st.backlog, st.info
    cnt = 0
    while True:
        if extra >= 0:
            j = extra
            extra = -1
        elif info[BL_HEAD] < info[BL_TAIL] and info[ALIVE] < info[WINDOW]:
            j = backlog[info[BL_HEAD]]
            info[BL_HEAD] += 1
        else:
            break
        _add(core, st, j)
        out[off + cnt] = j
        cnt += 1
    return cnt


# -- placing -----------------------------------------------------------------------------------


@inline
def _first_fit(core: Any, st: Any, job: int) -> int:
    """``MRIS._first_fit``: the lowest machine where ``job`` fits now and can run, or -1."""
    dims = core.dims
    m = K.first_fit(core, job, 0, dims[K.D_N])
    if m < 0 or dims[K.D_ALL_RUNNABLE] == 1 or K.can_run(core, job, m):
        return m
    ranges = st.ranges
    for c in range(dims[K.D_CONFIGS]):
        lo, hi = ranges[c, 0], ranges[c, 1]
        if hi > lo and K.runnable_config(core, job, c):
            m = K.first_fit(core, job, lo, hi)
            if m >= 0:
                return m
    return -1


@inline
def _before(re: Any, rp: Any, irank: Any, iq: Any, ip: Any, a: int, b: int) -> bool:
    """Item a comes before item b in the specification's sort (a != b)."""
    ea = re[irank[a]]
    eb = re[irank[b]]
    if ea != eb:
        return ea > eb  # type: ignore[no-any-return]
    if ip[a] != ip[b]:
        return ip[a] > ip[b]  # type: ignore[no-any-return]
    if irank[a] != irank[b]:
        return irank[a] < irank[b]  # type: ignore[no-any-return]
    if iq[a] != iq[b]:
        return iq[a] > iq[b]  # type: ignore[no-any-return]
    return a < b


@inline
def _per(creq: Any, P: int, R: int, ct: Any, t_o: int, s: int) -> float:
    """``min_i floor((c_i + tol) / w_i)`` over the resources the item's application demands (inf if none)."""
    v = INF
    for r in range(R):
        w = creq[r * P + s]
        if w > 0:
            y = np.floor(ct[t_o + r] / w)
            if y < v:
                v = y
    return v


@inline
def _profits(core: Any, st: Any, m: int, nr: int) -> None:
    """Steps 1-2 of ``_select``: clipped alpha (equation 6), then each application's profit (equation 1) and
    efficiency (equation 5) into ``app_profit`` and ``app_eff``; ``chosen`` set to 0."""
    creq, total, fr = st.creq, st.total, st.fscratch
    rfirst, rp, re, chosen = st.app_first, st.app_profit, st.app_eff, st.chosen
    cap_m = core.cap
    N = core.dims[K.D_N]
    R = core.dims[K.D_R]
    P = len(st.ids)
    a_o, s_o = R, 4 * R  # fr: free capacity f, clipped alpha, remaining capacity, remaining + tol, shares
    for r in range(R):
        t = total[r]
        a = (t - fr[r]) / t if t > 0 else 0.0
        fr[a_o + r] = a if a > 0.0 else 0.0
    for k in range(nr):
        s = rfirst[k]
        tot = 0.0
        d = 0.0
        for r in range(R):
            w = creq[r * P + s]
            norm = cap_m[r * N + m]
            if w > 0:
                sh = w / norm if norm != 0 else INF
            else:
                sh = 0.0
            fr[s_o + r] = sh
            d += w * fr[a_o + r]
        if R < 8:
            for r in range(R):
                tot += fr[s_o + r]
        else:
            tot = K.row_sum(core, fr, s_o, R)
        rp[k] = R / tot if tot > 0 else INF
        re[k] = 1.0 / d if d > 0 else INF
        chosen[k] = 0


@inline
def _items(st: Any, nr: int) -> int:
    """The logarithmic transformation: every application's powers of two, then the remainders; the item count."""
    rcount, rp = st.app_fit, st.app_profit
    irank, iq, ip, iused, cand = st.it_app, st.it_job, st.it_profit, st.it_used, st.it_fit
    nit = 0
    for k in range(nr):
        q = 1
        left = rcount[k]
        while q <= left:
            irank[nit] = k
            iq[nit] = q
            ip[nit] = rp[k] * q
            nit += 1
            left -= q
            q *= 2
    for k in range(nr):
        q = 1
        left = rcount[k]
        while q <= left:
            left -= q
            q *= 2
        if left > 0:
            irank[nit] = k
            iq[nit] = left
            ip[nit] = rp[k] * left
            nit += 1
    for i in range(nit):
        iused[i] = 0
        cand[i] = i
    return nit


@inline
def _first_item(st: Any, R: int, ncand: int) -> tuple[int, int]:
    """The first item, in the sort's order, of which one job still fits the remaining capacity plus ``tol``
    (``fscratch``); the candidates kept to the items that fit. Returns ``(item or -1, candidates left)``."""
    creq, fr, rfirst, re, rp = st.creq, st.fscratch, st.app_first, st.app_eff, st.app_profit
    irank, iq, ip, iused, cand = st.it_app, st.it_job, st.it_profit, st.it_used, st.it_fit
    P = len(st.ids)
    t_o = 3 * R
    best = -1
    w_ = 0
    for i in range(ncand):
        it = cand[i]
        if iused[it]:
            continue
        s = rfirst[irank[it]]
        ok = True
        for r in range(R):
            # MRIS's knapsack rule (the specification's ``demands <= capacity + tol``), not the engine's fit rule
            if not creq[r * P + s] <= fr[t_o + r]:
                ok = False
                break
        if not ok:
            continue
        cand[w_] = it
        w_ += 1
        if best < 0 or _before(re, rp, irank, iq, ip, it, best):
            best = it
    return best, w_


@inline
def _group_pick(st: Any, R: int, nit: int, best: int) -> tuple[int, int]:
    """Step 5: in best's group (equal e, from best on), the highest X p_j among X > 0, first on ties:
    ``(item, jobs)``."""
    creq, fr, rfirst, re, rp = st.creq, st.fscratch, st.app_first, st.app_eff, st.app_profit
    irank, iq, ip, iused = st.it_app, st.it_job, st.it_profit, st.it_used
    P = len(st.ids)
    t_o = 3 * R
    eb = re[irank[best]]
    pick = -1
    bestv = -1.0
    xp = 0.0
    for it in range(nit):
        if iused[it] or re[irank[it]] != eb:
            continue
        if it != best and not _before(re, rp, irank, iq, ip, best, it):
            continue
        x = min(float(iq[it]), _per(creq, P, R, fr, t_o, rfirst[irank[it]]))
        if not x > 0:
            continue
        v = x * rp[irank[it]]
        if pick < 0 or v > bestv or (v == bestv and _before(re, rp, irank, iq, ip, it, pick)):
            pick = it
            bestv = v
            xp = x
    return pick, int(xp)


@inline
def _select(core: Any, st: Any, m: int, nr: int) -> None:
    """``_select`` on machine m for the ``nr`` applications found by ``_select_on``: ``chosen`` per application."""
    creq, fr, rfirst, chosen = st.creq, st.fscratch, st.app_first, st.chosen
    irank, iq, iused = st.it_app, st.it_job, st.it_used
    R = core.dims[K.D_R]
    P = len(st.ids)
    tol = K.FIT_EPS  # the knapsack's tolerance: the specification passes the engine's EPS
    c_o, t_o = 2 * R, 3 * R  # fr: free capacity f, clipped alpha, remaining capacity, remaining + tol, shares
    _profits(core, st, m, nr)
    nit = _items(st, nr)
    ncand = nit
    for r in range(R):
        fr[c_o + r] = fr[r]
    while True:
        for r in range(R):
            fr[t_o + r] = fr[c_o + r] + tol
        best, ncand = _first_item(st, R, ncand)
        if best < 0:
            break
        xb = min(float(iq[best]), _per(creq, P, R, fr, t_o, rfirst[irank[best]]))
        if xb >= iq[best]:
            pick = best  # step 4: the item fits whole
            n = iq[best]
        else:
            pick, n = _group_pick(st, R, nit, best)
        k = irank[pick]
        chosen[k] += n
        s = rfirst[k]
        for r in range(R):
            fr[c_o + r] -= n * creq[r * P + s]
        iused[pick] = 1


@inline
def _choose(core: Any, st: Any, m: int) -> int:
    """The selection of ``MRIS._select_on``: the chosen candidates in ``st.rank``, how many (-1: none fits)."""
    ids, creq, app, info = st.ids, st.creq, st.app, st.info
    fslot, frank, app_rank, rfirst, rcount, chosen, fr = (
        st.fit_slots,
        st.rank,
        st.app_rank,
        st.app_first,
        st.app_fit,
        st.chosen,
        st.fscratch,
    )
    free = core.free
    dims = core.dims
    N = dims[K.D_N]
    R = dims[K.D_R]
    P = len(ids)
    n = info[USED]
    # Candidates that fit now (the engine's fit rule, the specification's column scan).
    for r in range(R):
        fr[r] = free[r * N + m]
    nf = 0
    for s in range(n):
        ok = True
        for r in range(R):
            if not K.fits_one(fr[r], creq[r * P + s]):
                ok = False
                break
        if ok:
            fslot[nf] = s
            nf += 1
    if nf > 0 and dims[K.D_ALL_RUNNABLE] == 0:
        w = 0
        for i in range(nf):
            if K.can_run(core, ids[fslot[i]], m):
                fslot[w] = fslot[i]
                w += 1
        nf = w
    if nf == 0:
        return -1
    info[SELECTIONS] += 1
    # Applications among them, in order of their oldest job.
    nr = 0
    for i in range(nf):
        s = fslot[i]
        a = app[ids[s]]
        k = app_rank[a]
        if k < 0:
            k = nr
            app_rank[a] = k
            rfirst[k] = s
            rcount[k] = 0
            nr += 1
        rcount[k] += 1
        frank[i] = k
    for k in range(nr):
        app_rank[app[ids[rfirst[k]]]] = -1
    _select(core, st, m, nr)
    # The chosen count of each application goes to its oldest candidates; each is started if the
    # engine's fit rule still admits it (after the previous starts on m).
    started = 0
    for i in range(nf):
        k = frank[i]
        if chosen[k] > 0:
            chosen[k] -= 1
            frank[started] = ids[fslot[i]]  # frank[i] is not read again
            started += 1
    return started


@inline_always
def _start_chosen(core: Any, hp: Any, st: Any, m: int, started: int, selected: bool) -> tuple[Any, int]:
    """Start the candidates ``st.rank[:started]`` on m; after a selection, each only if the fit rule admits it.

    Every placement ends here (one call site, in :func:`_place`): inlined by numba, so a start costs
    no call of ``core`` and ``st`` (393 words) besides ``core.start``'s own.
    """
    frank, info = st.rank, st.info
    ctr = core.ctr
    done = 0
    for i in range(started):
        j = frank[i]
        if not selected or K.fits(core, j, m):
            hp = K.start_inlined(core, hp, j, m)
            if ctr[K.ERR] != 0:
                return hp, done
            _remove(core, st, j)
            done += 1
    if selected and info[USED] > 64 and 2 * info[ALIVE] < info[USED]:
        _compact(core, st, False)
    return hp, done


@inline_always
def _place(core: Any, hp: Any, st: Any, m0: int, job: int) -> Any:
    """``MRIS.on_completion`` on machine ``m0`` (``m0 >= 0``), or ``MRIS.on_arrival`` of ``job`` with room.

    One function for both, called from one place in ``step``, so numba copies it (``inline_always``)
    and the selection, first fit and starts once: its compile time grows with every inlined copy,
    and a call of ``_place`` passes every array of ``core`` and ``st`` (393 words), once per event.
    Only the path of every job is inlined (``_refill``, ``_add``, ``_start_chosen``); the selection
    (:func:`_choose`, with its own helpers) stays a call: it runs only once the candidates queue (none
    at load 0.9 on the google scenario), and its work is many times the call's.

    An arriving job joins the candidates and is placed by ``_place_new``; when there was no queue this
    is the specification's direct first fit: the job fits (it starts, and the candidate set is empty
    again, as before) or it waits.
    """
    pend, ffm = st.new_jobs, st.new_fit
    ctr = core.ctr
    state = core.state
    npend = 0  # the new candidates being placed (_place_new's ``pending``)
    m_sel = m0  # run the selection on this machine
    looped = False
    js = -1  # start this candidate on machine ms
    ms = -1
    extra = job
    while True:
        if m_sel >= 0 or js >= 0:
            # ``MRIS._select_on``: the selection on machine m_sel over the candidates, and its starts;
            # or (js >= 0) candidate js started on ms (``MRIS._start``, the one other place that starts
            # candidates: both share _start_chosen, so it is compiled once).
            if js >= 0:
                st.rank[0] = js
                started = 1
                m = ms
            else:
                started = _choose(core, st, m_sel)
                m = m_sel
            done = 0
            if started >= 0:
                hp, done = _start_chosen(core, hp, st, m, started, js < 0)
            if ctr[K.ERR] != 0:
                return hp
            if js < 0 and done == 0 and looped:
                # Defensive, as the specification: a new candidate fits on m_sel; never loop without progress.
                for i in range(npend):
                    if ffm[i] == m_sel:
                        js = pend[i]
                        ms = m_sel
                        break
                if js >= 0:
                    m_sel = -1
                    continue
        if m_sel >= 0 or js >= 0 or extra >= 0:
            # The new candidates not started, then the jobs that join.
            w = 0
            for i in range(npend):
                j = pend[i]
                if state[j] == K.QUEUED:
                    pend[w] = j
                    w += 1
            npend = w + _refill(core, st, pend, w, extra)
            extra = -1
            m_sel = -1
            js = -1
        if npend == 0:
            return hp
        # The first machine, in configuration order, where any new candidate fits.
        mb = -1
        for i in range(npend):
            mm = _first_fit(core, st, pend[i])
            ffm[i] = mm
            if mm >= 0 and (mb < 0 or mm < mb):
                mb = mm
        if mb < 0:
            return hp
        if npend == 1:
            js = pend[0]
            ms = mb
        else:
            m_sel = mb
            looped = True


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with MRIS's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core.ctr
    fl = core.fl
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            return status, hp
        fl[K.NOW] = t
        # One call site of _place, so numba copies its IR into step once.
        if kind == K.EV_ARRIVAL:
            job = K.arrive(core)
            m = -1
            info = st.info
            if info[ALIVE] >= info[WINDOW]:
                st.backlog[info[BL_TAIL]] = job
                info[BL_TAIL] += 1
                job = -1
        else:
            _, m = K.complete(core, hp)
            job = -1
            if st.info[ALIVE] == 0:
                m = -1
        if m >= 0 or job >= 0:
            hp = _place(core, hp, st, m, job)
        if ctr[K.ERR] != 0:
            return K.S_ERROR, hp
        done += 1


def make(sched: MRIS, sim: Simulation) -> Kernel:
    """MRIS's kernel state, as :meth:`MRIS.setup` leaves its own (empty candidate set, size 64)."""
    n = sim.n_jobs
    R = sim.request.shape[1]
    # The slot arrays double (``_compact(grow=True)``) only while half of them holds fewer
    # candidates than there are, and there are at most min(window, jobs): P is their largest size.
    most = max(1, min(sched.window_size, n))
    P = 64
    while P // 2 < most:
        P *= 2
    app = np.ascontiguousarray(sched._app, dtype=np.int64)
    n_apps = int(app.max()) + 1 if n else 1
    info = np.zeros(7, dtype=np.int64)
    info[SIZE] = len(sched._ids)
    info[WINDOW] = min(sched.window_size, 1 << 62)
    n_cfg = sim.view.n_configs
    state = MRISState(
        ids=np.full(P, -1, dtype=np.int64),  # ids per slot
        creq=np.full(R * P, np.inf),  # requests per slot, resource-major (r * P + slot)
        slot_of=np.full(max(n, 1), -1, dtype=np.int64),  # slot of each candidate
        total=np.zeros(R),  # total request of the candidates
        backlog=np.zeros(max(n, 1), dtype=np.int64),  # the backlog (FIFO: head and tail in info)
        app=app if n else np.zeros(1, dtype=np.int64),  # application of each job
        info=info,
        ranges=np.array(sim.view.config_ranges, dtype=np.int64).reshape(n_cfg, 2),
        fit_slots=np.zeros(P, dtype=np.int64),  # scratch: slots that fit
        rank=np.zeros(P, dtype=np.int64),  # scratch: their application's rank, then the jobs chosen
        app_rank=np.full(n_apps, -1, dtype=np.int64),  # rank of each application in a selection (-1: none)
        app_first=np.zeros(P, dtype=np.int64),  # first slot of each ranked application
        app_fit=np.zeros(P, dtype=np.int64),  # its candidates that fit
        app_profit=np.zeros(P),  # its profit p_j
        app_eff=np.zeros(P),  # its efficiency e_j
        it_app=np.zeros(P, dtype=np.int64),  # items: application rank
        it_job=np.zeros(P, dtype=np.int64),  # items: jobs
        it_profit=np.zeros(P),  # items: profit
        it_used=np.zeros(P, dtype=np.uint8),  # items: used
        it_fit=np.zeros(P, dtype=np.int64),  # items that still fit
        chosen=np.zeros(P, dtype=np.int64),  # jobs chosen per application
        new_fit=np.zeros(P, dtype=np.int64),  # first fit of each new candidate
        new_jobs=np.zeros(P, dtype=np.int64),  # the new candidates being placed
        fscratch=np.zeros(5 * R),  # float scratch (see _select)
    )

    def done() -> None:
        # The specification's state as it would be after the run (tests compare it).
        ids, creq, total = state.ids, state.creq, state.total
        size, used = int(info[SIZE]), int(info[USED])
        sched.selections = int(info[SELECTIONS])
        sched._ids = ids[:size].copy()
        sched._creq = np.ascontiguousarray(creq.reshape(R, P)[:, :size].T)
        sched._used = used
        sched._slot_of = {int(j): k for k, j in enumerate(ids[:used].tolist()) if j >= 0}
        sched._total = total.copy()
        sched._backlog = deque(state.backlog[int(info[BL_HEAD]) : int(info[BL_TAIL])].tolist())

    return Kernel(step=step, state=state, done=done, tree=True)
