"""Request parsing and pagination that no input can turn into a server error.

- JSON bodies are parsed without recursion limits reaching the user: nesting
  deeper than ``SIMCORE_MAX_JSON_DEPTH`` (default 64) or a NUL character in a
  key or string is a 400 naming the path (:func:`simcore.sources.check_tree`),
  the same rule as for uploaded files.
- Page sizes are capped at :data:`MAX_LIMIT` and offsets at :data:`MAX_OFFSET`,
  so no value reaches PostgreSQL's bigint ``LIMIT``/``OFFSET`` out of range.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from simcore.core.errors import InputError
from simcore.sources import check_tree

#: Largest page the list operations return; a larger ``limit`` is served as this.
MAX_LIMIT = 1000
#: Largest ``offset`` accepted (far beyond any list; bigint-safe).
MAX_OFFSET = 10**12


class BoundedJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # The parser recursed past Python's stack limit (e.g. 100,000 nested lists).
            raise ParseError("JSON nested too deeply") from None
        try:
            check_tree(data)
        except InputError as e:
            raise ParseError(e.reason) from None
        return data


class BoundedPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request: Request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise ValidationError({"offset": [f"must be at most {MAX_OFFSET}"]})
        return offset
