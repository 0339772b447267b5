"""Reading a user's file: one naming rule for error messages and one JSON reader.

Readers accept a path or an open file (an upload in the dashboard), and every
error names the file, so both live here rather than in each format's module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import IO, Any

from simcore.core.errors import InputError
from simcore.core.limits import max_json_depth


def looks_like_file(name: str) -> bool:
    """Whether a cluster or workload ``name`` is a file rather than a preset: a path, a known suffix, or it exists."""
    return os.sep in name or "/" in name or name.endswith((".json", ".csv", ".gz", ".swf")) or os.path.exists(name)


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
    except RecursionError:
        raise InputError(f"JSON nested too deeply (the limit is {max_json_depth()} levels)", file=label) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})", file=label, line=e.lineno
        ) from None
    except ValueError as e:  # from reject
        raise InputError(str(e), file=label) from None
    check_tree(data, label)
    return data, label


def check_tree(data: Any, label: str | None = None) -> None:
    """Refuse JSON deeper than ``SIMCORE_MAX_JSON_DEPTH`` or holding a NUL character in any key or string.

    Iterative, so a document nested 100,000 deep is refused instead of overflowing the stack;
    NUL is refused because PostgreSQL cannot store it in text or JSON, and no name needs it.
    The message names the path of the offending value (``configurations[0].attributes``).
    """
    limit = max_json_depth()
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict):
            items: Iterable[tuple[str, Any]] = value.items()
            for k, v in items:
                key_path = f"{path}.{k}" if path else str(k)
                if isinstance(k, str) and "\x00" in k:
                    raise InputError(f"{path or 'a key'}: a key contains a NUL character", file=label)
                if isinstance(v, (dict, list)):
                    if depth >= limit:
                        raise InputError(f"{key_path}: nested deeper than {limit} levels", file=label)
                    stack.append((v, key_path, depth + 1))
                elif isinstance(v, str) and "\x00" in v:
                    raise InputError(f"{key_path}: contains a NUL character", file=label)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                item_path = f"{path}[{i}]"
                if isinstance(v, (dict, list)):
                    if depth >= limit:
                        raise InputError(f"{item_path}: nested deeper than {limit} levels", file=label)
                    stack.append((v, item_path, depth + 1))
                elif isinstance(v, str) and "\x00" in v:
                    raise InputError(f"{item_path}: contains a NUL character", file=label)
        elif isinstance(value, str) and "\x00" in value:
            raise InputError(f"{path or 'the document'}: contains a NUL character", file=label)
