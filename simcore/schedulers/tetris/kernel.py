"""Tetris's compiled kernel: the decisions of :class:`~simcore.schedulers.tetris.Tetris`, in numba.

The specification's scores, with its float operations in its order (a
product per resource summed from resource 0 up, then the work term
subtracted), so every maximum and every tie comes out the same:

* **Arrival.** The best-scoring machine among those where the job fits
  (ties: the lowest index) is found by branch and bound over a max tree of
  the machines' free capacity, kept by the kernel. Its leaves are blocks of
  ``BLOCK`` machines (a search scans a block's machines with the fit rule and
  the score), and it keeps ``LEVELS`` levels: level l holds only the machines
  whose *room* (``_room``: the least over resources of the free capacity in
  units of a typical request) reaches a threshold, level 0 every machine. A
  job searches the highest level its own fit floors' room reaches, which holds
  every machine where it fits (the room is monotone), so the machines with
  much free CPU and no memory to spare no longer make the bounds of subtrees
  where the job cannot fit (on the paper-scale Figure 11 point a search opened
  216 nodes without levels, 51 with them). Each level is a tree of its own, brought up to date
  only when a search reads it (``_tree_flush``; a start or a completion only
  marks its block stale in the levels that hold the machine), and all of them
  whenever the kernel returns. Per node and level the tree keeps
  the largest free capacity in each resource, and with two resources the
  largest ``(1 - t) C_0 / cmax_0 + t C_1 / cmax_1`` for a few directions ``t``.
  A node's bound is at least the score of every machine under it: the
  per-resource bound ``sum_r a_r max C_r`` is computed with the score's own
  operations, and with ``a_r >= 0`` round-to-nearest is monotone in each
  product and sum (the argument of :mod:`~simcore.schedulers.tetris.score_index`);
  the directional bound (the job's direction as a mix of the two nearest
  directions) is exact in real numbers and carries a margin far above the
  rounding of either side. Subtrees whose bound is below the best score found,
  or equal to it but holding only higher machine indices, are skipped, as are
  those where the job fits on no machine (the fit rule on the per-resource
  maxima). (Requests are non-negative: :class:`~simcore.core.model.Workload`
  refuses others.) The work term per configuration is the specification's:
  left out when it is the same everywhere (mode ``config``), exact per
  machine from its last class (mode ``general``, where the bound subtracts
  the smaller of the warm and the cold term).
* **Completion.** The queued jobs are a list in arrival order, identified by
  their job number; their packing weights, fit floors and work terms are
  recomputed from the request with the specification's operations, which
  gives the very floats it stores. The best-scoring job that fits on the
  freed machine starts (ties: the earliest arrival), then the next, as the
  specification's scan (a start only shrinks the machine's free capacity, so
  rescanning the queue finds what the scan's shrinking candidate set holds).
  A per-resource lower bound of the queued fit floors skips completions where
  nothing can fit. From ``GRID_ON`` queued jobs on (until fewer than ``GRID_OFF``
  remain) the jobs are also kept in a grid of buckets over their fit floors in
  the first two resources, with the specification's ``ScoreIndex`` bounds
  (smallest fit floor, largest packing weight per resource, smallest work term
  per configuration; loose after a start until the bucket's next visit): the
  buckets are visited in decreasing bound until the next bound is below the best
  score found (an equal bound is visited: an earlier arrival may tie), so a
  completion scores a few buckets, not the whole queue. The grid's edges are
  approximate quantiles of the queued jobs' fit floors, set whenever the grid is
  built: when the queue reaches ``GRID_ON`` jobs, and again each time it has doubled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import Kernel
from simcore.compiled.jit import inline, inline_always, njit
from simcore.core.view import EPS

if TYPE_CHECKING:
    from simcore.core.engine import Simulation
    from simcore.schedulers.tetris import Tetris

# The specification's runtime modes
FIXED, CONFIG, GENERAL = 0, 1, 2
# st.info (int64) slots: mode, queued jobs, list head, list tail, leaves of the tree, grid in use,
# grid columns (cells a row), work-term columns, queued jobs when the grid was last built
I_MODE, I_QCOUNT, I_HEAD, I_TAIL, I_P, I_GRID, I_G1, I_NP, I_GBUILT = 0, 1, 2, 3, 4, 5, 6, 7, 8
N_INFO = 9


class TetrisState(NamedTuple):
    """Tetris's arrays (built by :func:`make`): the queue, the grid of queued jobs, the levels' trees, scratch."""

    inv: Any  #: one over each resource's largest capacity
    inv2: Any  #: its square
    wfac: Any  #: work_weight / p_bar
    seg_cfg: Any  #: configuration of each segment
    seg_of: Any  #: segment of each machine
    gseg: Any  #: scratch: the arrival's work term per segment
    info: Any  #: int64 slots I_MODE...
    qnext: Any  #: next queued job
    qprev: Any  #: previous queued job
    qmin: Any  #: lower bound of the queued fit floors
    stack: Any  #: the branch and bound's stack (at most 2 entries a level)
    stack_ub: Any  #: its bounds
    fl: Any  #: scratch: the arrival's fit floors
    a: Any  #: scratch: its packing weights
    f: Any  #: scratch: the freed machine's capacity
    tree: Any  #: the levels' max trees: per level and node, maxima per resource, direction
    dirs: Any  #: the directions
    qry: Any  #: the arrival's query (see _prepare_query), work factor and level
    g_next: Any  #: the grid: next job in its cell
    g_prev: Any  #: previous in its cell
    g_head: Any  #: first job of each cell
    g_tail: Any  #: last job of each cell
    g_count: Any  #: jobs in each cell
    g_dirty: Any  #: a job left since the cell's bounds were computed
    g_lo: Any  #: smallest fit floor per resource
    g_amax: Any  #: largest packing weight per resource
    g_wmin: Any  #: smallest work term per work column
    g_e0: Any  #: edges in resource 0
    g_e1: Any  #: edges in resource 1
    g_cand: Any  #: scratch: candidate cells of a query
    g_ub: Any  #: scratch: their bounds
    g_hist: Any  #: scratch: a histogram of the queued jobs' fit floors (the edges' quantiles)
    theta: Any  #: the levels' thresholds of room (level 0: -inf, every machine)
    room_w: Any  #: the room's weights
    mval: Any  #: each machine's values: free capacity per resource, then per direction
    mroom: Any  #: each machine's room (``_room``)
    acc: Any  #: scratch: a block's maxima
    dirty: Any  #: per level: [0, P) a block is stale, [P, 2P) the stale blocks, [2P] how many


#: Queued jobs from which completions search the grid, and below which they scan the list again.
GRID_ON, GRID_OFF = 256, 64
#: Grid cells per side (two or more resources: a square over the first two).
GRID_SIDE = 16
#: Bins of the histogram the grid's edges are read from (approximate quantiles of the queued jobs' floors).
GRID_BINS = 1024
# st.qry (float64) slots: the arrival's direction for the directional bound, its work factor, its tree level
Q_S, Q_I, Q_LAM, Q_MARGIN, Q_GF, Q_LVL = 0, 1, 2, 3, 4, 5
#: Directions of the tree's directional maxima (two resources): (1 - t, t) for t = k / (DIRECTIONS - 1).
#: (With every level brought up to date at every change, nine made the updates dearer than the nodes they
#: saved; with levels brought up to date only when searched (``_tree_flush``) and branch-free updates,
#: nine against five ran the google bench scenario 1.2-1.3x faster and the paper-scale point about the
#: same or faster. Seventeen was no faster than nine.)
DIRECTIONS = 9
#: Levels of the tree: level l keeps only the machines whose room (``_room``) is at least ``st.theta[l]``
#: (level 0: every machine). A job searches the highest level whose threshold its own room floor reaches,
#: which holds every machine where it fits, and so its bounds leave out machines where it cannot fit.
#: On the paper-scale Figure 11 point (memory 94% in use) the machines with the most free CPU and no
#: memory to spare made the bounds of most subtrees: a search expanded about 216 nodes and computed 403
#: bounds, with four levels 58 and 88, and a run of 10 hours took 0.4 of the time. (A best-first search
#: opened fewer nodes but its heap cost more than it saved.) With nine directions, three levels: the
#: google scenario ran 1.25x faster with three than with four, the 4-hour paper point 3% slower; two
#: levels cost the paper point 15% (docs/notes/tetris.md).
LEVELS = 3
#: Machines per leaf of the tree: a leaf holds the maxima of a block of machines, which a search scans
#: (the fit rule and the score of each) instead of descending three more levels. (Sixteen was slower.)
BLOCK = 8
NEG_INF = -K.INF


# -- what the helpers take ----------------------------------------------------------------------
#
# A helper LLVM does not inline (the arrival's search, the completion's, the enqueue) is a call that passes
# every array of every tuple it is given as separate words (seven a 1-D array): ``core`` and the whole state
# were about 490 words a call, several calls a job (issue 27). ``step`` builds these three small tuples of the
# arrays the helpers read, once per call of ``step``, and the helpers take them instead.


class Jobs(NamedTuple):
    """The engine's arrays a score reads, and Tetris's constants (``K.duration`` reads the first five by name)."""

    dims: Any  #: the engine's sizes (``core.dims``)
    work: Any  #: the run-time model's work per job
    dcls: Any  #: its class per job
    tab: Any  #: its table
    tab2: Any  #: its second table
    req: Any  #: requests, jobs x R flat
    free: Any  #: free capacity, R x N flat
    config_of: Any  #: each machine's configuration
    last: Any  #: the class of the last job each machine ran
    info: Any  #: Tetris's int64 slots (``I_MODE``...)
    inv: Any  #: one over each resource's largest capacity
    inv2: Any  #: its square
    wfac: Any  #: work_weight / p_bar


class Search(NamedTuple):
    """The arrival's search: the levels' trees and the query's scratch (fields of :class:`TetrisState`)."""

    tree: Any
    mval: Any
    mroom: Any
    theta: Any
    room_w: Any
    dirty: Any
    acc: Any
    stack: Any
    stack_ub: Any
    fl: Any
    a: Any
    qry: Any
    seg_of: Any
    seg_cfg: Any
    gseg: Any


