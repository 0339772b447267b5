"""URL converters.

``<id:pk>`` is Django's ``<int:pk>`` bounded to 18 digits: a larger number
cannot be a row id (PostgreSQL's bigint stops at 19 digits, SQLite's integer
too), and passing it to a lookup used to end in an overflow inside the
database driver (a 500). Such an address is simply not found (404).
"""

from __future__ import annotations

from django.urls import register_converter


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
