"""The few precise exception types that `simcore` raises.

Every error a user can cause (a bad argument, a malformed file, an unknown
name) is a :class:`SimcoreError`; the command line turns it into a one-line
message and exit status 2, the dashboard into a message next to the field.
Anything else escaping `simcore` is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable


class SimcoreError(Exception):
    """Base class of every error caused by input rather than by a bug."""


class InputError(SimcoreError):
    """Malformed input data: names the file, line and column where known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.reason = message
        where = []
        if file is not None:
            where.append(str(file))
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class UnknownNameError(SimcoreError):
    """An unknown preset or scheduler name; the message lists the valid ones."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = sorted(valid)
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(self.valid)}")


class ParameterError(SimcoreError):
    """A parameter value out of range or of the wrong type."""


class SchedulingError(Exception):
    """A scheduler asked the engine for something the rules forbid.

    This is a bug in the scheduler, not a user error, so it does not derive
    from :class:`SimcoreError`.
    """


class Cancelled(SimcoreError):
    """Raised from a progress callback to stop a simulation early."""