class Queue(NamedTuple):
    """The queued jobs: the list in arrival order and the grid (fields of :class:`TetrisState`)."""

    info: Any
    qnext: Any
    qprev: Any
    qmin: Any
    f: Any
    g_next: Any
    g_prev: Any
    g_head: Any
    g_tail: Any
    g_count: Any
    g_dirty: Any
    g_lo: Any
    g_amax: Any
    g_wmin: Any
    g_e0: Any
    g_e1: Any
    g_cand: Any
    g_ub: Any
    g_hist: Any


@inline
def _runnable(p: float) -> float:
    """The specification's ``_runnable``: ``p`` if ``0 <= p < inf``, else +inf (NaN included)."""
    if 0.0 <= p < K.INF:
        return p
    return K.INF


@inline
def _gfac(jb: Any, job: int) -> float:
    """``Tetris._factors``'s work factor ``w * sum_l (r_l / cmax_l) / p_bar``, with its float operations.

    (With two resources the specification adds the two products directly; the sum from 0.0
    differs only in the sign of a zero, which no score comparison sees.)
    """
    req = jb.req
    R = jb.dims[K.D_R]
    inv = jb.inv
    s = 0.0
    for r in range(R):
        s += req[job * R + r] * inv[r]
    return s * jb.wfac[0]  # type: ignore[no-any-return]


@inline
def _p(jb: Any, job: int, c: int, last: int) -> float:
    """The specification's processing time of ``job`` on configuration c after class ``last``, made runnable.

    Mode fixed: the time is the same everywhere (configuration 0, as the specification asks).
    """
    if jb.info[I_MODE] == FIXED:
        c = 0
    return _runnable(K.duration(jb, job, c, last))


@inline
def _cls(jb: Any, job: int) -> int:
    """The job's class where the run-time model has one that matters (profiles: warm or cold), else -1."""
    if jb.dims[K.D_MODE] == K.PROFILE:
        return jb.dcls[job]  # type: ignore[no-any-return]
    return -1


