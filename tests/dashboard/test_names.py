"""Names people give things refuse invisible and direction-changing characters (issue 25, item 10).

"ab" + U+202E + "cd" displays as "abdc": a name holding such a character can pass for another. One
validator (dashboard.common.names.validate_name) is on every model, form and API field that takes a name;
the last tests find every such form and serializer field, so a new one without it fails here.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest
from django import forms
from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework import serializers

import dashboard
from dashboard.common.names import validate_name
from dashboard.models import ApiToken, Experiment, Team
from dashboard.traces.models import TraceMapping
from tests.dashboard.conftest import GOOD, small_scenario

RLO = "ab\u202ecd"  # U+202E at position 3
RLO_ERROR = (
    "contains an invisible or direction-changing character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 3; remove it"
)


def _api(user: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(user, 't')[1]}")


def _post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


# ---------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(
    ("char", "described"),
    [
        ("\u202a", "U+202A LEFT-TO-RIGHT EMBEDDING"),
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("\u2069", "U+2069 POP DIRECTIONAL ISOLATE"),
        ("\u200b", "U+200B ZERO WIDTH SPACE"),
        ("\u200f", "U+200F RIGHT-TO-LEFT MARK"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("\u00ad", "U+00AD SOFT HYPHEN"),
        ("\t", "U+0009"),
        ("\u2028", "U+2028 LINE SEPARATOR"),
    ],
)
def test_each_hidden_character_is_refused_naming_its_code_point_and_position(char: str, described: str) -> None:
    with pytest.raises(ValidationError) as e:
        validate_name(f"run{char}1")
    assert e.value.messages == [
        f"contains an invisible or direction-changing character ({described}) at position 4; remove it"
    ]


@pytest.mark.parametrize("name", ["baseline 0.9", "Müller's runs", "実験 1", "שלום עולם", "مرحبا", "load 🚀", ""])
def test_visible_names_in_any_script_are_accepted(name: str) -> None:
    validate_name(name)


# ---------------------------------------------------------------------------- experiments


def test_the_api_refuses_an_experiment_name_with_a_direction_override(owner: Any) -> None:
    resp = _post(_api(owner), "/api/experiments/", {"name": RLO, "scenario": small_scenario()})
    assert resp.status_code == 400 and resp.json() == {"name": [RLO_ERROR]}
    assert not Experiment.objects.exists()


def test_the_api_refuses_renaming_an_experiment_to_such_a_name(owner: Any) -> None:
    api = _api(owner)
    made = _post(api, "/api/experiments/", {"name": "plain", "scenario": small_scenario()}).json()
    resp = api.patch(f"/api/experiments/{made['id']}/", json.dumps({"name": RLO}), content_type="application/json")
    assert resp.status_code == 400 and resp.json() == {"name": [RLO_ERROR]}
    assert Experiment.objects.get(pk=made["id"]).name == "plain"


def test_the_form_refuses_an_experiment_name_with_a_direction_override(owner_client: Any) -> None:
    resp = owner_client.post(reverse("experiment-new"), {**GOOD, "name": RLO})
    assert resp.status_code == 400 and resp.context["form"].errors["name"] == [RLO_ERROR]
    assert not Experiment.objects.exists()


# ---------------------------------------------------------------------------- saved maps

MAP = "submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem"


def test_the_api_refuses_a_saved_map_name_with_a_direction_override(owner: Any) -> None:
    resp = _post(_api(owner), "/api/trace-mappings/", {"name": RLO, "map": MAP})
    assert resp.status_code == 400 and resp.json() == {"name": [RLO_ERROR]}
    assert not TraceMapping.objects.exists()


def test_the_map_page_refuses_saving_a_map_under_such_a_name(owner_client: Any) -> None:
    csv = b"start_time,end_time,plan_cpu,plan_mem\n100,160,100,0.39\n"
    owner_client.post("/uploads/trace/map/", {"name": "ali", "file": SimpleUploadedFile("b.csv", csv)})
    resp = owner_client.post("/uploads/trace/map/", {"column_map": MAP, "save_as": RLO, "action": "import"})
    assert resp.status_code == 400 and resp.context["form"].errors["save_as"] == [RLO_ERROR]
    assert not TraceMapping.objects.exists()


def test_the_team_page_refuses_a_team_name_with_a_zero_width_space(owner_client: Any) -> None:
    resp = owner_client.post(reverse("team-list"), {"name": "lab\u200b"})
    assert resp.status_code == 400
    assert not Team.objects.exists()


# ---------------------------------------------------------------------------- every model, form and serializer

#: Every model with a name people give it (admin forms and full_clean apply the models' validators).
MODELS = sorted(
    m._meta.label
    for m in apps.get_app_config("dashboard").get_models()
    if any(f.name == "name" for f in m._meta.fields)
)


def test_the_named_models_are_the_ones_people_name() -> None:
    assert MODELS == [
        "dashboard.ApiToken",
        "dashboard.CapacityPlan",
        "dashboard.ClusterUpload",
        "dashboard.Experiment",
        "dashboard.PackingAnalysis",
        "dashboard.Search",
        "dashboard.Team",
        "dashboard.TraceDraft",
        "dashboard.TraceMapping",
        "dashboard.TraceUpload",
    ]


@pytest.mark.parametrize("label", MODELS)
def test_every_model_name_field_carries_the_validator(label: str) -> None:
    assert validate_name in apps.get_model(label)._meta.get_field("name").validators


#: Field names that hold a user-given name (a map's name is asked for as "save_as").
NAME_FIELDS = ("name", "save_as")
#: What the discovery below must find at least (it finds new ones by itself).
EXPECTED = {
    "dashboard.experiments.forms.ExperimentForm.name",
    "dashboard.searches.forms.SearchForm.name",
    "dashboard.packing.forms.PackingForm.name",
    "dashboard.traces.forms.UploadForm.name",
    "dashboard.traces.forms.TraceUploadForm.name",
    "dashboard.accounts.forms.TeamForm.name",
    "dashboard.accounts.forms.TokenForm.name",
    "dashboard.traces.mapping_forms.DraftForm.name",
    "dashboard.traces.mapping_forms.MapForm.save_as",
    "dashboard.api.serializers.ExperimentCreateSerializer.name",
    "dashboard.api.serializers.ExperimentUpdateSerializer.name",
    "dashboard.api.serializers.ForkSerializer.name",
    "dashboard.api.serializers.ReproductionStartSerializer.name",
    "dashboard.api.serializers.UploadCreateSerializer.name",
    "dashboard.api.mappings.MappingCreateSerializer.name",
    "dashboard.api.packing.PackingCreateSerializer.name",
    "dashboard.api.search_serializers.SearchCreateSerializer.name",
    "dashboard.api.search_serializers.SearchForkSerializer.name",
    "dashboard.capacity.forms.CapacityForm.name",
    "dashboard.api.capacity_serializers.PlanCreateSerializer.name",
    "dashboard.api.capacity_serializers.PlanForkSerializer.name",
}


def _modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(dashboard.__path__, "dashboard."):
        if ".migrations" in info.name or ".management" in info.name or info.name.endswith((".wsgi", ".celery")):
            continue
        yield importlib.import_module(info.name)


def _name_fields() -> dict[str, Any]:
    """Every writable name field of a form or serializer class defined in dashboard, by dotted path."""
    found: dict[str, Any] = {}
    for module in _modules():
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if not cls.__module__.startswith("dashboard") or cls.__module__ != module.__name__:
                continue
            if issubclass(cls, forms.BaseForm):
                fields = cls.base_fields
            elif issubclass(cls, serializers.ModelSerializer) and not hasattr(cls, "Meta"):
                continue  # a base of model serializers (dashboard.api.serializers.SharedRowSerializer): no model
            elif issubclass(cls, serializers.Serializer) and not inspect.isabstract(cls):
                fields = cls().fields
            else:
                continue
            for f in NAME_FIELDS:
                field = fields.get(f)
                if field is not None and not getattr(field, "read_only", False):
                    found[f"{cls.__module__}.{cls_name}.{f}"] = field
    return found


FIELDS = _name_fields()


def test_the_discovery_finds_every_known_name_field() -> None:
    assert set(FIELDS) >= EXPECTED, sorted(EXPECTED - set(FIELDS))


@pytest.mark.parametrize("path", sorted(FIELDS))
def test_every_name_field_refuses_a_direction_override(path: str) -> None:
    field = FIELDS[path]
    assert validate_name in field.validators
    if isinstance(field, forms.Field):
        with pytest.raises(ValidationError) as e:
            field.clean(RLO)
        assert e.value.messages == [RLO_ERROR]
    else:
        with pytest.raises(serializers.ValidationError) as e:
            field.run_validation(RLO)
        assert [str(m) for m in e.value.detail] == [RLO_ERROR]
