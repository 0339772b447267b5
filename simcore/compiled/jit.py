"""Numba, configured once: where compiled kernels are cached, and the decorator they use.

Why numba (not Cython): kernels stay plain Python files next to the Python
specification they must match, nothing is compiled at install time (``make
run`` installs wheels from PyPI, no C toolchain), and ``cache=True`` keeps the
machine code between processes, so only the first run of a kernel pays its
compile time. Cython would need a build step per platform and hand-typed
``.pyx`` twins of every scheduler.

Cache directory: a subdirectory (named by :func:`source_key`) of ``NUMBA_CACHE_DIR``
when set; else of ``$SIMCORE_VAR_DIR/numba-cache`` when ``SIMCORE_VAR_DIR`` is set
(the dashboard's writable directory); else of ``$XDG_CACHE_HOME/simcore/numba``
(``~/.cache/simcore/numba``). Numba reads the
variable when it is first imported; this module sets numba's config instead,
so every kernel module imports ``njit`` from here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def cache_dir() -> Path:
    """Where compiled kernels are cached (see the module docstring)."""
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    var = os.environ.get("SIMCORE_VAR_DIR")
    if var:
        return Path(var) / "numba-cache"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "simcore" / "numba"


def source_key() -> str:
    """A digest of every kernel source: the compiled core and each scheduler's ``kernel.py``.

    Numba invalidates a cached function when its own file changes, not when a helper it
    inlines from another module does; so the cache lives in a subdirectory named after
    this digest, and any change to any kernel source starts a fresh one.
    """
    pkg = Path(__file__).resolve().parent.parent
    files = sorted(pkg.glob("compiled/*.py")) + sorted(pkg.glob("schedulers/**/kernel.py"))
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _configure() -> str:
    path = cache_dir() / source_key()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""  # not writable: numba then uses its own locations (or compiles without a cache)
    return str(path)


_CACHE = _configure()

import numba  # noqa: E402
import numba.extending  # noqa: E402

from simcore.compiled import codegen as _codegen  # noqa: E402

#: numba, untyped: its stubs know neither ``config.CACHE_DIR`` nor ``njit(_nrt=False)``.
_nb: Any = numba

if _CACHE:
    # Set on numba's config, not in the environment: child processes derive the same path themselves.
    _nb.config.CACHE_DIR = _CACHE

#: Whether numba builds our kernels the quick way (helpers linked only, one tuned optimisation: see
#: :mod:`simcore.compiled.codegen`); False on a numba whose internals differ, which then compiles slower.
FAST_CODEGEN = _codegen.install()


def njit(fn: F) -> F:
    """A kernel's event loop: cached, nogil, IEEE float semantics, and no reference counting.

    Without ``_nrt=False`` numba counts references to every array it takes out of the
    state tuples at every helper call, about 90 atomic operations an event: ten times the
    loop's own work. So kernels allocate nothing: the driver grows the completion heap
    between chunks, and structures are arrays of fixed size made before the run.
    """
    # fastmath stays off: the kernels must make the very float comparisons the Python specification makes.
    _codegen.KERNELS.add(fn.__code__)
    return _nb.njit(cache=True, nogil=True, _nrt=False)(fn)  # type: ignore[no-any-return]


def inline(fn: F) -> F:
    """A helper compiled into the kernel that calls it, with its flags (no Python wrapper of its own).

    Not numba's IR inlining (``inline="always"``): that copies a helper into every call site
    and multiplied the compile time; LLVM inlines them instead, in the kernel's module (see
    :mod:`simcore.compiled.codegen`). A helper has no Python or C entry point of its own.
    """
    _codegen.HELPERS.add(fn.__code__)
    return _nb.extending.register_jitable(no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)  # type: ignore[no-any-return]
