"""Running the staged kernel inside a :class:`~simcore.core.engine.Simulation`: its state, and the loop around it.

:func:`make` turns the policy into data (:class:`kernel.Policy`) and gathers the
engine's arrays and the specification's per-job state (:class:`kernel.Run`),
after :meth:`Staged.setup <simcore.schedulers.staged.Staged.setup>` built the
specification's run (whose graph and job sizes it reads). :func:`run` calls the
kernel in chunks as :func:`simcore.compiled.loop.run_kernel` does (progress reports,
cancellation between chunks, the first call timed as compile time), refills its
uniforms from the injected generator, and hands the engine back its counters.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from simcore.compiled.loop import engine_arrays, engine_result, engine_samples, report_progress, timed_first_call
from simcore.core.errors import SchedulingError
from simcore.dse.staged.atoms import estimated_durations
from simcore.dse.staged.cycle import DRAW_BATCH
from simcore.schedulers.staged import kernel as K

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel
    from simcore.core.engine import SimResult, Simulation
    from simcore.dse.staged.cycle import StagedRun
    from simcore.dse.staged.policy import Atom
    from simcore.schedulers.staged import Staged

#: Events per kernel call between two progress checks (as simcore.compiled.driver.CHUNK_EVENTS).
CHUNK_EVENTS = 65536

_ADMISSION = {"Limit-Load": K.LIMIT_LOAD, "Limit-Active": K.LIMIT_ACTIVE, "Limit-Job": K.LIMIT_JOB}
_ADMISSION["Job-Balance"] = K.JOB_BALANCE
_R5 = {"First-Fit": K.FIRST_FIT, "Best-Fit": K.BEST_FIT, "Worst-Fit": K.WORST_FIT}
_R5.update({"Expensive": K.EXPENSIVE, "Cheap": K.CHEAP, "Random": K.R_RANDOM})
_J1 = {"Interactive": K.INTERACTIVE, "Batch": K.BATCH, "Random": K.J1_RANDOM}
_T2_DYNAMIC = {"Task-Duration-History": K.K_HISTORY, "Active-Per-Job": K.K_ACTIVE, "Job-Completion": K.K_COMPLETION}


def _sign(atom: Atom) -> float:
    return -1.0 if atom.direction == "desc" else 1.0


def _admission(atoms: tuple[Atom, ...]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """A J2 or T1 composition: deterministic atom codes, their arguments, and the Random atoms' p."""
    det = [a for a in atoms if a.name not in ("Always", "Random")]
    codes = np.array([_ADMISSION[a.name] for a in det], dtype=np.int64)
    args = np.array([float(a.args[0]) for a in det], dtype=np.float64)
    probs = np.array([float(a.args[0]) for a in atoms if a.name == "Random"], dtype=np.float64)
    return codes, args, probs


def _job_keys(atoms: tuple[Atom, ...], run: StagedRun) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """J3: per atom its kind, sign and (for fixed numbers) each job's number, as ``atoms._job_key``."""
    J = len(run.job_size_array)
    kinds, signs, rows = [], [], []
    for a in atoms:
        sign = _sign(a)
        row = np.zeros(J)
        kind = K.K_STATIC
        if a.name == "Submission-Time":
            kind = K.K_JOB_SUBMIT
        elif a.name == "Job-Size":
            row = sign * run.job_size_array.astype(np.float64)
        elif a.name == "Job-Duration":
            row = sign * run.graph.critical_path(estimated_durations(run))
        else:
            kind = K.K_RANDOM
        kinds.append(kind)
        signs.append(sign)
        rows.append(row)
    return np.array(kinds, dtype=np.int64), np.array(signs), np.array(rows, dtype=np.float64).reshape(len(atoms), J)


def _task_keys(atoms: tuple[Atom, ...], run: StagedRun) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """T2: per atom its kind, sign and (for fixed numbers) each task's number, as ``atoms._task_key``."""
    n = run.sim.n_jobs
    kinds, signs, rows = [], [], []
    for a in atoms:
        sign = _sign(a)
        row = np.zeros(n)
        kind = _T2_DYNAMIC.get(a.name, K.K_STATIC)
        if a.name == "Submission-Time":
            row = sign * np.asarray(run.sim.submit, dtype=np.float64)
        elif a.name == "Task-Duration":
            row = sign * estimated_durations(run)
        elif a.name == "Task-Dependencies":
            row = sign * run.graph.n_parents.astype(np.float64)
        elif a.name == "Task-Dependents":
            row = sign * np.diff(run.graph.child_ptr).astype(np.float64)
        elif a.name == "Random":
            kind = K.K_RANDOM
        kinds.append(kind)
        signs.append(sign)
        rows.append(row)
    return np.array(kinds, dtype=np.int64), np.array(signs), np.array(rows, dtype=np.float64).reshape(len(atoms), n)


