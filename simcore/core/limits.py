"""Bounds on what one input may ask of a machine, as documented settings.

Each bound is read from the environment when it is checked, so the command
line, the web platform and its workers apply the same value (docs/guide/configuration.md,
"Limits"). They protect a shared server from inputs that are valid in form
but would exhaust a worker: a cluster of a billion machines, or JSON nested
deeper than Python's parser can follow.
"""

from __future__ import annotations

import os

from simcore.core.errors import ParameterError

#: Default bound on the total machines of one cluster (preset or upload). A million
#: machines of two resources is about 100 MB of engine state and per-machine queues.
DEFAULT_MAX_MACHINES = 1_000_000

#: Default bound on the nesting depth of any JSON input (files, API bodies).
#: Our formats need at most 5 levels; Python's json parser fails near 1,000.
DEFAULT_MAX_JSON_DEPTH = 64


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ParameterError(f"setting {name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ParameterError(f"setting {name} must be a positive integer, got {raw!r}")
    return value


def max_machines() -> int:
    """``SIMCORE_MAX_MACHINES``: the most machines one cluster may have (default 1,000,000)."""
    return _env_int("SIMCORE_MAX_MACHINES", DEFAULT_MAX_MACHINES)


def max_json_depth() -> int:
    """``SIMCORE_MAX_JSON_DEPTH``: the deepest nesting of lists and objects any JSON input may have (default 64)."""
    return _env_int("SIMCORE_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH)


#: Default bound on the decompressed bytes of one trace file (a month of Google 2011 task
#: events is about 3 GB of text per part set; raise it for larger inputs).
DEFAULT_MAX_TRACE_BYTES = 4 << 30
#: Default bound on how much larger the decompressed data may be than the gzip input. Trace
#: text compresses 5-20x; 1 GB of rows in a 2 MB file (500x) is a decompression bomb.
DEFAULT_MAX_GZIP_RATIO = 200
#: The ratio is judged only once this much has been decompressed (tiny files compress freely).
RATIO_GRACE_BYTES = 64 << 20
#: Default bound on one line of a trace file.
DEFAULT_MAX_LINE_BYTES = 1 << 20


def max_trace_bytes() -> int:
    """``SIMCORE_MAX_TRACE_BYTES``: the most decompressed bytes one trace file may hold (default 4 GiB)."""
    return _env_int("SIMCORE_MAX_TRACE_BYTES", DEFAULT_MAX_TRACE_BYTES)


def max_gzip_ratio() -> int:
    """``SIMCORE_MAX_GZIP_RATIO``: the most decompressed bytes per gzip byte of a trace file (default 200)."""
    return _env_int("SIMCORE_MAX_GZIP_RATIO", DEFAULT_MAX_GZIP_RATIO)


def max_line_bytes() -> int:
    """``SIMCORE_MAX_LINE_BYTES``: the longest line a trace file may have (default 1 MiB)."""
    return _env_int("SIMCORE_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES)


class DecompressionGuard:
    """Counts what a reader decompresses and stops it as soon as a bound is passed.

    ``add(out, consumed)`` after every chunk: ``out`` decompressed bytes, ``consumed``
    the compressed bytes read so far (None for plain text, which has no ratio).
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.total = 0
        self.max_bytes = max_trace_bytes()
        self.ratio = max_gzip_ratio()

    def add(self, out: int, consumed: int | None, line: int) -> None:
        from simcore.core.errors import InputError

        self.total += out
        if self.total > self.max_bytes:
            raise InputError(
                f"more than {self.max_bytes:,} bytes of data by line {line} (setting SIMCORE_MAX_TRACE_BYTES); "
                "reading stopped",
                file=self.label,
                line=line,
            )
        if consumed and self.total > RATIO_GRACE_BYTES and self.total > self.ratio * consumed:
            raise InputError(
                f"the gzip data expands more than {self.ratio}x ({self.total:,} bytes from {consumed:,} by line "
                f"{line}): a decompression bomb? (setting SIMCORE_MAX_GZIP_RATIO); reading stopped",
                file=self.label,
                line=line,
            )


def check_line_length(pending: int, label: str, line: int) -> None:
    """Stop a reader holding more than ``SIMCORE_MAX_LINE_BYTES`` of one line without its end."""
    limit = max_line_bytes()
    if pending > limit:
        from simcore.core.errors import InputError

        raise InputError(
            f"line {line} is longer than {limit:,} bytes (setting SIMCORE_MAX_LINE_BYTES): not a text trace?",
            file=label,
            line=line,
        )


#: Default bound on any time or duration in a trace: ten years, in seconds.
DEFAULT_MAX_TRACE_SECONDS = 315_576_000
#: Default bound on any resource request or capacity in a trace (in the trace's own units).
DEFAULT_MAX_REQUEST = 10**12


def max_trace_seconds() -> int:
    """``SIMCORE_MAX_TRACE_SECONDS``: the largest time or duration a trace may give (default ten years)."""
    return _env_int("SIMCORE_MAX_TRACE_SECONDS", DEFAULT_MAX_TRACE_SECONDS)


def max_request() -> int:
    """``SIMCORE_MAX_REQUEST``: the largest resource request a trace may give, in its own units (default 1e12)."""
    return _env_int("SIMCORE_MAX_REQUEST", DEFAULT_MAX_REQUEST)


# -- bounds the command line and the platform share (docs/guide/configuration.md, "Limits") -------------------------

#: Default bound on the runs of one grid or experiment: points x schedulers x seeds (SIMCORE_MAX_RUNS).
DEFAULT_MAX_RUNS = 200
#: Largest seed: numpy's generators take more, but seeds are stored in 32-bit-safe columns and the API,
#: forms and command line must accept the same ones.
MAX_SEED = 2**32 - 1
#: Most seeds one grid or experiment may list (a range's length is checked before it is expanded).
MAX_SEEDS = 50
#: Most random trials of a packing analysis (compaction orders, placements).
MAX_TRIALS = 100
#: Default bound on the jobs (tasks, for workflows) of a workload a command builds from a count it is
#: given, checked before anything is allocated: each task holds about 100 bytes of arrays, so the default
#: is about 10 GB, four times a month of the Google 2011 trace.
DEFAULT_MAX_JOBS = 100_000_000


def max_runs() -> int:
    """``SIMCORE_MAX_RUNS``: the most runs one grid (points x schedulers x seeds) may have (default 200)."""
    return _env_int("SIMCORE_MAX_RUNS", DEFAULT_MAX_RUNS)


def max_jobs() -> int:
    """``SIMCORE_MAX_JOBS``: the most jobs (workflow tasks) a replayed stream may generate (default 100,000,000)."""
    return _env_int("SIMCORE_MAX_JOBS", DEFAULT_MAX_JOBS)


def check_seed(seed: int, name: str | None = "--seed") -> int:
    """Refuse a seed outside 0..2^32-1, as the platform does; returns it. ``name`` prefixes the message."""
    if not 0 <= seed <= MAX_SEED:
        raise ParameterError(f"{name + ': ' if name else ''}seed {seed} is outside 0 to 2^32-1 ({MAX_SEED:,})")
    return seed


def check_trials(trials: int, name: str | None = "--trials") -> int:
    """Refuse more than ``MAX_TRIALS`` trials (or fewer than one); returns the count."""
    if not 1 <= trials <= MAX_TRIALS:
        raise ParameterError(f"{name + ': ' if name else ''}{trials:,} trials; give 1 to {MAX_TRIALS}")
    return trials


def check_jobs(count: int, what: str) -> int:
    """Refuse a workload of more than ``SIMCORE_MAX_JOBS`` jobs before it is allocated; returns ``count``.

    ``what`` says what was asked, e.g. "jobs: 1,000,000,000 jobs".
    """
    limit = max_jobs()
    if count > limit:
        raise ParameterError(f"{what}; at most {limit:,} (setting SIMCORE_MAX_JOBS)")
    return count