@inline
def _work(gf: float, p: float) -> float:
    """The specification's ``_work``: +inf where the job cannot run, whatever the weight."""
    if p == K.INF:
        return K.INF
    return gf * p


@inline
def _queued_work(gf: float, p: float) -> float:
    """The work term as the specification's completion scan computes it: ``g * p``, NaN (0 * inf) made +inf."""
    w = gf * p
    if w != w:
        return K.INF
    return w


@inline
def _leaf_score(jb: Any, sr: Any, job: int, m: int, use_g: int) -> float:
    """Machine m's score for ``job`` (its packing weights in ``sr.a``), the specification's floats."""
    free = jb.free
    dims = jb.dims
    N = dims[K.D_N]
    R = dims[K.D_R]
    a = sr.a
    s = free[m] * a[0]
    for r in range(1, R):
        s += free[r * N + m] * a[r]
    if use_g == 1:
        s -= sr.gseg[sr.seg_of[m]]
    elif use_g == 2:
        s -= _work(sr.qry[Q_GF], _p(jb, job, jb.config_of[m], jb.last[m]))
    return s  # type: ignore[no-any-return]


@inline
def _node_gmin(sr: Any, lo: int, hi: int) -> float:
    """The least work term of the configurations of machines ``lo..hi-1``."""
    seg_of = sr.seg_of
    gseg = sr.gseg
    s0 = seg_of[lo]
    s1 = seg_of[hi - 1]
    g = gseg[s0]
    for s in range(s0 + 1, s1 + 1):
        if gseg[s] < g:
            g = gseg[s]
    return g  # type: ignore[no-any-return]


@inline_always
def _node_bound(sr: Any, N: int, R: int, node: int, lo: int, size: int, use_g: int) -> float:
    """An upper bound of the scores under ``node`` (machines ``lo..lo+size-1``), or -inf if the job fits on none."""
    q = sr.qry
    V = sr.tree[int(q[Q_LVL]), node]
    fl = sr.fl
    for r in range(R):
        if not K.reaches(V[r], fl[r]):
            return NEG_INF
    a = sr.a
    ub = V[0] * a[0]
    for r in range(1, R):
        ub += V[r] * a[r]
    if q[Q_S] > 0.0:
        # The directional bound: the job's direction between the tree's directions i and i + 1.
        i = R + int(q[Q_I])
        x = V[i]
        y = V[i + 1]
        lam = q[Q_LAM]
        ud = q[Q_S] * (lam * x + (1.0 - lam) * y)
        ud += q[Q_MARGIN] * (abs(x) + abs(y) + 1.0)
        if ud < ub:
            ub = ud
    if use_g != 0:
        hi = lo + size
        if hi > N:
            hi = N
        ub -= _node_gmin(sr, lo, hi)
    return ub  # type: ignore[no-any-return]


@inline_always
def _room(inv: Any, w: Any, v: Any, R: int) -> float:
    """A machine's room for the tree's levels: ``min_r((v_r / cmax_r) * w_r)`` of free capacities ``v``
    (``inv``: one over each resource's largest capacity, ``w``: the room's weights).

    Monotone in each ``v_r`` (rounded products by positive numbers and a minimum are): a machine
    where a job fits (``free >= floor`` in every resource) has at least the room of the job's floors.
    """
    h = (v[0] * inv[0]) * w[0]
    for r in range(1, R):
        x = (v[r] * inv[r]) * w[r]
        if x < h:
            h = x
    return h  # type: ignore[no-any-return]


@inline
def _tree_set(
    free: Any,
    N: int,
    R: int,
    T: Any,
    mval: Any,
    mroom: Any,
    theta: Any,
    inv: Any,
    room_w: Any,
    dirs: Any,
    dirty: Any,
    m: int,
) -> None:
    """Machine m's free capacity changed: its values and room now, and its block marked stale in every
    level that holds it now or held it before (no level above one that holds it neither way does: the
    thresholds rise). :func:`_tree_flush` brings a level's tree up to date when a search needs it.

    Levels are brought up to date lazily because a search reads one level and the jobs of a workload
    mostly read the same one or two: updating every level at every start and completion (a walk to the
    root in each, since the machine Tetris picks is often the best one of some direction) cost a third
    of the google scenario's time. A block changed several times between two searches of its level is
    brought up to date once. (Takes the arrays it uses, not the state tuples: a call LLVM does not inline
    copies every array it is given.)
    """
    L = T.shape[0]
    Q = T.shape[2]
    for r in range(R):
        mval[m, r] = free[r * N + m]
    if Q > R:
        x = free[m] * inv[0]
        y = free[N + m] * inv[1]
        for k in range(Q - R):
            mval[m, R + k] = dirs[k, 0] * x + dirs[k, 1] * y
    # _room, on the values just stored
    h = (mval[m, 0] * inv[0]) * room_w[0]
    for r in range(1, R):
        x = (mval[m, r] * inv[r]) * room_w[r]
        if x < h:
            h = x
    was = mroom[m]
    mroom[m] = h
    b = m // BLOCK
    P = T.shape[1] >> 1
    for lv in range(L):
        th = theta[lv]
        if not h >= th and not was >= th:
            break  # in this level neither before nor now, nor in any above it
        # dirty[lv, P + k] lists the level's stale blocks; dirty[lv, b] > 0 marks block b as listed
        if dirty[lv, b] == 0:
            n = dirty[lv, 2 * P] + 1
            dirty[lv, 2 * P] = n
            dirty[lv, P + n - 1] = b
            dirty[lv, b] = 1