def _r5(atoms: tuple[Atom, ...]) -> NDArray[Any]:
    """R5's atoms up to the first that leaves no tie (First-Fit, Random): the rest cannot matter."""
    used = []
    for a in atoms:
        used.append(_R5[a.name])
        if a.name in ("First-Fit", "Random"):
            break
    return np.array(used, dtype=np.int64)


def policy_data(sched: Staged, sim: Simulation) -> Any:
    """The policy of ``sched`` as the kernel's :class:`~kernel.Policy`."""
    pol = sched.policy
    run = sched.run
    j2 = _admission(pol.J2)
    t1 = _admission(pol.T1)
    speed = sim.cluster.speed
    return K.Policy(
        *j2,
        *t1,
        *_job_keys(pol.J3, run),
        *_task_keys(pol.T2, run),
        _r5(pol.R5),
        np.asarray(speed, dtype=np.float64)[sim.config_of] if speed is not None else np.ones(sim.n_machines),
    )


def _engine(sim: Simulation) -> Any:
    """The engine's own arrays (written in place) and the completion heap."""
    _, work, dcls, tab, tab2 = sim.runtime.compiled_form()  # type: ignore[attr-defined]
    n = sim.n_jobs
    g = sim.graph
    i64 = np.int64
    e = engine_arrays(sim)
    return K.Engine(
        e.free_rows.reshape(-1),
        e.cap_rows.reshape(-1),
        e.request.reshape(-1),
        e.running,
        e.last,
        e.state,
        e.start_t,
        e.finish_t,
        e.machine_of,
        e.submit,
        e.config_of,
        e.job_class,
        e.waiting if e.waiting is not None else np.zeros(n, dtype=i64),
        np.ascontiguousarray(g.child_ptr, dtype=i64) if g is not None else np.zeros(n + 1, dtype=i64),
        np.ascontiguousarray(g.children, dtype=i64) if g is not None else np.zeros(0, dtype=i64),
        np.ascontiguousarray(work, dtype=np.float64),
        np.ascontiguousarray(dcls, dtype=i64),
        np.ascontiguousarray(tab, dtype=np.float64).reshape(np.shape(tab)[0], -1),
        np.ascontiguousarray(tab2, dtype=np.float64).reshape(np.shape(tab2)[0], -1),
        np.zeros(n + 1),
        np.zeros(n + 1, dtype=i64),
        np.zeros(n + 1, dtype=i64),
    )


def _run_state(sched: Staged, sim: Simulation, pol: Any) -> Any:
    run = sched.run
    J = len(run.job_size_array)
    n = sim.n_jobs
    i64 = np.int64
    return K.Run(
        np.ascontiguousarray(np.asarray(run.job_of), dtype=i64),
        np.ascontiguousarray(run.job_size_array, dtype=i64),
        np.zeros(J, dtype=np.int8),
        np.zeros(J),
        np.zeros(J),
        np.zeros(J, dtype=i64),
        np.zeros(J, dtype=i64),
        np.zeros(J),
        np.zeros(J, dtype=i64),
        np.zeros((J, len(pol.j3_kind))),
        np.full(n, -1, dtype=i64),
        np.full(J, -1, dtype=i64),
        np.full(J, -1, dtype=i64),
        np.zeros(J, dtype=i64),
        np.zeros(J, dtype=i64),
        np.zeros(n, dtype=i64),
        np.zeros((n, len(pol.t2_kind))),
        np.zeros(sim.n_machines, dtype=np.bool_),
        np.zeros(sim.n_machines, dtype=i64),
        np.zeros(max(1, sim.view.n_configs), dtype=np.bool_),
        np.zeros(0),
    )


