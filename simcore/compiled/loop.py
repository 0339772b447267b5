"""The engine's loop when a kernel runs it: chunks of compiled events between progress checks.

The kernel takes the samples itself (the same values, to the bit, as
``Simulation._sample``: numpy's pairwise summation is reproduced), because a
call into a kernel costs about 0.1 ms of argument checking and a run has
2,000 samples. It returns every ``CHUNK_EVENTS`` events so that progress is
reported and a progress callback that raises cancels the run.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from simcore.compiled import core as K
from simcore.compiled.driver import (
    CHUNK_EVENTS,
    Kernel,
    build_core,
    grow_heap,
    new_heap,
    runtime_form,
    scheduling_error,
)

if TYPE_CHECKING:
    from simcore.core.engine import SimResult, Simulation


def run_kernel(sim: Simulation, kernel: Kernel, wall0: float) -> SimResult:
    """Run ``sim`` with ``kernel``; the same samples, progress reports and result as the Python loop."""
    if kernel.loop is not None:
        return kernel.loop(sim, wall0)  # type: ignore[no-any-return]
    form = runtime_form(sim.runtime)
    assert form is not None  # Simulation._kernel checked it
    core = build_core(sim, form, kernel.tree, kernel.tree_leaves, kernel.fit_tree)
    ctr = core.ctr
    fl = core.fl
    hp = new_heap(sim.n_jobs)
    samples = sim._new_samples()
    sample_t, s_queue, s_running, s_util, safe_cap = samples
    total_cap = np.ascontiguousarray(sim._total_cap, dtype=np.float64)
    smp = (sample_t, s_queue, s_running, s_util, total_cap, np.ascontiguousarray(safe_cap, dtype=np.float64))
    draws = kernel.draws
    if draws is not None:
        ctr[K.DRAW] = len(draws)  # empty: the kernel asks for the first batch when it needs one
    step = kernel.step
    state = kernel.state
    sim.engine_used = "compiled"
    # The first call, with no budget, compiles the kernel (or loads it from the cache): timed apart.
    c0 = time.perf_counter()
    p0 = time.process_time()
    status, hp = step(core, hp, state, smp, 0)
    sim.compile_s = (sim.compile_s or 0.0) + time.perf_counter() - c0
    sim.compile_cpu_s = (sim.compile_cpu_s or 0.0) + time.process_time() - p0
    progress = sim._progress
    last_report = time.perf_counter()
    while True:
        status, hp = step(core, hp, state, smp, CHUNK_EVENTS)
        sim.arrived = int(ctr[K.ARRIVED])
        sim.started = int(ctr[K.STARTED])
        sim.completed = int(ctr[K.COMPLETED])
        sim.now = float(fl[K.NOW])
        if status == K.S_DONE:
            break
        if status == K.S_GROW:
            hp = grow_heap(hp, ctr)
        elif status == K.S_DRAWS and kernel.refill is not None:
            kernel.refill()
        elif status == K.S_DRAWS:
            assert draws is not None
            draws[:] = sim.scheduler.rng.random(len(draws))
            ctr[K.DRAW] = 0
        elif status == K.S_ERROR:
            raise scheduling_error(sim, ctr)
        elif progress is not None:
            w = time.perf_counter()
            if w - last_report >= sim._progress_every_s:
                last_report = w
                progress(sim._progress_info(w - wall0))
    if kernel.done is not None:
        kernel.done()
    return sim._result(wall0, int(ctr[K.SAMPLE]), samples)
