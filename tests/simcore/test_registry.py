from __future__ import annotations

import pytest

from simcore.core.errors import ParameterError, UnknownNameError
from simcore.core.registry import Registry
from simcore.presets import coerce_params
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param


def test_an_unknown_name_lists_the_valid_ones() -> None:
    reg: Registry[int] = Registry("widget", "simcore.schedulers")
    reg.register("b")(2)
    reg.register("a")(1)
    with pytest.raises(UnknownNameError) as e:
        reg.get("zzz")
    assert "unknown widget 'zzz'" in str(e.value)
    assert "valid widgets: a, b" in str(e.value)


def test_registering_a_different_object_under_a_taken_name_fails() -> None:
    reg: Registry[int] = Registry("widget", "simcore.schedulers")
    reg.register("a")(1)
    with pytest.raises(ValueError):
        reg.register("a")(2)


def test_every_registered_scheduler_has_a_name_and_description() -> None:
    for name, cls in SCHEDULERS.items():
        assert cls.name in ("", name) or cls.name == name
        assert cls.description, f"{name} has no description"


def test_parameters_are_coerced_bounded_and_named_in_errors() -> None:
    params = (Param("phi", float, 0.009, "spread", min=0, max=0.025), Param("n", int, 3, "count", min=1))
    assert coerce_params("workload 'x'", params, {"phi": "0.01"}) == {"phi": 0.01, "n": 3}
    with pytest.raises(ParameterError, match="'phi' must be at most 0.025"):
        coerce_params("workload 'x'", params, {"phi": 0.5})
    with pytest.raises(ParameterError, match="'n' must be int"):
        coerce_params("workload 'x'", params, {"n": "many"})
    with pytest.raises(ParameterError, match="no parameter 'omega'; valid parameters: n, phi"):
        coerce_params("workload 'x'", params, {"omega": 1})
