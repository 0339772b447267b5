"""classes.json (simcore import --classes) read back, aligned to a cluster, and attached to runs of a trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError
from simcore.core.model import ClassTable, Workload
from simcore.scenario import build_cluster, build_workload, run_scenario, validate_scenario
from simcore.traces import importer
from simcore.workloads.classfile import class_table_from_dict, read_classes

TABLE = {
    "resources": ["cpu", "mem"],
    "table": {
        "names": ["k1", "k2"],
        "requests": [[0.1, 0.2], [0.5, 0.4]],
        "rates": [[0.01], [0.002]],
        "proportions": [0.75, 0.25],
    },
}


def test_it_reorders_requests_to_the_cluster_and_repeats_machine_independent_rates():
    t = class_table_from_dict(TABLE, ("mem", "cpu"), 3)
    np.testing.assert_array_equal(t.requests, [[0.2, 0.1], [0.4, 0.5]])
    np.testing.assert_array_equal(t.rates, [[0.01] * 3, [0.002] * 3])
    assert t.names == ("k1", "k2") and t.proportions.tolist() == [0.75, 0.25]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"resources": ["cpu"]}, "table' shapes do not match"),
        ({"table": {**TABLE["table"], "rates": [[0.01, 0.02], [0.002, 0.002]]}}, "rates differ between 2 machine"),
        ({"table": {**TABLE["table"], "proportions": [0.5, -0.1]}}, "finite and non-negative"),
        ({"table": {**TABLE["table"], "names": "k1"}}, "names' must be a list"),
        ({"resources": ["cpu", "gpu"]}, "missing ['mem']"),
    ],
)
def test_bad_tables_name_the_file_and_what_is_wrong(change, message):
    with pytest.raises(InputError, match=r"classes\.json.*" + message.replace("[", r"\[").replace("]", r"\]")):
        class_table_from_dict({**TABLE, **change}, ("cpu", "mem"), 3)


def test_a_written_class_table_reads_back_and_runs_get_it(tmp_path: Path):
    # Given a trace classified by simcore import, written with its classes.json
    n = 120
    wl = Workload(
        name="t",
        resources=("cpu", "mem"),
        submit=np.arange(n) * 60.0,
        request=np.array([[0.05, 0.05] if i % 2 else [0.4, 0.3] for i in range(n)]),
        work=np.array([100.0 + (i % 3) * 50 for i in range(n)]),
        job_class=np.full(n, -1),
        horizon_s=n * 60.0,
    )
    res = importer.classify(importer.ImportResult(wl, None, importer.ImportReport("csv")), 2, window_hours=1.0)
    files = importer.write_outputs(res, tmp_path)
    assert set(files) == {"trace", "classes"}
    table = read_classes(files["classes"], ("cpu", "mem"), 1)
    assert isinstance(table, ClassTable) and table.n_classes == 2
    np.testing.assert_allclose(table.requests, res.workload.classes.requests)
    # When a scenario names the class file beside the trace, the run's workload has those classes
    scenario = validate_scenario(
        {
            "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
            "workload": {"file": "trace.csv", "classes": "classes.json"},
            "schedulers": ["lotes"],
            "seeds": [0],
        }
    )
    paths = {"trace.csv": Path(files["trace"]), "classes.json": Path(files["classes"])}
    cluster = build_cluster(scenario)
    built = build_workload(scenario, cluster, 0, paths)
    assert built.classes is not None and built.classes.rates.shape == (2, cluster.n_configs)
    np.testing.assert_array_equal(built.job_class, res.workload.job_class)
    out = run_scenario(scenario, "lotes", 0, paths)
    assert out.offline["class_source"] == {"source": "workload"}
    # A class file whose ids do not cover the trace's is refused with both names.
    small = {**json.loads(Path(files["classes"]).read_text())}
    small["table"] = {k: v[:1] for k, v in small["table"].items()}
    Path(files["classes"]).write_text(json.dumps(small))
    with pytest.raises(InputError, match="'classes.json' defines 1 classes"):
        build_workload(scenario, cluster, 0, paths)


def test_a_classes_file_name_must_be_plain():
    with pytest.raises(Exception, match="plain file name"):
        validate_scenario(
            {
                "cluster": {"preset": "google-2011"},
                "workload": {"file": "t.csv", "classes": "../x.json"},
                "schedulers": ["greedy"],
                "seeds": [0],
            }
        )