def _counters(sched: Staged, sim: Simulation, pol: Any) -> NDArray[Any]:
    c = np.zeros(1, dtype=K.COUNTERS)
    policy = sched.policy
    form = sim.runtime.compiled_form()  # type: ignore[attr-defined]
    values: dict[str, Any] = {
        "n_machines": sim.n_machines,
        "n_resources": engine_arrays(sim).n_resources,
        "n_tasks": sim.n_jobs,
        "mode": form[0],
        "all_runnable": 1 if sim.all_runnable else 0,
        "n_configs": sim.view.n_configs,
        "j1": _J1[policy.J1[0].name],
        "quantum": sched.run.quantum,
        "j3_random": int(any(a.name == "Random" for a in policy.J3)),
        "now": sim.now,
        "horizon": sim.horizon,
        "drain": 1.0 if sim.drain else 0.0,
        "timer": np.inf,
        "blocked_task": -1,
    }
    # Uniforms one waiting task may cost an event: each Random admission atom, a T2 and an R5 draw, and
    # (per event) the J3 draw at a job's arrival and J1's delay; 0 when the policy draws nothing.
    randomness = len(pol.j2_rnd) + len(pol.t1_rnd) + int(K.K_RANDOM in pol.t2_kind)
    randomness += int(K.R_RANDOM in pol.r5) + values["j3_random"] + int(values["j1"] == K.J1_RANDOM)
    values["draws_per_task"] = randomness + 1 if randomness else 0
    for name, v in values.items():
        c[name] = v
    return c


def make(sched: Staged, sim: Simulation) -> Kernel:
    """The staged kernel for this run, built after ``sched.setup(sim)`` (see the module docstring)."""
    from simcore.compiled.driver import Kernel

    pol = policy_data(sched, sim)
    parts = {"engine": _engine(sim), "policy": pol, "run": _run_state(sched, sim, pol)}
    parts["counters"] = _counters(sched, sim, pol)

    def loop(sim_: Simulation, wall0: float) -> SimResult:
        return run(sim_, sched, parts, wall0)

    return Kernel(step=K.step, state=(), loop=loop)


def _refill(parts: dict[str, Any], rng: np.random.Generator) -> None:
    """Keep the unread uniforms and append the generator's next ones: at least twice an event's worth."""
    c = parts["counters"]
    r = parts["run"]
    left = r.draws[int(c["draw"][0]) :]
    # A kernel helper is a plain Python function outside the kernel: here on the record, by attribute.
    need = 2 * K.draws_needed(c.view(np.recarray)[0])
    more = rng.random(max(DRAW_BATCH, need - len(left)))
    draws = np.concatenate([left, more])
    parts["run"] = r._replace(draws=draws)
    c["draw"] = 0
    c["n_draws"] = len(draws)


def run(sim: Simulation, sched: Staged, parts: dict[str, Any], wall0: float) -> SimResult:
    """Run ``sim`` with the staged kernel; the same samples, progress reports and result as the Python loop."""
    c = parts["counters"]
    samples, total_cap, safe_cap = engine_samples(sim)
    sample_t, s_queue, s_running, s_util, _ = samples
    smp = K.Samples(
        sample_t,
        s_queue,
        s_running,
        s_util,
        total_cap,
        safe_cap,
        np.zeros(3 * K.PW_DEPTH, dtype=np.int64),
        np.zeros(K.PW_DEPTH),
    )
    # compiles, or loads from the cache
    timed_first_call(sim, lambda: K.step(parts["engine"], parts["policy"], parts["run"], smp, c, 0))
    last_report = time.perf_counter()
    while True:
        status = K.step(parts["engine"], parts["policy"], parts["run"], smp, c, CHUNK_EVENTS)
        rec = c[0]
        sim.arrived, sim.started, sim.completed = int(rec["arrived"]), int(rec["started"]), int(rec["completed"])
        sim.held, sim.now = int(rec["held"]), float(rec["now"])
        if status == K.S_DONE:
            break
        if status == K.S_DRAWS:
            _refill(parts, sched.rng)
        elif status == K.S_ERROR:
            raise _error(sim, rec)
        else:
            last_report = report_progress(sim, last_report, wall0)
    sched.run.unrunnable = int(c["unrunnable"][0])
    sched.run.cycles = int(c["cycles"][0])
    return engine_result(sim, wall0, int(c["sample"][0]), samples)


def _error(sim: Simulation, rec: Any) -> SchedulingError:
    job, m = int(rec["err_job"]), int(rec["err_machine"])
    if int(rec["err"]) == K.E_NO_FIT:
        return SchedulingError(
            f"job {job} (request {sim.request[job].tolist()}) does not fit on machine {m} "
            f"(free {sim.free[m].tolist()}) (compiled kernel of 'staged')"
        )
    return SchedulingError(f"job {job} cannot run on machine {m} (compiled kernel of 'staged')")