@inline
def _tree_flush(N: int, T: Any, mval: Any, mroom: Any, theta: Any, dirty: Any, acc: Any, lv: int) -> None:
    """Level lv's tree brought up to date: each stale block's leaf (the maxima over the block's machines
    whose room reaches the level's threshold), then the maxima above it until a node is unchanged."""
    P = T.shape[1] >> 1
    n = dirty[lv, 2 * P]
    if n == 0:
        return
    Q = T.shape[2]
    th = theta[lv]
    for k in range(n):
        b = dirty[lv, P + k]
        dirty[lv, b] = 0
        m0 = b * BLOCK
        m1 = min(m0 + BLOCK, N)
        i = P + b
        # Written without branches on the values (selects the compiler makes max instructions of, and
        # unconditional stores): the comparisons go either way at random, a branch on each mispredicted.
        for q in range(Q):
            acc[q] = NEG_INF
        for mm in range(m0, m1):
            if mroom[mm] >= th:
                for q in range(Q):
                    v = mval[mm, q]
                    a = acc[q]
                    acc[q] = v if v > a else a
        changed = 0
        for q in range(Q):
            x = acc[q]
            changed += T[lv, i, q] != x
            T[lv, i, q] = x
        i >>= 1
        while changed != 0 and i >= 1:
            changed = 0
            for q in range(Q):
                u = T[lv, 2 * i, q]
                w = T[lv, 2 * i + 1, q]
                x = u if u > w else w
                changed += T[lv, i, q] != x
                T[lv, i, q] = x
            i >>= 1
    dirty[lv, 2 * P] = 0


@inline
def _prepare_query(jb: Any, sr: Any, job: int) -> None:
    """The job's tree level, and its direction in the normalised resources for the directional bound (two resources)."""
    q = sr.qry
    q[Q_S] = 0.0
    T = sr.tree
    R = jb.dims[K.D_R]
    inv = jb.inv
    # The highest level whose threshold the room of the job's fit floors reaches (NaN: level 0).
    hj = _room(inv, sr.room_w, sr.fl, R)
    theta = sr.theta
    lv = 0
    for k in range(1, T.shape[0]):
        if theta[k] <= hj:
            lv = k
    q[Q_LVL] = lv
    nd = T.shape[2] - R
    if nd < 2:
        return
    req = jb.req
    x = req[job * R] * inv[0]
    y = req[job * R + 1] * inv[1]
    s = x + y
    if not s > 0.0:
        return
    t = y / s
    i = int(t * (nd - 1))
    if i > nd - 2:
        i = nd - 2
    if i < 0:
        i = 0
    ti = i / (nd - 1)
    tj = (i + 1) / (nd - 1)
    lam = (tj - t) / (tj - ti)
    if lam < 0.0:
        lam = 0.0
    if lam > 1.0:
        lam = 1.0
    q[Q_S] = s
    q[Q_I] = i
    q[Q_LAM] = lam
    # Far above the rounding of scores and bounds (a few ulps of s times the largest value).
    q[Q_MARGIN] = s * 1e-12


@inline
def _best_machine(jb: Any, sr: Any, job: int, use_g: int) -> int:
    """The fitting machine of the highest score (lowest index among ties), -1 if none or if it is -inf.

    Depth-first, the child of the higher bound first (equal bounds: the left one), in the job's
    level of the tree. A subtree is skipped when its bound is below the best score found, or equal
    to it with all its machines after the best machine (an equal score there loses the tie).
    (Takes :class:`Jobs` and :class:`Search`, about 210 words: LLVM does not inline it.)
    """
    dims = jb.dims
    N = dims[K.D_N]
    R = dims[K.D_R]
    best = NEG_INF
    bm = -1
    _prepare_query(jb, sr, job)
    T = sr.tree
    _tree_flush(N, T, sr.mval, sr.mroom, sr.theta, sr.dirty, sr.acc, int(sr.qry[Q_LVL]))
    P = T.shape[1] >> 1
    stack = sr.stack
    sub = sr.stack_ub
    free = jb.free
    fl = sr.fl
    # Nodes and sizes in machines (a leaf is a block of BLOCK machines).
    stack[0], stack[1], stack[2] = 1, 0, P * BLOCK  # the root, expanded unconditionally
    sub[0] = K.INF
    sp = 1
    while sp > 0:
        sp -= 1
        node, lo, size = stack[3 * sp], stack[3 * sp + 1], stack[3 * sp + 2]
        ub = sub[sp]
        if ub < best or (ub == best and lo > bm):
            continue  # nothing better below (an equal score at a higher index loses the tie)
        if size == BLOCK:
            # a leaf: its machines, each by the fit rule and its score
            for mm in range(lo, min(lo + BLOCK, N)):
                if K.fits_floors(free, N, R, mm, fl):
                    s = _leaf_score(jb, sr, job, mm, use_g)
                    if s > best or (s == best and mm < bm):
                        best = s
                        bm = mm
            continue
        half = size >> 1
        # Both children's bounds (the right one -inf past the last machine); the better child is
        # searched first (pushed last), on equal bounds the left one.
        ub_l = NEG_INF
        ub_r = NEG_INF
        for side in range(2):
            if lo + side * half < N:
                u = _node_bound(sr, N, R, 2 * node + side, lo + side * half, half, use_g)
                if side == 0:
                    ub_l = u
                else:
                    ub_r = u
        first = 0 if ub_r > ub_l else 1  # the side pushed first (searched second)
        for k in range(2):
            side = first if k == 0 else 1 - first
            u = ub_l if side == 0 else ub_r
            if u != NEG_INF and not u < best:
                stack[3 * sp], stack[3 * sp + 1], stack[3 * sp + 2] = 2 * node + side, lo + side * half, half
                sub[sp] = u
                sp += 1
    return bm


@inline
def _enqueue(jb: Any, qu: Any, fl: Any, job: int) -> None:
    """Queue ``job`` (its fit floors ``fl``): the list, the floors' lower bound, and the grid when in use."""
    info = qu.info
    qnext, qprev, qmin = qu.qnext, qu.qprev, qu.qmin
    K.list_append(qnext, qprev, info, I_HEAD, info, I_TAIL, job)
    info[I_QCOUNT] += 1
    for r in range(len(qmin)):
        if fl[r] < qmin[r]:
            qmin[r] = fl[r]
    # Into the grid: this job if it is in use; every queued job (in arrival order) into a grid built
    # again if the queue just got long, or has doubled since the grid was built.
    z = -1
    if info[I_GRID] == 1 and info[I_QCOUNT] < 2 * info[I_GBUILT]:
        z = job
    elif info[I_QCOUNT] >= GRID_ON:
        _grid_clear(qu)
        R = jb.dims[K.D_R]
        _grid_edges(jb.req, R, qu, 0, qu.g_e0)
        if R > 1:
            _grid_edges(jb.req, R, qu, 1, qu.g_e1)
        info[I_GRID] = 1
        info[I_GBUILT] = info[I_QCOUNT]
        z = info[I_HEAD]
    while z >= 0:
        _grid_add(jb, qu, z)
        z = qnext[z]  # -1 after this job, the last one


