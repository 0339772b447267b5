"""JSON documents as pydantic models: the project's wording, the JSON path of the value, never pydantic's text."""

from __future__ import annotations

import copy
import json
import re
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, model_validator

from simcore.clusterfile import cluster_from_dict
from simcore.core.errors import InputError, ParameterError, SimcoreError
from simcore.documents import Document, Problem, fail, json_path, parse, says
from simcore.profiles.table import parse_profile
from simcore.scenario import validate_scenario
from simcore.workloads.classfile import class_table_from_dict

CLUSTER: dict[str, Any] = {
    "name": "two-kinds",
    "resources": ["cpu", "mem"],
    "configurations": [
        {"name": "big", "count": 10, "capacity": {"cpu": 1.0, "mem": 1.0}},
        {"name": "small", "count": 40, "capacity": {"cpu": 0.5, "mem": 0.25}, "attributes": {"rack": "B"}},
        {"name": "odd", "count": 2, "capacity": {"cpu": 0.25, "mem": 0.75}},
    ],
}


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        ((), ""),
        (("name",), "name"),
        (("configurations", 3, "capacity", "mem"), "configurations[3].capacity.mem"),
        (("table", "requests", 0, 1), "table.requests[0][1]"),
        ((2, "x"), "[2].x"),
    ],
)
def test_it_writes_a_location_as_a_json_path(loc: tuple[str | int, ...], path: str) -> None:
    assert json_path(loc) == path


class _Item(Document):
    NOT_OBJECT = "{path} must be an object"
    MISSING = "{parent} has no {key!r}"

    size: Annotated[int, Field(ge=1), says("{path} must be a positive integer, got {got}")]


class _Box(Document):
    UNKNOWN = "{key!r} is not a key of a box; allowed: {allowed}"

    items: list[_Item]
    label: str = ""


def _problem(data: Any) -> Problem:
    with pytest.raises(ValueError) as e:
        parse(_Box, data, lambda p: ValueError(p))
    return e.value.args[0]  # type: ignore[no-any-return]


def test_a_value_error_names_its_path_and_the_value() -> None:
    assert _problem({"items": [{"size": 1}, {"size": 0}]}) == Problem(
        "items[1].size", "items[1].size must be a positive integer, got 0"
    )


def test_a_missing_key_is_named_under_its_object() -> None:
    assert _problem({"items": [{}]}) == Problem("items[0].size", "items[0] has no 'size'")


def test_an_unknown_key_lists_the_allowed_ones() -> None:
    assert _problem({"items": [], "colour": 1}).message == "'colour' is not a key of a box; allowed: items, label"


def test_a_non_object_uses_the_models_wording() -> None:
    assert _problem({"items": [3]}).message == "items[0] must be an object"


def test_a_check_without_wording_falls_back_to_pydantics() -> None:
    # The fallback exists for a field a model forgot to word; it still names the path.
    assert _problem({"items": [], "label": 3}) == Problem("label", "Input should be a valid string")


def test_a_placeholder_in_the_users_value_is_not_filled_in() -> None:
    assert _problem({"items": [{"size": "{path}"}]}).message == "items[0].size must be a positive integer, got '{path}'"


@pytest.mark.parametrize("name", ["{path}", "{got}", "{key!r}"])
def test_a_users_name_that_looks_like_a_placeholder_is_shown_as_written(name: str) -> None:
    doc = _replaced(CLUSTER, ("resources",), ["cpu", name, name])
    with pytest.raises(InputError) as e:
        cluster_from_dict(doc, label="c.json")
    assert e.value.reason == f"resources[2]: resource {name!r} is listed twice"


def test_fail_can_name_a_place_below_the_value() -> None:
    class Pair(Document):
        a: int
        b: int

        @model_validator(mode="after")
        def _differ(self) -> Pair:
            if self.a == self.b:
                raise fail("{path}: equal to a", at=("b",))
            return self

    with pytest.raises(ValueError) as e:
        parse(Pair, {"a": 1, "b": 1}, lambda p: ValueError(p.message))
    assert str(e.value) == "b: equal to a"


# -- every reader keeps its own wording wherever the bad value is ------------------------------------------------

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**8), 10**8),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text("abc", max_size=3), st.integers(), max_size=2),
)


