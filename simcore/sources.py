"""Reading a user's file: one naming rule for error messages and one JSON reader.

Readers accept a path or an open file (an upload in the dashboard), and every
error names the file, so both live here rather than in each format's module.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

from simcore.errors import InputError


def source_label(source: Any) -> str:
    """How error messages name ``source``: its path, its ``name`` attribute, or ``<stream>``."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", None) or "<stream>")


def read_json(source: str | os.PathLike[str] | IO[Any], what: str) -> tuple[Any, str]:
    """Parse the JSON in ``source`` (path or open file, text or bytes); returns ``(data, label)``.

    ``what`` names the kind of file in messages ("a JSON cluster file"). NaN and
    Infinity are refused: every number in these files must be finite.
    """
    label = source_label(source)
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                raw = f.read()
        else:
            raw = source.read()
    except OSError as e:
        raise InputError(f"cannot open: {e.strerror or e}", file=label) from None
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"not UTF-8 text (is this {what}?)", file=label) from None
    else:
        text = raw

    def reject(token: str) -> Any:
        raise ValueError(f"{token} is not allowed in {what} (numbers must be finite)")

    try:
        data = json.loads(text, parse_constant=reject)
    except json.JSONDecodeError as e:
        raise InputError(
            f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})", file=label, line=e.lineno
        ) from None
    except ValueError as e:  # from reject
        raise InputError(str(e), file=label) from None
    return data, label
