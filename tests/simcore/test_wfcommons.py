"""WfCommons instances (WfFormat 1.0-1.6) as jobs made of tasks: counts, edges, runtimes, critical paths, errors.

The samples are in tests/data/wfcommons (two of them excerpts of published
instances, sources in its README); every expected number is computed by hand
there.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simcore.api import run_objects
from simcore.core.errors import InputError, ParameterError
from simcore.presets import CLUSTERS
from simcore.traces.wfcommons import instance_dict, read_instance, read_wfcommons, wfcommons_workload
from simcore.workloads.workflowgen import WorkflowParams, draw_jobs

DATA = Path(__file__).resolve().parents[1] / "data" / "wfcommons"
CHAIN = DATA / "helloworld-chain-5-chameleon.json"
CYCLES = DATA / "cycles-chameleon-excerpt-v1.0.json"
FORKJOIN = DATA / "forkjoin-v1.4.json"
CHAIN13 = DATA / "chain-v1.3.json"
DIAMOND = DATA / "diamond-v1.5.json"


def _edges(inst: Any) -> list[tuple[str, str]]:
    ids = inst.task_ids
    g = inst.graph
    return sorted((ids[int(p)], ids[t]) for t in range(g.n_tasks) for p in g.parents_of(t))


# -- the samples, one version each ------------------------------------------------------------------------------


def test_the_published_1_6_chain_has_five_tasks_in_a_line() -> None:
    inst = read_instance(CHAIN)
    assert inst.version == "1.6" and inst.n_tasks == 5 and inst.graph.n_edges == 4
    assert inst.runtime_s.tolist() == [100.376, 100.12, 99.396, 100.886, 100.462]
    assert [inst.graph.parents_of(t).tolist() for t in range(5)] == [[], [0], [1], [2], [3]]
    assert inst.critical_path_s == pytest.approx(501.24)
    assert inst.makespan_s == 661.0 and inst.cores.tolist() == [1.0] * 5


def test_the_published_1_0_cycles_excerpt_is_a_diamond_and_a_lone_task() -> None:
    inst = read_instance(CYCLES)
    assert inst.version == "1.0" and inst.n_tasks == 5
    assert _edges(inst) == sorted(
        [
            ("baseline_cycles_ID0000001", "cycles_ID0000002"),
            ("baseline_cycles_ID0000001", "fertilizer_increase_cycles_ID0000003"),
            ("cycles_ID0000002", "cycles_fertilizer_increase_output_parser_ID0000004"),
            ("fertilizer_increase_cycles_ID0000003", "cycles_fertilizer_increase_output_parser_ID0000004"),
        ]
    )
    assert inst.runtime_s.tolist() == [12.16, 1.497, 1.558, 0.05, 9.274]
    assert inst.critical_path_s == pytest.approx(13.768)  # 12.16 + 1.558 + 0.05
    assert inst.makespan_s == 454.0 and inst.extra["runtime_system"] == "Pegasus"


def test_1_4_edges_are_the_union_of_parents_and_children() -> None:
    inst = read_instance(FORKJOIN)
    assert inst.version == "1.4" and inst.n_tasks == 5 and inst.graph.n_edges == 6
    # work_3 declares no parent: split lists it among its children.
    assert ("split", "work_3") in _edges(inst)
    assert inst.runtime_s.tolist() == [10.0, 30.0, 50.0, 20.0, 5.0]
    assert inst.cores.tolist() == [1.0, 2.0, 8.0, 1.0, 1.0]
    assert inst.critical_path_s == 65.0  # split 10 + work_2 50 + merge 5


def test_1_3_reads_runtime_and_cores_by_their_old_names() -> None:
    inst = read_instance(CHAIN13)
    assert inst.version == "1.3" and inst.task_ids == ["x", "y", "z", "w"]
    assert inst.runtime_s.tolist() == [4.0, 6.5, 0.0, 7.0] and inst.cores.tolist() == [1.0, 2.0, 1.0, 1.0]
    assert _edges(inst) == [("x", "y"), ("y", "z")] and inst.critical_path_s == 10.5
    assert inst.makespan_s == 20.0


def test_1_5_tasks_are_numbered_parents_first_whatever_the_file_order() -> None:
    inst = read_instance(DIAMOND)  # the join d is listed first; c's parent only in a's children
    assert inst.task_ids == ["a", "b", "c", "d"]
    assert [inst.graph.parents_of(t).tolist() for t in range(4)] == [[], [0], [0], [1, 2]]
    assert inst.runtime_s.tolist() == [2.0, 3.0, 5.0, 1.0] and inst.cores.tolist() == [1.0, 2.0, 1.5, 1.0]
    assert inst.critical_path_s == 8.0


def test_requests_above_the_largest_machine_are_clipped_and_counted() -> None:
    inst = read_instance(FORKJOIN, max_cores=4.0)
    assert inst.cores.tolist() == [1.0, 2.0, 4.0, 1.0, 1.0] and inst.cores_clipped == 1


def test_a_gzipped_instance_reads_the_same() -> None:
    f = io.BytesIO(gzip.compress(DIAMOND.read_bytes()))
    f.name = "diamond.json.gz"
    inst = read_instance(f)
    assert inst.task_ids == ["a", "b", "c", "d"] and inst.critical_path_s == 8.0


def test_an_exported_instance_reads_back_identically() -> None:
    graph, dur, cores = draw_jobs(
        WorkflowParams(shape="layered", min_tasks=30, max_tasks=30), 1, np.random.default_rng(4)
    )
    doc = json.dumps(instance_dict(graph, dur, cores)).encode()
    inst = read_instance(doc)
    np.testing.assert_array_equal(inst.graph.parents, graph.parents)
    np.testing.assert_array_equal(inst.graph.parent_ptr, graph.parent_ptr)
    np.testing.assert_array_equal(inst.runtime_s, dur)


# -- streams ------------------------------------------------------------------------------------------------------


def test_one_instance_is_one_job_at_time_zero() -> None:
    wl = wfcommons_workload([read_instance(DIAMOND)])
    assert wl.n_jobs == 4 and wl.graph is not None and wl.graph.n_jobs == 1
    assert wl.submit.tolist() == [0.0] * 4 and wl.horizon_s == 0.0 and wl.resources == ("cores",)


def test_instances_replay_in_turn_at_a_fixed_interval() -> None:
    a, b = read_instance(DIAMOND), read_instance(CHAIN13)
    wl = wfcommons_workload([a, b], jobs=3, arrival="fixed", interarrival_s=60.0)
    g = wl.graph
    assert g is not None and g.job_size.tolist() == [4, 4, 4] and g.n_edges == 4 + 2 + 4
    assert wl.submit.tolist() == [0.0] * 4 + [60.0] * 4 + [120.0] * 4 and wl.horizon_s == 180.0
    # Job 2 is the diamond again, its parents offset by the 8 tasks before it.
    assert g.parents_of(11).tolist() == [9, 10]
    assert g.critical_path(wl.work).tolist() == [8.0, 10.5, 8.0]


def test_poisson_arrivals_are_deterministic_under_a_seed() -> None:
    inst = [read_instance(DIAMOND)]

    def draw(seed: int) -> list[float]:
        wl = wfcommons_workload(inst, jobs=5, arrival="poisson", interarrival_s=10.0, rng=np.random.default_rng(seed))
        return wl.submit[::4].tolist()

    assert draw(3) == draw(3) and draw(3) != draw(4)
    assert draw(3)[0] == 0.0 and np.all(np.diff(draw(3)) > 0)


def test_a_stream_needs_a_positive_interval() -> None:
    with pytest.raises(ParameterError, match="arrival 'fixed' needs a positive interarrival time"):
        wfcommons_workload([read_instance(DIAMOND)], jobs=2, arrival="fixed")


def test_the_import_report_lists_tasks_edges_and_critical_paths() -> None:
    res = read_wfcommons([str(CHAIN), str(FORKJOIN)], max_cores=4.0)
    assert res.report.rows_read == {"wfcommons": 10} and res.report.extra["task_jobs"] == 2
    inst = {i["name"]: i for i in res.report.extra["instances"]}
    assert inst["forkjoin-v1.4"] == {
        "name": "forkjoin-v1.4",
        "file": str(FORKJOIN),
        "schema_version": "1.4",
        "tasks": 5,
        "edges": 6,
        "critical_path_s": 65.0,
        "recorded_makespan_s": 70.0,
    }
    assert res.report.kept_notes == {"asked for more cores than the largest machine: clipped to it": 1}


def test_the_fork_join_runs_in_its_critical_path_on_dse_2020() -> None:
    cluster = CLUSTERS.get("dse-2020").build(machines=4)
    wl = wfcommons_workload([read_instance(FORKJOIN, max_cores=4.0)])
    s = run_objects(cluster, wl, "greedy", 0).summary  # horizon 0: drained
    # Enough i7 cores for every task at once: the makespan is the critical path, NJSL 1.
    assert s["task_jobs_finished"] == 1 and s["mean_jms_s"] == 65.0 and s["mean_njsl"] == 1.0
    assert s["mean_jwt_s"] == 0.0


# -- errors: the file and the JSON path -------------------------------------------------------------------------

D15 = json.loads(DIAMOND.read_text())
D14 = json.loads(FORKJOIN.read_text())


def _bad(base: dict[str, Any], edit: Any) -> bytes:
    d = copy.deepcopy(base)
    edit(d)
    return json.dumps(d).encode()


def _spec(d: dict[str, Any], i: int) -> dict[str, Any]:
    return d["workflow"]["specification"]["tasks"][i]  # type: ignore[no-any-return]


def _exe(d: dict[str, Any], i: int) -> dict[str, Any]:
    return d["workflow"]["execution"]["tasks"][i]  # type: ignore[no-any-return]


BAD: dict[str, tuple[bytes, str]] = {
    "not JSON": (b"{not json", "bad.json, line 1: invalid JSON: Expecting property name enclosed in double quotes"),
    "not an object": (b"[1, 2]", "bad.json: a WfCommons instance is a JSON object, got list"),
    "NaN": (
        b'{"workflow": {"tasks": [{"name": "a", "runtime": NaN}]}}',
        "bad.json: NaN is not allowed in a WfCommons instance (numbers must be finite)",
    ),
    "unknown version": (
        _bad(D15, lambda d: d.update(schemaVersion="2.0")),
        "bad.json: schemaVersion: '2.0' is not a WfFormat version this reader knows "
        "(1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6)",
    ),
    "no workflow": (_bad(D15, lambda d: d.pop("workflow")), "bad.json: workflow: missing (the workflow object)"),
    "no execution": (
        _bad(D15, lambda d: d["workflow"].pop("execution")),
        "bad.json: workflow.execution: missing: this instance describes the workflow only; simulating it needs the "
        "runtimes an execution recorded (workflow.execution.tasks[].runtimeInSeconds)",
    ),
    "missing runtime": (
        _bad(D15, lambda d: _exe(d, 1).pop("runtimeInSeconds")),
        "bad.json: workflow.execution.tasks[1].runtimeInSeconds: missing (the runtime of task 'b' in seconds)",
    ),
    "negative runtime": (
        _bad(D15, lambda d: _exe(d, 1).update(runtimeInSeconds=-3)),
        "bad.json: workflow.execution.tasks[1].runtimeInSeconds: must be non-negative (seconds), got -3",
    ),
    "runtime as text": (
        _bad(D15, lambda d: _exe(d, 1).update(runtimeInSeconds="3")),
        "bad.json: workflow.execution.tasks[1].runtimeInSeconds: must be a number (seconds), got '3'",
    ),
    "absurd runtime": (
        _bad(D15, lambda d: _exe(d, 1).update(runtimeInSeconds=1e12)),
        "bad.json: workflow.execution.tasks[1].runtimeInSeconds: 1e+12 is larger than the bound 3.15576e+08 "
        "(setting SIMCORE_MAX_TRACE_SECONDS)",
    ),
    "fractional core count below 1": (
        _bad(D15, lambda d: _exe(d, 1).update(coreCount=0.5)),
        "bad.json: workflow.execution.tasks[1].coreCount: must be at least 1 (cores), got 0.5",
    ),
    "execution of an unknown task": (
        _bad(D15, lambda d: _exe(d, 1).update(id="zz")),
        "bad.json: workflow.execution.tasks[1].id: 'zz' is not the id of any task of workflow.specification.tasks",
    ),
    "two execution records": (
        _bad(D15, lambda d: _exe(d, 1).update(id="a")),
        "bad.json: workflow.execution.tasks[1].id: a second execution record of task 'a' (the first is "
        "workflow.execution.tasks[0])",
    ),
    "task without execution": (
        _bad(D15, lambda d: d["workflow"]["execution"]["tasks"].pop(3)),
        "bad.json: workflow.specification.tasks[0]: task 'd' has no runtime: workflow.execution.tasks has no "
        "record with its id",
    ),
    "unknown parent": (
        _bad(D15, lambda d: _spec(d, 0)["parents"].append("x")),
        "bad.json: workflow.specification.tasks[0].parents[2]: unknown task 'x': no task of "
        "workflow.specification.tasks has that id",
    ),
    "unknown child": (
        _bad(D15, lambda d: _spec(d, 1)["children"].append("y")),
        "bad.json: workflow.specification.tasks[1].children[2]: unknown task 'y': no task of "
        "workflow.specification.tasks has that id",
    ),
    "duplicate id": (
        _bad(D15, lambda d: _spec(d, 2).update(id="a")),
        "bad.json: workflow.specification.tasks[2].id: 'a' is also the id of workflow.specification.tasks[1]",
    ),
    "cycle": (
        _bad(D15, lambda d: _spec(d, 1)["parents"].append("d")),
        "bad.json: workflow.specification.tasks[0] (id 'd'): the parents form a cycle: 'd' -> 'a' -> 'b' -> 'd'",
    ),
    "own parent": (
        _bad(D15, lambda d: _spec(d, 1)["parents"].append("a")),
        "bad.json: workflow.specification.tasks[1] (id 'a'): the parents form a cycle: 'a' -> 'a'",
    ),
    "no tasks": (
        _bad(D15, lambda d: d["workflow"]["specification"].update(tasks=[])),
        "bad.json: workflow.specification.tasks: is empty: a workflow needs at least one task",
    ),
    "parents not a list": (
        _bad(D15, lambda d: _spec(d, 1).update(parents="a")),
        "bad.json: workflow.specification.tasks[1].parents: must be a list of task ids, got str",
    ),
    "1.4 missing runtime": (
        _bad(D14, lambda d: d["workflow"]["tasks"][2].pop("runtimeInSeconds")),
        "bad.json: workflow.tasks[2].runtimeInSeconds: missing (the runtime of task 'work_2' in seconds; 'runtime' "
        "before 1.4)",
    ),
    "1.4 zero cores": (
        _bad(D14, lambda d: d["workflow"]["tasks"][2].update(cores=0)),
        "bad.json: workflow.tasks[2].cores: must be at least 1 (cores), got 0",
    ),
    "1.4 unknown parent": (
        _bad(D14, lambda d: d["workflow"]["tasks"][4]["parents"].append("nope")),
        "bad.json: workflow.tasks[4].parents[3]: unknown task 'nope': no task of workflow.tasks has that name or id",
    ),
    "1.4 same name twice without ids": (
        _bad(
            D14,
            lambda d: [t.pop("id") for t in d["workflow"]["tasks"]] and d["workflow"]["tasks"][3].update(name="split"),
        ),
        "bad.json: workflow.tasks[3].name: 'split' is also the name of workflow.tasks[0] (and neither has an id)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_instance_names_the_file_and_json_path(case: str) -> None:
    content, message = BAD[case]
    f = io.BytesIO(content)
    f.name = "bad.json"
    with pytest.raises(InputError) as err:
        read_instance(f)
    assert str(err.value).startswith(message), str(err.value)
