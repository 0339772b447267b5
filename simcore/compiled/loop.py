"""The engine's loop when a kernel runs it: chunks of compiled events between progress checks.

The kernel takes the samples itself (the same values, to the bit, as
``Simulation._sample``: numpy's pairwise summation is reproduced), because a
call into a kernel costs about 0.1 ms of argument checking and a run has
2,000 samples. It returns every ``CHUNK_EVENTS`` events so that progress is
reported and a progress callback that raises cancels the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

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

T = TypeVar("T")
FloatArray = NDArray[np.float64]


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
    samples, total_cap, safe_cap = engine_samples(sim)
    sample_t, s_queue, s_running, s_util, _ = samples
    smp = (sample_t, s_queue, s_running, s_util, total_cap, safe_cap)
    draws = kernel.draws
    if draws is not None:
        ctr[K.DRAW] = len(draws)  # empty: the kernel asks for the first batch when it needs one
    step = kernel.step
    state = kernel.state
    # The first call, with no budget, compiles the kernel (or loads it from the cache): timed apart.
    status, hp = timed_first_call(sim, lambda: step(core, hp, state, smp, 0))
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
        else:
            last_report = report_progress(sim, last_report, wall0)
    if kernel.done is not None:
        kernel.done()
    return engine_result(sim, wall0, int(ctr[K.SAMPLE]), samples)


# The engine's side of a kernel's chunked loop, shared by run_kernel and by kernels that bring their own loop
# (the staged scheduler's, which runs task graphs): they read the Simulation's private state here, on the
# engine's floor, so that no scheduler does (tests/simcore/test_engine_state.py).


def engine_samples(sim: Simulation) -> tuple[Any, FloatArray, FloatArray]:
    """The run's sample arrays (as :meth:`Simulation._new_samples` gives them), total and safe capacity."""
    samples = sim._new_samples()
    total_cap = np.ascontiguousarray(sim._total_cap, dtype=np.float64)
    return samples, total_cap, np.ascontiguousarray(samples[4], dtype=np.float64)


def timed_first_call(sim: Simulation, call: Callable[[], T]) -> T:
    """``call()``, the kernel's first call (compiling it or loading it from the cache), timed into ``compile_s``."""
    sim.engine_used = "compiled"
    c0 = time.perf_counter()
    p0 = time.process_time()
    out = call()
    sim.compile_s = (sim.compile_s or 0.0) + time.perf_counter() - c0
    sim.compile_cpu_s = (sim.compile_cpu_s or 0.0) + time.process_time() - p0
    return out


def report_progress(sim: Simulation, last_report: float, wall0: float) -> float:
    """Report progress if the callback asks for it and its interval has passed; the time of the last report."""
    if sim._progress is None:
        return last_report
    w = time.perf_counter()
    if w - last_report < sim._progress_every_s:
        return last_report
    sim._progress(sim._progress_info(w - wall0))
    return w


def engine_result(sim: Simulation, wall0: float, n_samples: int, samples: Any) -> SimResult:
    """The run's result, as the Python loop builds it."""
    return sim._result(wall0, n_samples, samples)


class EngineArrays(NamedTuple):
    """The engine's per-machine and per-job arrays, which a kernel with its own loop writes in place."""

    free_rows: NDArray[Any]
    cap_rows: NDArray[Any]
    request: NDArray[Any]
    running: NDArray[Any]
    last: NDArray[Any]
    state: NDArray[Any]
    start_t: NDArray[Any]
    finish_t: NDArray[Any]
    machine_of: NDArray[Any]
    submit: NDArray[Any]
    config_of: NDArray[Any]
    job_class: NDArray[Any]
    #: Unfinished parents per task; None without a task graph.
    waiting: NDArray[Any] | None
    n_resources: int


def engine_arrays(sim: Simulation) -> EngineArrays:
    """The arrays themselves (not copies): a kernel's writes are the engine's state."""
    return EngineArrays(
        sim._free_rows,
        sim._cap_rows,
        sim._request,
        sim._running,
        sim._last,
        sim._state,
        sim._start_t,
        sim._finish_t,
        sim._machine_of,
        sim._submit,
        sim._config_of,
        sim._job_class,
        sim._waiting if sim.graph is not None else None,
        sim._R,
    )