@inline
def _unlink(jb: Any, qu: Any, job: int) -> None:
    info = qu.info
    K.list_unlink(qu.qnext, qu.qprev, info, I_HEAD, info, I_TAIL, job)
    info[I_QCOUNT] -= 1
    if info[I_GRID] == 1:
        _grid_remove(jb, qu, job)
        if info[I_QCOUNT] < GRID_OFF:
            info[I_GRID] = 0
    if info[I_QCOUNT] == 0:
        qmin = qu.qmin
        for r in range(len(qmin)):
            qmin[r] = K.INF


@inline_always
def _arrival_query(jb: Any, sr: Any, job: int) -> int:
    """The arrival's fit floors, packing weights, work factor and work terms per segment (into ``sr``), and
    how the search uses the work term: 0 left out, 1 per segment, 2 per machine (mode general), -1 the job
    can run nowhere."""
    R = jb.dims[K.D_R]
    req = jb.req
    inv2 = jb.inv2
    fl, a = sr.fl, sr.a
    jbase = job * R
    for r in range(R):
        x = req[jbase + r]
        fl[r] = K.fit_floor(x)
        a[r] = x * inv2[r]
    mode = jb.info[I_MODE]
    gseg = sr.gseg
    seg_cfg = sr.seg_cfg
    S = len(gseg)
    use_g = 0
    gf = _gfac(jb, job)
    sr.qry[Q_GF] = gf
    if mode != FIXED:
        # Mode general: the bound's work term, the smaller of the warm and the cold one (the exact
        # one is per machine); mode config: the exact one, per configuration.
        k = _cls(jb, job) if mode == GENERAL else -1
        for s in range(S):
            w = K.INF
            for t in range(2 if mode == GENERAL else 1):  # warm (last class k), then cold
                x = _work(gf, _p(jb, job, seg_cfg[s], k + t))
                if x < w or t == 0:
                    w = x
            gseg[s] = w
        use_g = 2 if mode == GENERAL else 1
        if mode == CONFIG:
            same = True
            for s in range(1, S):
                if gseg[s] != gseg[0]:
                    same = False
                    break
            if same:
                use_g = 0  # a constant work term cannot change the choice and is left out
                if gseg[0] == K.INF:
                    use_g = -1  # it can run nowhere
    return use_g


@inline_always
def _queued_score(jb: Any, z: int, f: Any, c: int, last: int) -> float:
    """Queued job z's score on a machine of configuration c (last class ``last``) with free capacity f."""
    req = jb.req
    inv2 = jb.inv2
    R = jb.dims[K.D_R]
    zb = z * R
    s = (req[zb] * inv2[0]) * f[0]
    for r in range(1, R):
        s += (req[zb + r] * inv2[r]) * f[r]
    s -= _queued_work(_gfac(jb, z), _p(jb, z, c, last if jb.info[I_MODE] == GENERAL else -1))
    return s  # type: ignore[no-any-return]


@inline
def _fits_f(req: Any, R: int, z: int, f: Any) -> bool:
    """The specification's test on a queued job: its fit floor ``request - EPS <= f`` in every resource."""
    zb = z * R
    for r in range(R):
        if not K.fits_one(f[r], req[zb + r]):
            return False
    return True


@inline_always
def _read_free(free: Any, N: int, R: int, f: Any, qmin: Any, m: int) -> bool:
    """Machine m's free capacity into ``f``; False if no queued job can fit there (the lower bound ``qmin``)."""
    ok = True
    for r in range(R):
        f[r] = free[r * N + m]
        if not K.reaches(f[r], qmin[r]):
            ok = False
    return ok


# -- the grid over queued jobs (long queues) ---------------------------------------------------


