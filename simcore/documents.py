"""JSON documents as pydantic models whose errors keep the project's wording and name the JSON path.

The cluster, scenario, class-table, profile-table and sweep-grid documents
are :class:`Document` models: pydantic checks their shape (types, required
and unknown keys, ranges), and the readers only build objects from a
validated model. pydantic's own messages ("Input should be a valid
integer") would change what users and tests have read for years, so every
model carries the project's wording:

* :func:`says` on a field replaces pydantic's message about that value;
* :func:`fail` raises a message from a validator, optionally ``at`` a place
  below the validated value (``at=("name",)``), for checks that compare
  fields (a configuration name used twice);
* a model's ``NOT_OBJECT``, ``UNKNOWN`` and ``MISSING`` say what is wrong
  with the object itself, an unknown key and a missing required key.

A message is a template: ``{path}`` is the value's JSON path
(``configurations[3].capacity.mem``), ``{parent}`` the path of the object
holding it, ``{key}`` (or ``{key!r}``) its own key and ``{got}`` the repr of
the value; :func:`fail` may name more values (``{name!r}``). What a user
wrote always goes in through a placeholder, never into the template, so a
name such as ``"{path}"`` is shown as written.

:func:`problem` turns a :class:`pydantic.ValidationError` into the first
problem's path and message; each reader raises its own error type with them
(:class:`~simcore.core.errors.InputError` naming the file,
:class:`~simcore.core.errors.ParameterError` for a scenario).

Pure library code: no Django here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, NamedTuple, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

#: The error type of a message written by this project (anything else is pydantic's own).
KIND = "simcore"

Loc = tuple[str | int, ...]
D = TypeVar("D", bound="Document")

_NO_VALUE = object()
_PLACEHOLDER = re.compile(r"\{(\w+)(!r)?\}")


class Problem(NamedTuple):
    """The first thing wrong with a document: where (a JSON path, ``""`` for the top) and what."""

    path: str
    message: str


def json_path(loc: Iterable[str | int]) -> str:
    """``("configurations", 3, "capacity", "mem")`` -> ``"configurations[3].capacity.mem"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def fail(template: str, *, at: Loc = (), got: Any = _NO_VALUE, **values: Any) -> PydanticCustomError:
    """An error with the project's wording, ``at`` a place below the value being validated.

    ``got`` is the value ``{got}`` shows when it is not the validated one (a value found ``at`` a sub-path);
    ``values`` fill the template's other placeholders (``{name}``, or ``{name!r}`` for the repr).
    """
    ctx: dict[str, Any] = {"template": template, "at": at, "values": values}
    if got is not _NO_VALUE:
        ctx["got"] = got
    # The template goes in the context, not as pydantic's own message template, so that braces in it are
    # left alone until problem() fills in the path.
    return PydanticCustomError(KIND, "{template}", ctx)


def says(template: str) -> WrapValidator:
    """Annotation: any error pydantic finds in this value itself is reported as ``template``.

    Errors of values inside it (a list's items, an object's keys) and messages the project wrote keep their
    own wording, so a container's message never hides a precise one below it.
    """

    def wrap(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError as e:
            if any(err["type"] != KIND and not err["loc"] for err in e.errors()):
                raise fail(template) from None
            raise

    return WrapValidator(wrap)


def problem(error: ValidationError) -> Problem:
    """The first error of ``error`` as the project's (path, message)."""
    err = error.errors(include_url=False)[0]
    ctx = err.get("ctx") or {}
    loc: Loc = tuple(err["loc"]) + tuple(ctx.get("at", ()))
    if err["type"] == KIND:
        template = str(ctx["template"])
    else:  # pydantic's wording: only for checks a model left without a message of its own
        template = {"missing": "missing", "extra_forbidden": "unknown key"}.get(err["type"], err["msg"])
    values: dict[str, Any] = {
        "path": json_path(loc),
        "parent": json_path(loc[:-1]),
        "key": loc[-1] if loc else "",
        **ctx.get("values", {}),
    }
    got = ctx.get("got", err.get("input"))

    def fill(m: re.Match[str]) -> str:
        name, as_repr = m.group(1), m.group(2)
        if name == "got":  # the value as written: always its repr ("x" and "3" differ from x and 3)
            return repr(got)
        if name not in values:  # literal braces, e.g. "{'name': ..., 'values': [...]}"
            return m.group(0)
        return repr(values[name]) if as_repr else str(values[name])

    # One pass over the template only, so a "{path}" inside a user's value is never filled in.
    return Problem(values["path"], _PLACEHOLDER.sub(fill, template))


def parse(model: type[D], data: Any, error: Callable[[Problem], Exception]) -> D:
    """``data`` validated as ``model``; the first problem raised as ``error(problem)``."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise error(problem(e)) from None


class Document(BaseModel):
    """Base of the JSON document models: strict JSON types, unknown keys refused, the project's wording.

    Strict, because JSON has exact types: ``"40"`` is not a count and ``true`` is not a number. A field that
    has always accepted more (the profile table's numbers) says so with a ``BeforeValidator``.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    #: The message when the value is not an object (at the object's path).
    NOT_OBJECT: ClassVar[str] = "must be an object"
    #: The message for a key the model does not have (at the key's path); ``{allowed}`` lists the keys.
    UNKNOWN: ClassVar[str] = "unknown key; allowed keys: {allowed}"
    #: The message for a missing required key (at the key's path), unless MISSING_KEY names one for it.
    MISSING: ClassVar[str] = "missing"
    MISSING_KEY: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def keys(cls) -> list[str]:
        """The JSON keys of the model, in its order."""
        return [f.alias or name for name, f in cls.model_fields.items()]

    @classmethod
    def precheck(cls, data: dict[str, Any]) -> None:
        """A check of the raw object that comes before its keys are (a subclass's hook)."""

    @model_validator(mode="before")
    @classmethod
    def _object_and_keys(cls, data: Any) -> Any:
        # Checked here, before the fields, so that the object's own problems come first and in the order
        # the hand-written readers had: not an object, then an unknown key, then a missing one.
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, dict):
            raise fail(cls.NOT_OBJECT)
        cls.precheck(data)
        keys = cls.keys()
        if cls.model_config.get("extra") == "forbid":
            unknown = sorted(k for k in data if k not in keys)
            if unknown:
                allowed = ", ".join(sorted(keys))
                raise fail(cls.UNKNOWN, at=(unknown[0],), got=data[unknown[0]], allowed=allowed)
        for name, f in cls.model_fields.items():
            key = f.alias or name
            if f.is_required() and key not in data:
                raise fail(cls.MISSING_KEY.get(key, cls.MISSING), at=(key,), got=None)
        return data


def non_blank(text: str) -> str:
    """A string with something besides white space in it."""
    if not text.strip():
        raise ValueError("blank")
    return text


def finite(x: float) -> float:
    """A float that is finite (the JSON readers already refuse NaN; Python callers may not)."""
    if not math.isfinite(x):
        raise ValueError("not finite")
    return x


__all__ = ["KIND", "Document", "Problem", "fail", "finite", "json_path", "non_blank", "parse", "problem", "says"]
