"""URL converters.

``<id:pk>`` is Django's ``<int:pk>`` bounded to 18 digits: a larger number
cannot be a row id (PostgreSQL's bigint stops at 19 digits, SQLite's integer
too), and passing it to a lookup used to end in an overflow inside the
database driver (a 500). Such an address is simply not found (404).
"""

from __future__ import annotations

from django.urls import register_converter

#: The most digits a row id may have (see above); query parameters that name a row use the same bound.
MAX_ID_DIGITS = 18


def row_id(text: str) -> int | None:
    """``text`` as a row id, or None when it cannot be one (not digits, or too long for the database)."""
    return int(text) if text.isdigit() and len(text) <= MAX_ID_DIGITS else None


class IdConverter:
    regex = f"[0-9]{{1,{MAX_ID_DIGITS}}}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
