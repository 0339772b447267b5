"""The fit rule's tolerance, on every scheduler and both engines: requests within EPS of the free capacity.

The rule (:mod:`simcore.core.fit`) is ``free >= request - EPS``. Its tolerance is what lets a
request that fills a machine exactly on paper fit after float rounding, so each side of it is
pinned here with a request beside a free capacity of exactly 1.0 (``2.0 - 1.0``: no rounding):

* ``1.0 + EPS/2`` fits (it is within the tolerance);
* ``1.0 + 2*EPS`` does not.

Each scheduler meets the edge twice: on an arrival (the free capacity is the machine's after one
start) and on a completion (a queued job meets the capacity a finished job gave back), in each
of two resources (kernels unroll two resources apart from the general loop). Without these
cases, dropping ``- FIT_EPS`` from the compiled fit rule passed every equivalence test (issue 27).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simcore.core.engine import Simulation
from simcore.core.errors import SchedulingError
from simcore.core.fit import EPS
from simcore.core.model import ClassTable, Cluster, Workload
from simcore.core.seeding import scheduler_rng
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import ProfileTable
from simcore.schedulers import create
from tests.simcore.conftest import ENGINES, expect_engine

RES = ("cpu", "mem")

#: Schedulers that share machines between jobs, with the options that take different kernel paths;
#: ``staged`` has no kernel (it runs on the Python engine only).
SHARING: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("greedy", {}, ENGINES),
    ("fcfs", {}, ENGINES),
    ("fcfs", {"pick": "lowest-index"}, ENGINES),
    ("lotes", {}, ENGINES),
    ("tetris", {}, ENGINES),
    ("tetris", {"work_weight": 0.0}, ENGINES),
    ("mris", {}, ENGINES),
    ("mris", {"mris_window": 1}, ENGINES),
    ("staged", {}, ("python",)),
]
CASES = [
    pytest.param(n, o, e, id="-".join([n, *(f"{k}={v}" for k, v in o.items()), e]))
    for n, o, engines in SHARING
    for e in engines
]

#: (excess over the free capacity, whether the job fits): the two sides of the tolerance.
EDGES = [pytest.param(EPS / 2, True, id="within-eps"), pytest.param(2 * EPS, False, id="beyond-eps")]


def edge_workload(when: str, tight: int, excess: float) -> Workload:
    """Jobs on one (2, 2) machine that leave exactly 1.0 free in resource ``tight`` for job C.

    ``arrival``: A (1.0, 10 s) at 0; C (1.0 + excess) at 1 meets 1.0 free on arrival.
    ``completion``: A (1.0, 10 s) and B (1.0, 20 s) at 0 fill the machine; C at 1 queues and meets
    1.0 free when A ends at 10. The other resource is never tight (0.5 + 0.5 + 0.25 of 2).
    """

    def req(x: float) -> list[float]:
        r = [0.25, 0.25]
        r[tight] = x
        return r

    if when == "arrival":
        submit, request, work = [0.0, 1.0], [req(1.0), req(1.0 + excess)], [10.0, 5.0]
    else:
        submit, request, work = [0.0, 0.0, 1.0], [req(1.0), req(1.0), req(1.0 + excess)], [10.0, 20.0, 5.0]
    n = len(submit)
    # LoTES plans with a class table: one class, its least request (the plan puts two on the machine).
    classes = ClassTable(("c0",), np.array([req(1.0)]), np.ones((1, 1)), np.ones(1))
    return Workload("edge", RES, submit, request, work, np.zeros(n, dtype=np.int64), 100.0, classes=classes)


@pytest.mark.parametrize(("name", "opts", "engine"), CASES)
@pytest.mark.parametrize("when", ["arrival", "completion"])
@pytest.mark.parametrize("tight", [0, 1])
@pytest.mark.parametrize(("excess", "fits"), EDGES)
def test_a_request_within_eps_of_the_free_capacity_fits_and_one_beyond_does_not(
    name: str, opts: dict[str, Any], engine: str, when: str, tight: int, excess: float, fits: bool
) -> None:
    cluster = Cluster("one", RES, ("m",), np.array([1]), np.array([[2.0, 2.0]]))
    wl = edge_workload(when, tight, excess)
    sim = Simulation(cluster, wl, create(name, **opts), scheduler_rng(0), engine=engine, drain=True)
    res = expect_engine(sim.run(), engine)
    c = wl.n_jobs - 1
    # arrival: C starts at once (1) or when A ends (10); completion: when A ends (10) or B ends (20).
    start_if_fits, start_if_not = (1.0, 10.0) if when == "arrival" else (10.0, 20.0)
    assert res.start[c] == (start_if_fits if fits else start_if_not)
    assert res.machine.tolist() == [0] * wl.n_jobs


PROFILE = ["affinity", "greedy1", "greedy2", "greedy3"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", PROFILE)
@pytest.mark.parametrize(("excess", "fits"), EDGES)
def test_a_profile_scheduler_may_fill_an_idle_machine_to_within_eps(
    engine: str, name: str, excess: float, fits: bool
) -> None:
    """The profile schedulers give a job any idle machine; the engine's start applies the tolerance.

    Machine 0 (1 cpu) has been idle longest and costs the same as machine 1 (4 cpu), so the job
    goes to machine 0: a request of 1.0 + EPS/2 starts there, one of 1.0 + 2*EPS is refused.
    """
    table = ProfileTable(("a",), ("m0", "m1"), np.ones((1, 2)), np.zeros((1, 2)), np.ones((1, 2)), np.ones(1))
    cluster = Cluster("c", ("cpu",), ("m0", "m1"), np.array([1, 1]), np.array([[1.0], [4.0]]))
    cls = np.zeros(1, dtype=np.int64)
    wl = Workload("w", ("cpu",), [0.0], [[1.0 + excess]], [1.0], cls, 10.0, runtime=ProfileRuntime(table, cls))
    sim = Simulation(cluster, wl, create(name), scheduler_rng(0), engine=engine)
    if fits:
        res = expect_engine(sim.run(), engine)
        assert res.machine.tolist() == [0] and res.start.tolist() == [0.0]
    else:
        with pytest.raises(SchedulingError, match=r"job 0 \(request \[1.000000002\]\) does not fit on machine 0"):
            sim.run()
