"""The compiled-kernel cache key (``simcore.compiled.jit.source_key``): no stale kernel after a change.

Numba notices a change to a kernel's own file only; a constant a kernel compiles in from
another module (``fit.EPS``) or a new numba must start a fresh cache. Each test edits a copy
of the ``simcore`` package and keys it, as the next process would.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import llvmlite
import numba
import pytest

import simcore
from simcore.compiled.jit import kernel_sources, source_key, toolchain_versions

VERSIONS = {"python": "CPython 3.11.7", "numba": "0.68.1", "llvmlite": "0.50.0"}


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    """A copy of the installed ``simcore`` package, to edit."""
    src = Path(simcore.__file__).resolve().parent
    dst = tmp_path / "simcore"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))


def test_a_changed_fit_tolerance_changes_the_key(pkg: Path) -> None:
    # Given the key of the package as shipped, when fit.EPS (compiled into every kernel) changes,
    before = source_key(pkg, VERSIONS)
    _replace(pkg / "core" / "fit.py", "EPS = 1e-9", "EPS = 1e-6")
    # then the cache directory's name changes, although no kernel file did.
    assert source_key(pkg, VERSIONS) != before


def test_a_changed_module_imported_through_another_changes_the_key(pkg: Path) -> None:
    # core.py imports simcore.core.engine, which imports simcore.core.model: a change there reaches the key.
    assert pkg / "core" / "model.py" in kernel_sources(pkg)
    before = source_key(pkg, VERSIONS)
    with (pkg / "core" / "model.py").open("a") as f:
        f.write("\nLIMIT = 2\n")
    assert source_key(pkg, VERSIONS) != before


def test_a_change_to_a_module_no_kernel_imports_keeps_the_key(pkg: Path) -> None:
    # The command line's bench module is imported by no kernel, directly or not.
    assert pkg / "cli" / "bench.py" not in kernel_sources(pkg)
    before = source_key(pkg, VERSIONS)
    with (pkg / "cli" / "bench.py").open("a") as f:
        f.write("\nUNRELATED = 1\n")
    assert source_key(pkg, VERSIONS) == before


def test_the_kernel_sources_are_the_kernels_and_what_they_import(pkg: Path) -> None:
    names = {f.relative_to(pkg).as_posix() for f in kernel_sources(pkg)}
    # The kernels themselves, the modules whose EPS they compile in, and the packages importing runs.
    assert {"compiled/core.py", "schedulers/greedy/kernel.py", "schedulers/tetris/kernel.py"} <= names
    assert {"core/fit.py", "core/view.py", "__init__.py", "schedulers/__init__.py"} <= names
    assert not any(n.startswith(("cli/", "dashboard")) for n in names)


@pytest.mark.parametrize("tool", ["numba", "llvmlite", "python"])
def test_another_toolchain_version_changes_the_key(pkg: Path, tool: str) -> None:
    other = {**VERSIONS, tool: VERSIONS[tool] + ".1"}
    assert source_key(pkg, other) != source_key(pkg, VERSIONS)


def test_another_optimisation_level_changes_the_key(pkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel compiled at NUMBA_OPT=0 must never be served at the default level (numba's index ignores it)."""
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    default = source_key(pkg, toolchain_versions())
    monkeypatch.setenv("NUMBA_OPT", "3")
    assert source_key(pkg, toolchain_versions()) == default  # numba's default level: the same code
    monkeypatch.setenv("NUMBA_OPT", "0")
    assert source_key(pkg, toolchain_versions()) != default


def test_the_default_versions_are_the_installed_numba_and_llvmlite() -> None:
    versions = toolchain_versions()
    assert (versions["numba"], versions["llvmlite"]) == (numba.__version__, llvmlite.__version__)


def test_kernels_leave_numba_as_it_is_shipped() -> None:
    """Importing every kernel replaces none of numba's code generation (issue 27: no patch of its internals)."""
    import importlib

    from numba.core import cpu, typed_passes

    before = (typed_passes.BaseNativeLowering.run_pass, cpu.CPUContext.get_executable)
    for name in ("greedy", "fcfs", "lotes", "mris", "tetris", "affinity", "greedy_profile"):
        importlib.import_module(f"simcore.schedulers.{name}.kernel")
    assert (typed_passes.BaseNativeLowering.run_pass, cpu.CPUContext.get_executable) == before
    assert typed_passes.BaseNativeLowering.run_pass.__module__ == "numba.core.typed_passes"
    assert cpu.CPUContext.get_executable.__module__ == "numba.core.cpu"


def test_the_installed_numba_is_one_the_project_asks_for() -> None:
    """pyproject.toml's numba range holds the numba these tests run on (the range is what was tested)."""
    import tomllib

    from packaging.requirements import Requirement

    pyproject = Path(simcore.__file__).resolve().parent.parent / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    (numba_dep,) = [Requirement(d) for d in deps if Requirement(d).name == "numba"]
    assert numba_dep.specifier.contains(numba.__version__), (str(numba_dep), numba.__version__)
