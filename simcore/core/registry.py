"""A small name -> factory registry, shared by schedulers and presets.

Modules register themselves with a decorator; the registry imports every
module of its package on first use, so adding a scheduler or a preset means
adding one module and nothing else: it then appears in the CLI, the forms
and the API by itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Generic, TypeVar

from simcore.core.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self._package = package
        self._items: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        pkg = importlib.import_module(self._package)
        for info in pkgutil.iter_modules(pkg.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{self._package}.{info.name}")

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._items) from None

    def names(self) -> list[str]:
        self._load()
        return list(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return list(self._items.items())

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items
