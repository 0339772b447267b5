"""Running a scheduler's kernel inside :class:`simcore.core.engine.Simulation`.

The kernel's ``step`` runs events until one of: the run is over, the next
event is due at or after the next sample time (the driver samples the state
exactly as the Python loop does, then calls again), ``budget`` events were
handled (the driver reports progress, and a progress callback that raises
cancels the run between two chunks), the kernel needs uniform draws (refilled
from the injected generator, in the specification's batch size, so both see
the same numbers in the same order), or a start was refused (the engine's
``SchedulingError``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.compiled import core as K
from simcore.core.errors import SchedulingError

if TYPE_CHECKING:
    from simcore.core.engine import Simulation

#: Events per kernel call between two progress checks (~0.05 s at a million events a second).
CHUNK_EVENTS = 65536


@dataclass
class Kernel:
    """What a scheduler hands the engine to run compiled.

    ``step(core, hp, state, until, budget) -> (status, hp)`` is the njit
    event loop; ``state`` the scheduler's own arrays (a tuple); ``draws`` a
    buffer of uniform numbers the kernel consumes (``ctr[DRAW]`` is its
    position), refilled from the run's generator when the kernel asks;
    ``done`` copies what the Python scheduler reports afterwards (counters) back.
    """

    step: Any
    state: tuple[Any, ...]
    draws: np.ndarray[Any, Any] | None = None
    done: Callable[[], None] | None = None
    #: Keep a max tree over the machines' free capacity (first fit in O(log N), for first-fit kernels).
    tree: bool = False
    #: Leaves of that tree: 0 for one per machine in machine order (leaf m is machine m); more for
    #: kernels that order machines their own way (FCFS by idle time), which then set the maps.
    tree_leaves: int = 0
    #: Keep the fit tree instead (see :func:`simcore.compiled.core.ftree_first_fit`): first fit in
    #: machine order that prunes by combinations of resources; ``core.first_fit`` then uses it.
    fit_tree: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    #: Called instead of refilling ``draws`` when the kernel asks for draws (a kernel that keeps
    #: its own buffer of uniforms, e.g. LoTES's ring that starts with the block its setup drew).
    refill: Callable[[], None] | None = None
    #: A kernel with its own event loop, called instead of this module's (``loop(sim, wall0)``): the staged
    #: scheduler's, whose workloads have task graphs and whose cycles are wake-ups, which this loop lacks.
    loop: Callable[[Simulation, float], Any] | None = None


def runtime_form(runtime: object) -> tuple[int, Any, Any, Any, Any] | None:
    """The runtime model as arrays for :func:`simcore.compiled.core.duration`, or None if it has no compiled form."""
    form = getattr(runtime, "compiled_form", None)
    if form is None:
        return None
    return form()  # type: ignore[no-any-return]


#: Combined values per node of the fit tree with two or more resources. Two prune nearly all
#: the backtracking on the bench's google scenario (18 nodes a search instead of 216); more
#: prune little more and make every update dearer.
FIT_TREE_K = 2
#: Jobs (at most about) whose requests choose the fit tree's weights.
FIT_SAMPLE = 4096


def fit_weights(request: np.ndarray[Any, Any], k: int) -> np.ndarray[Any, Any]:
    """The fit tree's weight vectors (k x R, each positive with maximum 1): one per k-quantile of the
    requests' direction (the log ratio of the second resource to the first), the inverse of the
    median request there. Any positive weights keep the search exact; these prune the most for
    typical jobs (a job in direction w's inverse is pruned as tightly as one resource is)."""
    R = request.shape[1] if request.ndim == 2 else 1
    if R < 2 or k <= 0:
        return np.zeros((0, R))
    req = np.asarray(request, dtype=np.float64)
    # A spread sample of the jobs tells the directions well enough (and costs no time on a big run).
    req = req[:: max(1, len(req) // FIT_SAMPLE)]
    tiny = np.finfo(np.float64).tiny
    pos = np.where(req > 0, req, np.nan)
    ok = ~np.isnan(pos).any(axis=1)
    good = pos[ok]
    if len(good) == 0:
        return np.zeros((0, R))
    order = np.argsort(np.log(good[:, 1]) - np.log(good[:, 0]), kind="stable")
    rows = []
    for part in np.array_split(order, k):
        if len(part):
            inv = 1.0 / np.maximum(np.median(good[part], axis=0), tiny)
            rows.append(inv / inv.max())
    w = np.array(rows, dtype=np.float64)
    return w[np.isfinite(w).all(axis=1) & (w > 0).all(axis=1)]


def build_fit_tree(free_rows: np.ndarray[Any, Any], weights: np.ndarray[Any, Any]) -> tuple[Any, int, int]:
    """The fit tree's nodes over machines' free capacity (R x N), its number of leaf blocks and S."""
    R, N = free_rows.shape
    nk = len(weights)
    S = R + nk
    nb = -(-N // K.FT_BLOCK)
    B = 1
    while B < nb:
        B *= 2
    v = np.full((B * K.FT_BLOCK, S), -np.inf)
    v[:N, :R] = free_rows.T
    for k in range(nk):
        h = weights[k, 0] * free_rows[0]
        for r in range(1, R):
            h = np.minimum(h, weights[k, r] * free_rows[r])
        v[:N, R + k] = h
    nodes = np.full((2 * B, S), -np.inf)
    nodes[B:] = v.reshape(B, K.FT_BLOCK, S).max(axis=1)
    lo = B // 2
    while lo >= 1:
        np.maximum(nodes[2 * lo : 4 * lo : 2], nodes[2 * lo + 1 : 4 * lo : 2], out=nodes[lo : 2 * lo])
        lo //= 2
    return nodes.reshape(-1), B, S


def build_core(
    sim: Simulation,
    form: tuple[int, Any, Any, Any, Any],
    tree: bool = False,
    leaves: int = 0,
    fit_tree: bool = False,
) -> K.Core:
    """The engine's own arrays (no copies: the view shows the kernel's work), named (:class:`~.core.Core`)."""
    mode, work, dcls, tab, tab2 = form
    ctr = np.zeros(K.N_CTR, dtype=np.int64)
    fl = np.array([sim.now, sim.horizon, 1.0 if sim.drain else 0.0])
    N = sim.n_machines
    P = 1
    while P < max(N, leaves):
        P *= 2
    if fit_tree:
        weights = fit_weights(sim._request, FIT_TREE_K)
        ft_nodes, ft_blocks, ft_s = build_fit_tree(sim._free_rows, weights)
    else:
        weights, ft_nodes, ft_blocks, ft_s = np.zeros((0, sim._R)), np.zeros(1), 0, sim._R
    dims = np.array(
        [
            N,
            sim._R,
            sim.n_jobs,
            mode,
            1 if sim.all_runnable else 0,
            sim.view.n_configs,
            P if tree else 0,
            ft_blocks,
            ft_s,
        ],
        dtype=np.int64,
    )
    if tree:
        # Leaves at P..P+N-1; each inner node the maximum of its children (see core.tree_set).
        t = np.full((sim._R, 2 * P), -np.inf)
        t[:, P : P + N] = sim._free_rows
        lo = P // 2
        while lo >= 1:  # one level at a time: nodes lo..2lo-1 from their children 2lo..4lo-1
            np.maximum(t[:, 2 * lo : 4 * lo : 2], t[:, 2 * lo + 1 : 4 * lo : 2], out=t[:, lo : 2 * lo])
            lo //= 2
    else:
        t = np.zeros((sim._R, 2))
    return K.Core(
        free=sim._free_rows.reshape(-1),
        cap=sim._cap_rows.reshape(-1),
        req=sim._request.reshape(-1),
        running=sim._running,
        last=sim._last,
        state=sim._state,
        start_t=sim._start_t,
        finish_t=sim._finish_t,
        machine_of=sim._machine_of,
        submit=sim._submit,
        config_of=sim._config_of,
        work=np.ascontiguousarray(work, dtype=np.float64),
        dcls=np.ascontiguousarray(dcls, dtype=np.int64),
        tab=np.ascontiguousarray(tab, dtype=np.float64).reshape(np.shape(tab)[0], -1),
        tab2=np.ascontiguousarray(tab2, dtype=np.float64).reshape(np.shape(tab2)[0], -1),
        ctr=ctr,
        fl=fl,
        dims=dims,
        job_class=sim._job_class,
        tree=t,
        tree_stack=np.empty(3 * 2 * 64, dtype=np.int64),
        leaf_of=np.arange(N, dtype=np.int64),
        machine_at=np.concatenate([np.arange(N, dtype=np.int64), np.full(max(P - N, 0), -1, dtype=np.int64)]),
        ft_nodes=ft_nodes,
        ft_weights=np.ascontiguousarray(weights, dtype=np.float64).reshape(-1),
        ft_thr=np.zeros(ft_s, dtype=np.float64),
        tree_on=1 if tree else None,  # a type numba compiles by (see Core)
        ftree_on=1 if fit_tree else None,
        pw_stack=np.zeros(3 * K.PW_DEPTH, dtype=np.int64),
        pw_vals=np.zeros(K.PW_DEPTH, dtype=np.float64),
    )


def new_heap(n_jobs: int) -> tuple[Any, Any]:
    """The completion heap (see :mod:`simcore.compiled.core`): keys and the job of each sequence number."""
    return (np.empty(2 * max(16, min(n_jobs, 4096)), np.float64), np.empty(n_jobs + 1, np.int64))


def grow_heap(hp: tuple[Any, Any], ctr: Any) -> tuple[Any, Any]:
    """A heap with room for every running job plus every queued one and one more (``core.before_event``)."""
    need = 2 * (int(ctr[K.HSIZE]) + int(ctr[K.ARRIVED]) - int(ctr[K.STARTED]) + 1)
    keys = np.empty(max(need, 2 * len(hp[0])), np.float64)
    size = 2 * int(ctr[K.HSIZE])
    keys[:size] = hp[0][:size]
    return (keys, hp[1])


_ERRORS = {
    K.E_NOT_ARRIVED: "job {job} started at t={now} before it arrived",
    K.E_NO_MACHINE: "job {job} started on machine {m}, which does not exist",
    K.E_TWICE: "job {job} started twice",
    K.E_NO_FIT: "job {job} (request {req}) does not fit on machine {m} (free {free})",
    K.E_CANNOT_RUN: "job {job} cannot run on machine {m} (an infinite processing time there)",
}


def scheduling_error(sim: Simulation, ctr: Any) -> SchedulingError:
    job, m = int(ctr[K.ERR_JOB]), int(ctr[K.ERR_MACHINE])
    req = sim.request[job].tolist() if 0 <= job < sim.n_jobs else None
    free = sim.free[m].tolist() if 0 <= m < sim.n_machines else None
    msg = _ERRORS[int(ctr[K.ERR])].format(job=job, m=m, now=sim.now, req=req, free=free)
    return SchedulingError(f"{msg} (compiled kernel of {sim.scheduler.name!r})")
