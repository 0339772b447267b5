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

import ast
import hashlib
import importlib.metadata
import os
import platform
import sys
from collections.abc import Callable, Mapping
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


def kernel_sources(pkg: Path) -> list[Path]:
    """The files whose code or constants a kernel may compile in, in package ``pkg`` (``simcore/``).

    The compiled core (``compiled/*.py``) and each scheduler's ``kernel.py``, and every module of
    the package they import, transitively (``import simcore.x`` and ``from simcore.x import y``
    statements anywhere in a file, relative ones too, and the packages' ``__init__.py`` that
    importing runs): a kernel compiles ``fit.EPS`` in as a constant, so a change to ``fit.py``
    must reach the key although no kernel file changed. Imports outside the package end the walk.
    """
    todo = sorted(pkg.glob("compiled/*.py")) + sorted(pkg.glob("schedulers/**/kernel.py"))
    seen: set[Path] = set()
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for dotted in _imported_names(pkg, f):
            todo.extend(m for m in _module_files(pkg, dotted) if m not in seen)
    return sorted(seen)


def _imported_names(pkg: Path, f: Path) -> list[str]:
    """Dotted names ``f`` imports: modules, and ``module.name`` for each ``from module import name``."""
    parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
    here = parts[:-1]  # the package holding f (f's own package if f is an __init__.py)
    names: list[str] = []
    for node in ast.walk(ast.parse(f.read_bytes(), filename=str(f))):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[: len(here) - node.level + 1]
                module = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.append(module)
            # ``from simcore.x import y`` may import the module simcore.x.y: try it as one.
            names.extend(f"{module}.{a.name}" for a in node.names)
    return names


def _module_files(pkg: Path, dotted: str) -> list[Path]:
    """The files importing ``dotted`` runs within ``pkg`` (its packages' ``__init__.py`` and itself)."""
    parts = dotted.split(".")
    if parts[0] != pkg.name:
        return []
    files: list[Path] = []
    for i in range(1, len(parts) + 1):
        base = pkg.joinpath(*parts[1:i])
        init = base / "__init__.py"
        if init.is_file():
            files.append(init)
        elif i > 1 and base.with_suffix(".py").is_file():
            files.append(base.with_suffix(".py"))
        else:
            break  # not a module of the package (a name defined in the module before it)
    return files


def toolchain_versions() -> dict[str, str]:
    """What a compiled kernel depends on besides our code: Python, numba, llvmlite and ``NUMBA_OPT``.

    Read from the installed distributions' metadata, not by importing numba (which reads
    the cache directory when it is imported). numba's own cache index does not record the
    optimisation level either: without it, a kernel compiled once at ``NUMBA_OPT=0`` was
    served to every later run at the default level, 15-20 times slower.
    """
    # numba's default level is 3: unset and "3" are the same machine code, so they share a key.
    opt = os.environ.get("NUMBA_OPT", "").strip() or "3"
    out = {"python": f"{platform.python_implementation()} {sys.version}", "numba_opt": opt}
    for dist in ("numba", "llvmlite"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def source_key(pkg: Path | None = None, versions: Mapping[str, str] | None = None) -> str:
    """A digest of every kernel source (:func:`kernel_sources`) and the toolchain's versions.

    Numba invalidates a cached function when its own file changes, not when a helper it
    inlines or a constant it reads from another module does; so the cache lives in a
    subdirectory named after this digest, and any change to any of those files, or to
    Python's, numba's or llvmlite's version, starts a fresh one. ``pkg`` is the ``simcore``
    package directory (default: this one); ``versions`` default to :func:`toolchain_versions`.
    """
    pkg = Path(__file__).resolve().parent.parent if pkg is None else pkg
    versions = toolchain_versions() if versions is None else versions
    h = hashlib.sha256()
    for name in sorted(versions):
        h.update(f"{name}={versions[name]}\n".encode())
    for f in kernel_sources(pkg):
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

#: numba, untyped: its stubs know neither ``config.CACHE_DIR`` nor ``njit(_nrt=False)``.
_nb: Any = numba

if _CACHE:
    # Set on numba's config, not in the environment: child processes derive the same path themselves.
    _nb.config.CACHE_DIR = _CACHE


def njit(fn: F) -> F:
    """A kernel's event loop: cached, nogil, IEEE float semantics, and no reference counting.

    Without ``_nrt=False`` numba counts references to every array it takes out of the
    state tuples at every helper call, about 90 atomic operations an event: ten times the
    loop's own work. So kernels allocate nothing: the driver grows the completion heap
    between chunks, and structures are arrays of fixed size made before the run.
    Numba compiles it as it is shipped (its optimisation level is ``NUMBA_OPT``'s).
    """
    # fastmath stays off: the kernels must make the very float comparisons the Python specification makes.
    return _nb.njit(cache=True, nogil=True, _nrt=False)(fn)  # type: ignore[no-any-return]


def inline(fn: F) -> F:
    """A helper compiled into the kernel that calls it, with its flags (no Python or C entry point of its own).

    LLVM decides whether to inline a call to it (small helpers it does); see :func:`inline_always`
    for the ones that must be.
    """
    return _nb.extending.register_jitable(no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)  # type: ignore[no-any-return]


def inline_always(fn: F) -> F:
    """A large part of a kernel's per-event path, copied by numba into each caller (its IR, before typing).

    numba as shipped compiles each :func:`inline` helper on its own and links it in as a function LLVM
    may inline; it does not inline large ones, and the call it leaves passes every array of the named
    tuples it takes as separate words (seven per array: about 220 for ``core``, 200-400 for a scheduler's
    state). That cost FCFS a third of its speed, LoTES a quarter and MRIS a sixth against the build that
    patched numba (docs/notes/kfcfs.md, klotes.md, kmris.md). Use it for the stages with one or two call
    sites, :func:`inline` for the rest: numba builds and copies the IR at every site, so the copies
    multiply the compile time (the staged kernel's was 21-26 CPU-s with 64 of them).

    An ``njit`` function, not a ``register_jitable`` one: numba inlines the former's untyped IR
    before typing, once per call site, where an overload with ``inline="always"`` is compiled
    whole for typing and then inlined after it (the MRIS kernel's first compile: 55 CPU-s so,
    30 CPU-s as here, side by side at load 6-10; docs/notes/kmris.md).
    """
    return _nb.njit(nogil=True, _nrt=False, inline="always")(fn)  # type: ignore[no-any-return]
