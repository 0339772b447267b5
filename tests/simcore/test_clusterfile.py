"""The JSON cluster format: round trips and errors that name the file and the JSON path."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simcore import api
from simcore.clusterfile import read_cluster, write_cluster
from simcore.core.errors import InputError
from simcore.presets import CLUSTERS

GOOD: dict[str, Any] = {
    "name": "two-kinds",
    "resources": ["cpu", "mem"],
    "configurations": [
        {"name": "big", "count": 10, "capacity": {"cpu": 1.0, "mem": 1.0}},
        {"name": "small", "count": 40, "capacity": {"cpu": 0.5, "mem": 0.25}, "attributes": {"rack": "B"}},
        {"name": "spare", "count": 0, "capacity": {"cpu": 0.5, "mem": 0.5}},
        {"name": "odd", "count": 2, "capacity": {"cpu": 0.25, "mem": 0.75}},
    ],
}


def dump(tmp_path: Path, doc: Any, name: str = "c.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def error(tmp_path: Path, doc: Any) -> InputError:
    p = dump(tmp_path, doc)
    with pytest.raises(InputError) as e:
        read_cluster(p)
    assert e.value.file == str(p)
    return e.value


def test_it_reads_a_cluster(tmp_path: Path) -> None:
    c = read_cluster(dump(tmp_path, GOOD))
    assert c.name == "two-kinds" and c.resources == ("cpu", "mem")
    assert c.config_names == ("big", "small", "spare", "odd")
    assert c.counts.tolist() == [10, 40, 0, 2]
    assert c.capacity.tolist() == [[1.0, 1.0], [0.5, 0.25], [0.5, 0.5], [0.25, 0.75]]
    assert c.attributes[1] == {"rack": "B"}
    assert c.to_dict() == GOOD


@pytest.mark.parametrize("preset,params", [("google-2011", {}), ("google-balanced", {"machines_per_config": 7})])
def test_presets_round_trip(tmp_path: Path, preset: str, params: dict[str, Any]) -> None:
    c = CLUSTERS.get(preset).build(**params)
    write_cluster(c, tmp_path / "c.json")
    back = read_cluster(tmp_path / "c.json")
    assert back.to_dict() == c.to_dict()
    assert back.description == c.description
    assert np.array_equal(back.capacity, c.capacity)


def test_streams_text_and_bytes(tmp_path: Path) -> None:
    c = read_cluster(dump(tmp_path, GOOD))
    text, raw = io.StringIO(), io.BytesIO()
    write_cluster(c, text)
    write_cluster(c, raw)
    assert read_cluster(io.StringIO(text.getvalue())).to_dict() == GOOD
    assert read_cluster(io.BytesIO(raw.getvalue())).to_dict() == GOOD


def test_the_name_defaults_to_the_file_name(tmp_path: Path) -> None:
    doc = {k: v for k, v in GOOD.items() if k != "name"}
    assert read_cluster(dump(tmp_path, doc, "lab.json")).name == "lab"


def test_api_resolves_a_cluster_file(tmp_path: Path) -> None:
    assert api.resolve_cluster(str(dump(tmp_path, GOOD))).n_machines == 52


def mutate(path: str, value: Any = None, delete: bool = False) -> dict[str, Any]:
    """GOOD with the value at ``path`` (dotted, with [i]) replaced or deleted."""
    doc = copy.deepcopy(GOOD)
    parts: list[Any] = []
    for p in path.split("."):
        if "[" in p:
            key, idx = p[:-1].split("[")
            parts += [key, int(idx)]
        else:
            parts.append(p)
    node: Any = doc
    for p in parts[:-1]:
        node = node[p]
    if delete:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path,value,words",
    [
        ("configurations[3].capacity.mem", -1, "non-negative number"),
        ("configurations[3].capacity.mem", "big", "non-negative number"),
        ("configurations[3].capacity.mem", True, "non-negative number"),
        ("configurations[1].count", -3, "non-negative integer"),
        ("configurations[1].count", 2.5, "non-negative integer"),
        ("configurations[1].count", "40", "non-negative integer"),
        ("configurations[2].name", "big", "used twice"),
        ("configurations[2].name", "", "non-empty string"),
        ("configurations[0].capacity", [1, 1], "must be an object"),
        ("configurations[0].attributes", "x", "must be an object"),
        ("configurations[1]", 5, "must be an object"),
        ("resources[1]", "cpu", "listed twice"),
        ("resources[1]", 3, "non-empty string"),
        ("resources", [], "non-empty list"),
        ("configurations", [], "non-empty list"),
        ("name", 12, "non-empty string"),
    ],
)
def test_bad_values_name_the_json_path(tmp_path: Path, path: str, value: Any, words: str) -> None:
    e = error(tmp_path, mutate(path, value))
    assert e.reason.startswith(path + ":")
    assert words in e.reason


@pytest.mark.parametrize(
    "path",
    [
        "configurations[3].capacity.mem",
        "configurations[0].count",
        "configurations[1].name",
        "resources",
        "configurations",
    ],
)
def test_missing_keys_name_the_json_path(tmp_path: Path, path: str) -> None:
    e = error(tmp_path, mutate(path, delete=True))
    assert e.reason.startswith(path + ":") and "missing" in e.reason


def test_unknown_keys_are_rejected(tmp_path: Path) -> None:
    e = error(tmp_path, mutate("configurations[2].capacity.disk", 1.0))
    assert e.reason.startswith("configurations[2].capacity.disk:") and "not one of the resources" in e.reason
    e = error(tmp_path, mutate("configurations[0].capacities", {}))
    assert e.reason.startswith("configurations[0].capacities:") and "unknown key" in e.reason
    e = error(tmp_path, mutate("machines", 3))
    assert e.reason.startswith("machines:")


def test_all_counts_zero(tmp_path: Path) -> None:
    doc = copy.deepcopy(GOOD)
    for cfg in doc["configurations"]:
        cfg["count"] = 0
    assert "at least one machine" in error(tmp_path, doc).reason


def test_json_syntax_errors_name_the_line(tmp_path: Path) -> None:
    e = error(tmp_path, '{\n  "name": "x",\n  "resources": ["cpu",]\n}')
    assert e.line == 3 and "invalid JSON" in e.reason


def test_nan_and_infinity_are_rejected(tmp_path: Path) -> None:
    text = json.dumps(GOOD).replace('"mem": 0.75', '"mem": NaN')
    assert "NaN" in error(tmp_path, text).reason


def test_not_an_object(tmp_path: Path) -> None:
    assert "JSON object" in error(tmp_path, [1, 2]).reason


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot open"):
        read_cluster(tmp_path / "nope.json")