def _paths(node: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _replaced(doc: dict[str, Any], loc: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    node: Any = doc
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return doc


@settings(max_examples=300, deadline=None)
@given(loc=st.sampled_from(_paths(CLUSTER)), value=ODD_VALUES)
def test_a_cluster_with_any_value_anywhere_is_built_or_refused_at_a_path(
    loc: tuple[str | int, ...], value: Any
) -> None:
    doc = _replaced(CLUSTER, loc, value)
    try:
        cluster = cluster_from_dict(doc, label="c.json")
    except InputError as e:
        assert e.file == "c.json"
        assert "Input should" not in e.reason  # pydantic's wording never reaches a user
        assert re.match(r"(name|description|resources|configurations)(\[\d+\]|\.[a-z_]*)*: ", e.reason), e.reason
    else:
        assert cluster.to_dict()["resources"] == doc["resources"]


SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 0.5,
    "schedulers": ["greedy", "fcfs"],
    "scheduler_params": {"fcfs": {}},
    "seeds": [1, 2],
}


@settings(max_examples=200, deadline=None)
@given(loc=st.sampled_from(_paths(SCENARIO)), value=ODD_VALUES)
def test_a_scenario_with_any_value_anywhere_is_normalised_or_refused_in_words(
    loc: tuple[str | int, ...], value: Any
) -> None:
    try:
        validate_scenario(_replaced(SCENARIO, loc, value))
    except SimcoreError as e:  # a bad part, an unknown preset or scheduler, a preset's own bound
        assert "Input should" not in str(e)


@pytest.mark.parametrize("value", [5, [1], "x", True])
def test_a_schedulers_parameters_must_be_an_object(value: Any) -> None:
    # These used to escape as a TypeError from dict(); the path is new.
    with pytest.raises(ParameterError, match=r"^scenario scheduler_params\.fcfs must be an object$"):
        validate_scenario({**SCENARIO, "scheduler_params": {"fcfs": value}})


TABLE: dict[str, Any] = {
    "resources": ["cpu", "mem"],
    "table": {
        "names": ["k1", "k2"],
        "requests": [[0.1, 0.2], [0.5, 0.4]],
        "rates": [[0.01], [0.002]],
        "proportions": [0.75, 0.25],
    },
}


@pytest.mark.parametrize(
    ("loc", "value", "words"),
    [
        (("table", "requests", 1, 0), "x", "as numbers (table.requests[1][0] is 'x')"),
        (("table", "rates", 0), 0.01, "as numbers (table.rates[0] is 0.01)"),
        (("table", "proportions"), None, "as numbers (table.proportions is None)"),
        (("table", "requests", 1), [0.5], "the rows of requests differ in length"),
    ],
)
def test_a_class_table_names_the_bad_number(loc: tuple[str | int, ...], value: Any, words: str) -> None:
    with pytest.raises(InputError) as e:
        class_table_from_dict(_replaced(TABLE, loc, value), ("cpu", "mem"), 2)
    assert e.value.column == "table" and e.value.reason.endswith(words)


def test_a_class_table_missing_a_part_says_which() -> None:
    doc = copy.deepcopy(TABLE)
    del doc["table"]["rates"]
    with pytest.raises(InputError, match=r"as numbers \(table\.rates is missing\)"):
        class_table_from_dict(doc, ("cpu", "mem"), 2)


def test_numbers_written_as_text_are_still_read_as_before() -> None:
    # np.asarray read these tables before the schema did, and it accepted "0.1".
    doc = _replaced(TABLE, ("table", "requests", 0, 0), "0.1")
    assert class_table_from_dict(doc, ("cpu", "mem"), 2).requests[0, 0] == 0.1


def test_a_deep_cluster_is_refused_before_the_schema_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_JSON_DEPTH", "8")
    deep: Any = 1
    for _ in range(20):
        deep = {"x": deep}
    doc = _replaced(CLUSTER, ("configurations", 0, "attributes"), deep)
    with pytest.raises(InputError, match="nested deeper than 8 levels"):
        cluster_from_dict(json.loads(json.dumps(doc)), label="c.json")


@pytest.mark.parametrize("depth", [30, 100_000])
def test_a_deep_profile_table_is_refused_with_a_message(monkeypatch: pytest.MonkeyPatch, depth: int) -> None:
    monkeypatch.setenv("SIMCORE_MAX_JSON_DEPTH", "20")
    text = '{"runtimes": [], "notes": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(InputError, match="(nested deeper than 20 levels|nested too deeply)"):
        parse_profile(text, name="deep.json")


def test_a_null_preset_parameter_means_its_default() -> None:
    # It used to reach the preset as None and fail there with a TypeError.
    cluster = {"preset": "google-balanced", "params": {"machines_per_config": None}}
    sc = validate_scenario({**SCENARIO, "cluster": cluster})
    assert sc["cluster"]["params"] == {"machines_per_config": 1000}


def test_a_preset_cluster_beyond_int64_is_refused_by_the_machine_limit() -> None:
    # 1e19 machines per configuration overflowed int64 before the limit was checked.
    cluster = {"preset": "google-balanced", "params": {"machines_per_config": 1e19}}
    with pytest.raises(InputError, match="exceeds the limit of"):
        validate_scenario({**SCENARIO, "cluster": cluster})
