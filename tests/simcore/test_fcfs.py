"""FCFS on multi-resource clusters: the idle order, its search, and the rule it implements.

The specification keeps machines in ``(idle_since, index)`` order and searches it block by
block (``simcore.schedulers.fcfs``); the rule it implements is the plain argmin of
``idle_since`` over the machines where the head fits and can run, ties to the lowest index.
``Definition`` below is that rule, written as directly as possible, and the specification
must make its decisions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.core.engine import Simulation
from simcore.core.model import Cluster, Workload
from simcore.core.seeding import scheduler_rng
from simcore.schedulers.fcfs import FCFS
from tests.simcore.test_kernels import both, fcfs_scenarios


class Definition(FCFS):
    """FCFS's rule by brute force: every dispatch looks at every machine."""

    def on_completion(self, job: int, machine: int) -> None:
        if self._single:
            super().on_completion(job, machine)
            return
        self.idle_since[machine] = self.sim.now
        self._dispatch()

    def _dispatch(self) -> None:
        if self._single:
            super()._dispatch()
            return
        sim = self.sim
        view = sim.view
        while self.queue:
            job = self.queue[0]
            fit = view.fit_mask(view.floors_of(job))
            fit &= np.repeat(np.array(sim.runnable_configs(job)), sim.cluster.counts)
            if not fit.any():
                return
            if self.pick == "lowest-index":
                m = int(np.argmax(fit))
            else:
                m = int(np.argmin(np.where(fit, self.idle_since, np.inf)))
            self.queue.popleft()
            sim.start(job, m)


@pytest.mark.parametrize("pick", ["longest-idle", "lowest-index"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=fcfs_scenarios(), drain=st.booleans())
def test_the_specification_takes_the_argmin_of_idle_since(
    pick: str, scen: tuple[Cluster, Workload], drain: bool
) -> None:
    cluster, wl = scen
    runs = []
    for sched in (FCFS(pick=pick), Definition(pick=pick)):
        sim = Simulation(cluster, wl, sched, scheduler_rng(0), engine="python", drain=drain, samples=20)
        runs.append(sim.run())
    a, b = runs
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)


def test_the_specification_searches_the_idle_order_across_many_blocks() -> None:
    """Several hundred machines (blocks of the order skipped by their bounds, gaps closed): still the rule."""
    from simcore.api import resolve_cluster, resolve_workload

    cluster = resolve_cluster("google-balanced", {"machines_per_config": 60})
    wl = resolve_workload("google-like", cluster, 2, 0.95, 0.3)
    runs = []
    for sched in (FCFS(), Definition()):
        runs.append(Simulation(cluster, wl, sched, scheduler_rng(2), engine="python").run())
    a, b = runs
    assert a.n_jobs > 5000
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)


def interleaved() -> tuple[Cluster, Workload]:
    """Two configurations of opposite shapes whose machines alternate in idle order.

    Machines 0, 1: 1.0 cpu, 0.1 memory; machines 2, 3: 0.1 cpu, 1.0 memory. Four jobs
    fill one machine each and finish at 1, 2, 3, 4 s on machines 0, 2, 1, 3: the idle
    order is then 0, 2, 1, 3. At 5 s, X fills machine 0's memory and Y machine 2's
    cpu; Z then fits neither, although the two together hold the most free cpu (0.95
    on 0) and the most free memory (0.95 on 2): it takes machine 1, the next in order.
    """
    cluster = Cluster("shapes", ("cpu", "mem"), ("wide", "tall"), np.array([2, 2]), np.array([[1.0, 0.1], [0.1, 1.0]]))
    req = [[1.0, 0.1], [1.0, 0.1], [0.1, 1.0], [0.1, 1.0], [0.05, 0.1], [0.1, 0.05], [0.05, 0.05]]
    submit = [0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0]
    work = [1.0, 3.0, 2.0, 4.0, 10.0, 10.0, 10.0]
    wl = Workload("w", ("cpu", "mem"), np.array(submit), np.array(req), np.array(work), np.zeros(7, np.int64), 30.0)
    return cluster, wl


def test_a_head_skips_machines_each_full_in_another_resource_when_configurations_interleave() -> None:
    cluster, wl = interleaved()
    res = both(cluster, wl, "fcfs", {})
    assert res.machine.tolist() == [0, 1, 2, 3, 0, 2, 1]
    assert res.start.tolist() == [0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0]


def test_lowest_index_on_the_same_cluster_takes_the_lowest_numbered_machine() -> None:
    cluster, wl = interleaved()
    res = both(cluster, wl, "fcfs", {"pick": "lowest-index"})
    assert res.machine.tolist() == [0, 1, 2, 3, 0, 1, 1]  # Z fits beside Y on machine 1


def test_equal_completion_times_put_the_lower_index_first() -> None:
    """Machines 2 and 0 become free at 3 s, machine 2 first (its job started first): the next
    job takes machine 0, as the argmin over idle_since breaks the tie, not the later move."""
    cluster = Cluster("c", ("cpu", "mem"), ("a", "b"), np.array([2, 1]), np.array([[1.0, 1.0], [1.0, 1.0]]))
    req = [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 0.5]]
    submit = [0.0, 0.0, 0.0, 1.0, 4.0]
    work = [1.0, 50.0, 3.0, 2.0, 1.0]  # job 2 (machine 2) and job 3 (machine 0, from 1 s) end at 3 s
    wl = Workload("w", ("cpu", "mem"), np.array(submit), np.array(req), np.array(work), np.zeros(5, np.int64), 30.0)
    res = both(cluster, wl, "fcfs", {})
    assert res.machine.tolist() == [0, 1, 2, 0, 0]
    assert res.finish.tolist()[2:4] == [3.0, 3.0]