@inline
def _bisect_right(e: Any, x: float) -> int:
    lo = 0
    hi = len(e)
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < e[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@inline
def _job_w(jb: Any, z: int, col: int) -> float:
    """A lower bound of queued job z's work term on configuration ``col`` (exact unless mode general)."""
    gf = _gfac(jb, z)
    general = jb.info[I_MODE] == GENERAL
    k = _cls(jb, z) if general else -1
    w = K.INF
    for t in range(2 if general else 1):  # mode general: warm (last class k), then cold
        x = _queued_work(gf, _p(jb, z, col, k + t))
        if x < w or t == 0:
            w = x
    return w


@inline
def _cell_reset(qu: Any, cell: int) -> None:
    lo, amax, wmin = qu.g_lo, qu.g_amax, qu.g_wmin
    for r in range(lo.shape[1]):
        lo[cell, r] = K.INF
        amax[cell, r] = 0.0
    for c in range(wmin.shape[1]):
        wmin[cell, c] = K.INF
    qu.g_dirty[cell] = 0


@inline_always
def _cell_account(jb: Any, qu: Any, cell: int, z: int) -> None:
    """Widen ``cell``'s bounds to cover job z."""
    req = jb.req
    R = jb.dims[K.D_R]
    inv2 = jb.inv2
    lo, amax, wmin = qu.g_lo, qu.g_amax, qu.g_wmin
    for r in range(R):
        x = req[z * R + r]
        f = K.fit_floor(x)
        if f < lo[cell, r]:
            lo[cell, r] = f
        a = x * inv2[r]
        if a > amax[cell, r]:
            amax[cell, r] = a
    for c in range(wmin.shape[1]):
        w = _job_w(jb, z, c)
        if w < wmin[cell, c]:
            wmin[cell, c] = w


@inline
def _cell_of(jb: Any, qu: Any, z: int) -> int:
    """Job z's cell: the grid's row and column of its fit floors in resources 0 and 1."""
    req = jb.req
    R = jb.dims[K.D_R]
    cell = _bisect_right(qu.g_e0, K.fit_floor(req[z * R])) * qu.info[I_G1]
    if R > 1:
        cell += _bisect_right(qu.g_e1, K.fit_floor(req[z * R + 1]))
    return cell  # type: ignore[no-any-return]


@inline
def _grid_add(jb: Any, qu: Any, z: int) -> None:
    cell = _cell_of(jb, qu, z)
    K.list_append(qu.g_next, qu.g_prev, qu.g_head, cell, qu.g_tail, cell, z)
    qu.g_count[cell] += 1
    _cell_account(jb, qu, cell, z)


@inline
def _grid_remove(jb: Any, qu: Any, z: int) -> None:
    cell = _cell_of(jb, qu, z)
    K.list_unlink(qu.g_next, qu.g_prev, qu.g_head, cell, qu.g_tail, cell, z)
    qu.g_count[cell] -= 1
    if qu.g_count[cell] == 0:
        _cell_reset(qu, cell)
    else:
        qu.g_dirty[cell] = 1  # bounds still hold, loosely, until the next visit


@inline
def _grid_clear(qu: Any) -> None:
    """Empty every cell (the grid is then filled again from the queue)."""
    head = qu.g_head
    for cell in range(len(head)):
        head[cell] = -1
        qu.g_tail[cell] = -1
        qu.g_count[cell] = 0
        _cell_reset(qu, cell)


@inline
def _grid_edges(req: Any, R: int, qu: Any, r: int, e: Any) -> None:
    """The grid's edges ``e`` in resource r: approximate quantiles of the queued jobs' fit floors.

    Any non-decreasing edges keep the search exact (a job's cell and a query's candidate cells
    are found by the same bisection); edges at the queue's quantiles keep the cells' jobs few
    and their bounds tight. (Edges fixed from the workload's floors put the month's queue, the
    large jobs that wait for days, in one corner cell: every completion with room scanned it.)
    A histogram of ``GRID_BINS`` bins between the least and the largest floor, not a sort:
    kernels allocate nothing, and numba's sort does.
    """
    nxt = qu.qnext
    head = qu.info[I_HEAD]
    lo = K.INF
    hi = NEG_INF
    z = head
    while z >= 0:
        x = K.fit_floor(req[z * R + r])
        if x < lo:
            lo = x
        if x > hi:
            hi = x
        z = nxt[z]
    hist = qu.g_hist
    B = len(hist)
    w = (hi - lo) / B
    if not (w > 0.0 and w < K.INF):
        for k in range(len(e)):
            e[k] = lo if lo < K.INF else 0.0  # all floors equal (or not finite): one row holds them
        return
    for b in range(B):
        hist[b] = 0
    n = 0
    z = head
    while z >= 0:
        t = (K.fit_floor(req[z * R + r]) - lo) / w  # in [0, B] (rounding: the largest may reach B)
        hist[int(t) if t < B - 1 else B - 1] += 1
        n += 1
        z = nxt[z]
    S = len(e) + 1  # rows: edge k - 1 is the upper end of the bin where the k-th S-quantile falls
    k = 1
    c = 0
    for b in range(B):
        c += hist[b]
        while k < S and c * S >= k * n:
            e[k - 1] = lo + (b + 1) * w
            k += 1
    for k in range(1, len(e)):
        if e[k] < e[k - 1]:
            e[k] = e[k - 1]


@inline
def _grid_candidates(R: int, qu: Any, c: int) -> int:
    """The cells that may hold a job fitting in ``qu.f``, with their score bounds (``qu.g_cand``, ``qu.g_ub``)."""
    f = qu.f
    G1 = qu.info[I_G1]
    i_hi = _bisect_right(qu.g_e0, f[0])
    j_hi = _bisect_right(qu.g_e1, f[1]) if R > 1 else 0
    col = 0 if qu.info[I_MODE] == FIXED else c
    count, lo, amax, wmin = qu.g_count, qu.g_lo, qu.g_amax, qu.g_wmin
    cand, cub = qu.g_cand, qu.g_ub
    nc = 0
    for i in range(i_hi + 1):
        for j in range(j_hi + 1):
            cell = i * G1 + j
            if count[cell] == 0:
                continue
            ok = True
            for r in range(R):
                if not K.reaches(f[r], lo[cell, r]):
                    ok = False
                    break
            if not ok:
                continue
            x = f[0] if f[0] > 0.0 else 0.0
            ub = amax[cell, 0] * x
            for r in range(1, R):
                x = f[r] if f[r] > 0.0 else 0.0
                ub += amax[cell, r] * x
            ub -= wmin[cell, col]
            if ub == NEG_INF:
                continue
            cand[nc] = cell
            cub[nc] = ub
            nc += 1
    return nc


@inline
def _next_queued(jb: Any, qu: Any, m: int) -> int:
    """The queued job that starts next on the freed machine m (taken off the queue), or -1.

    The specification's completion scan, one round (the caller starts the job and asks
    again): the whole queue in arrival order, or with the grid in use, its cells in
    decreasing bound until the next bound is below the best score found. The caller has
    read m's free capacity into ``qu.f`` and checked it against the lower bound (:func:`_read_free`).
    (Takes :class:`Jobs` and :class:`Queue`, about 230 words: LLVM does not inline it.)
    """
    info = qu.info
    R = jb.dims[K.D_R]
    req = jb.req
    f = qu.f
    c = jb.config_of[m]
    last = jb.last[m]
    grid = info[I_GRID] == 1
    nc = _grid_candidates(R, qu, c) if grid else 1
    cand, cub, dirty = qu.g_cand, qu.g_ub, qu.g_dirty
    nxt = qu.g_next if grid else qu.qnext
    best = NEG_INF
    bz = -1
    while nc > 0:
        cell = -1
        z = info[I_HEAD]
        nc -= 1
        if grid:
            k = 0
            for t in range(1, nc + 1):
                if cub[t] > cub[k]:
                    k = t
            if cub[k] < best:
                break
            cell = cand[k]
            cand[k] = cand[nc]
            cub[k] = cub[nc]
            z = qu.g_head[cell]
        redo = cell >= 0 and dirty[cell] == 1
        if redo:
            _cell_reset(qu, cell)  # recomputed from the jobs still there, below
        while z >= 0:
            if redo:
                _cell_account(jb, qu, cell, z)
            if _fits_f(req, R, z, f):
                s = _queued_score(jb, z, f, c, last)
                if s > best or (s == best and z < bz):
                    best = s
                    bz = z
            z = nxt[z]
    if bz >= 0:
        _unlink(jb, qu, bz)
    return bz  # -1: nothing fits, or what fits cannot run here


@njit
def step(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> tuple[int, Any]:
    """The engine's loop with Tetris's decisions (see :mod:`simcore.compiled.loop`)."""
    ctr = core.ctr
    fl = core.fl
    free = core.free
    N = core.dims[K.D_N]
    R = core.dims[K.D_R]
    T, mval, mroom, theta, inv, room_w, dirs = st.tree, st.mval, st.mroom, st.theta, st.inv, st.room_w, st.dirs
    dirty = st.dirty
    jb = Jobs(
        dims=core.dims,
        work=core.work,
        dcls=core.dcls,
        tab=core.tab,
        tab2=core.tab2,
        req=core.req,
        free=free,
        config_of=core.config_of,
        last=core.last,
        info=st.info,
        inv=inv,
        inv2=st.inv2,
        wfac=st.wfac,
    )
    sr = Search(
        tree=T,
        mval=mval,
        mroom=mroom,
        theta=theta,
        room_w=room_w,
        dirty=dirty,
        acc=st.acc,
        stack=st.stack,
        stack_ub=st.stack_ub,
        fl=st.fl,
        a=st.a,
        qry=st.qry,
        seg_of=st.seg_of,
        seg_cfg=st.seg_cfg,
        gseg=st.gseg,
    )
    qu = Queue(
        info=st.info,
        qnext=st.qnext,
        qprev=st.qprev,
        qmin=st.qmin,
        f=st.f,
        g_next=st.g_next,
        g_prev=st.g_prev,
        g_head=st.g_head,
        g_tail=st.g_tail,
        g_count=st.g_count,
        g_dirty=st.g_dirty,
        g_lo=st.g_lo,
        g_amax=st.g_amax,
        g_wmin=st.g_wmin,
        g_e0=st.g_e0,
        g_e1=st.g_e1,
        g_cand=st.g_cand,
        g_ub=st.g_ub,
        g_hist=st.g_hist,
    )
    info, f, qmin = st.info, st.f, st.qmin
    done = 0
    while True:
        status, kind, t = K.before_event(core, hp, smp, done, budget)
        if status != K.GO:
            for lv in range(T.shape[0]):  # the tree exact whenever the kernel returns (tests read it)
                _tree_flush(N, T, mval, mroom, theta, dirty, st.acc, lv)
            return status, hp
        fl[K.NOW] = t
        # One place starts jobs (the arrival's machine, or the queued jobs a completion lets in
        # one after the other): the engine's start is compiled once.
        if kind == K.EV_ARRIVAL:
            job = K.arrive(core)
            use_g = _arrival_query(jb, sr, job)
            m = _best_machine(jb, sr, job, use_g) if use_g >= 0 else -1
            if m < 0:
                _enqueue(jb, qu, sr.fl, job)
            freed = -1
        else:
            _, freed = K.complete(core, hp)
            _tree_set(free, N, R, T, mval, mroom, theta, inv, room_w, dirs, dirty, freed)
            m = freed
            job = -1
        while m >= 0:
            if freed >= 0:
                # The search is a call: asked only when the queue is not empty and its floors' lower
                # bound fits in the freed capacity (the specification's early return).
                job = -1
                if info[I_QCOUNT] != 0 and _read_free(free, N, R, f, qmin, freed):
                    job = _next_queued(jb, qu, freed)
            if job < 0:
                break
            hp = K.start(core, hp, job, m)
            if ctr[K.ERR] != 0:
                return K.S_ERROR, hp
            _tree_set(free, N, R, T, mval, mroom, theta, inv, room_w, dirs, dirty, m)
            if freed < 0:
                break
        done += 1


def _max_tree(rows: list[np.ndarray[Any, Any]], room: np.ndarray[Any, Any], theta: np.ndarray[Any, Any], P: int) -> Any:
    """The levels' trees (levels x 2P nodes x values): level l's leaves P..P+N-1 are the machines' values
    where their room is at least ``theta[l]``, -inf elsewhere and past the last machine; each inner node
    holds the maxima of its children."""
    N = len(room)
    tree = np.full((len(theta), 2 * P, len(rows)), -np.inf)
    values = np.stack(rows, axis=1)
    for lv, th in enumerate(theta):
        v = np.full((P * BLOCK, len(rows)), -np.inf)
        keep = room >= th
        v[:N][keep] = values[keep]
        tree[lv, P:] = v.reshape(P, BLOCK, len(rows)).max(axis=1)
    lo = P // 2
    while lo >= 1:
        np.maximum(tree[:, 2 * lo : 4 * lo : 2], tree[:, 2 * lo + 1 : 4 * lo : 2], out=tree[:, lo : 2 * lo])
        lo //= 2
    return tree


def _room_weights(request: np.ndarray[Any, Any], inv: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Weights of the room (``_room``): per resource the inverse of the median normalised request, so
    the room is about how many typical jobs fit in the scarcer resource. Any positive weights keep the
    search exact; these keep the levels apart on the workload's own jobs."""
    R = len(inv)
    w = np.ones(R)
    for r in range(R):
        col = request[:, r] * inv[r] if len(request) else np.zeros(0)
        col = col[col > 0]
        if len(col):
            med = float(np.median(col))
            if med > 0 and np.isfinite(med):
                w[r] = 1.0 / med
    return w


def _room_of(values: np.ndarray[Any, Any], inv: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``_room`` of rows of values (n x R), with its float operations."""
    h: np.ndarray[Any, Any] = (values[:, 0] * inv[0]) * w[0]
    for r in range(1, values.shape[1]):
        h = np.minimum(h, (values[:, r] * inv[r]) * w[r])
    return h


def _levels(request: np.ndarray[Any, Any], inv: np.ndarray[Any, Any]) -> tuple[Any, Any, Any]:
    """A sample of the jobs' fit floors, the room's weights, and the levels' thresholds: quantiles of the
    sample's room (level 0: -inf, every machine)."""
    n = len(request)
    sample = request[np.unique(np.linspace(0, max(n - 1, 0), min(n, 65536)).astype(np.int64))] - EPS
    room_w = _room_weights(sample + EPS, inv)
    theta = np.full(LEVELS, -np.inf)
    if n:
        qs = _room_of(sample, inv, room_w)
        qs = qs[np.isfinite(qs)]
        if len(qs):
            theta[1:] = np.quantile(qs, np.arange(1, LEVELS) / LEVELS)
    return sample, room_w, theta


def _directions(R: int) -> np.ndarray[Any, Any]:
    """The directions the max trees keep combined values for (two resources), else a stub."""
    if R != 2:
        return np.zeros((1, 2))
    t = np.arange(DIRECTIONS) / (DIRECTIONS - 1)
    return np.stack([1.0 - t, t], axis=1)


def make(sched: Tetris, sim: Simulation) -> Kernel:
    """Tetris's kernel state, from what :meth:`Tetris.setup` computed (normalisation, p_bar, segments)."""
    view = sim.view
    R = view.n_resources
    N = view.n_machines
    n = sim.n_jobs
    request = view.request.reshape(n, R)
    segs = sched.segments
    info = np.zeros(N_INFO, dtype=np.int64)
    info[I_MODE] = {"fixed": FIXED, "config": CONFIG, "general": GENERAL}[sched.mode]
    info[I_HEAD] = info[I_TAIL] = -1
    P = 2  # at least two leaves (blocks): the root is never a leaf
    while P * BLOCK < N:
        P *= 2
    info[I_P] = P
    inv = np.array(sched.inv, dtype=np.float64)
    F = view.free_by_resource
    rows = [np.array(F[r]) for r in range(R)]
    sample, room_w, theta = _levels(request, inv)
    room = _room_of(np.stack(rows, axis=1), inv, room_w)  # free capacities only: rows has no directions yet
    dirs = _directions(R)
    if R == 2:
        x, y = F[0] * inv[0], F[1] * inv[1]
        rows += [dirs[k, 0] * x + dirs[k, 1] * y for k in range(DIRECTIONS)]
    n_p = 1 if sched.mode == "fixed" else view.n_configs
    info[I_NP] = n_p
    # Grid edges: set from the queued jobs' fit floors whenever the grid is built (_grid_build).
    e0 = np.zeros(GRID_SIDE - 1)
    e1 = np.zeros(GRID_SIDE - 1 if R > 1 else 0)
    G1 = len(e1) + 1
    info[I_G1] = G1
    C = (len(e0) + 1) * G1
    jobs = max(n, 1)
    state = TetrisState(
        inv=inv,
        inv2=np.array(sched.inv2, dtype=np.float64),
        wfac=np.array([sched.wfac]),  # work_weight / p_bar
        seg_cfg=np.array([c for c, _, _ in segs], dtype=np.int64),  # configuration of each segment
        seg_of=np.ascontiguousarray(sched.seg_of, dtype=np.int64),  # segment of each machine
        gseg=np.zeros(len(segs)),  # scratch: the arrival's work term per segment
        info=info,
        qnext=np.full(max(n, 1), -1, dtype=np.int32),  # next queued job
        qprev=np.full(max(n, 1), -1, dtype=np.int32),  # previous queued job
        qmin=np.full(R, np.inf),  # lower bound of the queued fit floors
        stack=np.zeros(3 * 130, dtype=np.int64),  # the branch and bound's stack (at most 2 entries a level)
        stack_ub=np.zeros(130),  # its bounds
        fl=np.zeros(R),  # scratch: the arrival's fit floors
        a=np.zeros(R),  # scratch: its packing weights
        f=np.zeros(R),  # scratch: the freed machine's capacity
        tree=_max_tree(
            rows, room, theta, P
        ),  # the levels' max trees: per level and node, maxima per resource, direction
        dirs=np.ascontiguousarray(dirs),  # the directions
        qry=np.zeros(6),  # the arrival's query (see _prepare_query), work factor and level
        g_next=np.full(jobs, -1, dtype=np.int32),  # the grid: next job in its cell
        g_prev=np.full(jobs, -1, dtype=np.int32),  # previous in its cell
        g_head=np.full(C, -1, dtype=np.int64),  # first job of each cell
        g_tail=np.full(C, -1, dtype=np.int64),  # last job of each cell
        g_count=np.zeros(C, dtype=np.int64),  # jobs in each cell
        g_dirty=np.zeros(C, dtype=np.int64),  # a job left since the cell's bounds were computed
        g_lo=np.full((C, R), np.inf),  # smallest fit floor per resource
        g_amax=np.zeros((C, R)),  # largest packing weight per resource
        g_wmin=np.full((C, n_p), np.inf),  # smallest work term per work column
        g_e0=np.ascontiguousarray(e0, dtype=np.float64),  # edges in resource 0
        g_e1=np.ascontiguousarray(e1, dtype=np.float64),  # edges in resource 1
        g_cand=np.zeros(C, dtype=np.int64),  # scratch: candidate cells of a query
        g_ub=np.zeros(C),  # scratch: their bounds
        g_hist=np.zeros(GRID_BINS, dtype=np.int64),  # scratch: the edges' histogram
        theta=theta,  # the levels' thresholds of room (level 0: -inf, every machine)
        room_w=room_w,  # the room's weights
        mval=np.ascontiguousarray(np.stack(rows, axis=1)),  # each machine's values (free capacities, directions)
        mroom=np.ascontiguousarray(room),  # each machine's room
        dirty=np.zeros((LEVELS, 2 * P + 1), dtype=np.int64),
        acc=np.zeros(len(rows)),  # scratch: a block's maxima  # per level: stale-block marks, their list, its length
    )

    def done() -> None:
        sched.qcount = int(info[I_QCOUNT])

    return Kernel(step=step, state=state, done=done)
