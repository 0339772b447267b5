"""simcore's floors: a lower folder never imports a higher one, not even inside a function.

The ground floor is ``core`` (with ``compiled``, the engine's compiled loop);
readers, workloads and schedulers stand on it; scenarios, sweeps, archives,
the design-space instrument and packing stand on those; ``bench`` and ``cli``
are at the top. Only ``schedulers/staged/`` reaches into ``dse``: it is the
registration of the staged scheduler that ``dse.staged`` implements.
"""

from __future__ import annotations

import ast
from pathlib import Path

import simcore

ROOT = Path(simcore.__file__).parent

#: Folder (or top-level module) -> the simcore folders it must never import.
UPPER = frozenset({"api", "scenario", "archive", "sweep", "dse", "packing", "reproductions", "bench", "cli"})
FORBIDDEN: dict[str, frozenset[str]] = {
    "core": frozenset({"schedulers", "presets", "profiles", "workloads", "traces"}) | UPPER,
    "compiled": frozenset({"schedulers", "presets", "profiles", "workloads", "traces"}) | UPPER,
    "workloads": frozenset({"schedulers", "traces"}) | UPPER,
    "schedulers": UPPER - {"dse"},
    "presets": UPPER,
    "profiles": UPPER,
    "traces": UPPER,
    "sweep": frozenset({"archive", "dse", "packing", "bench", "cli"}),
    "scenario": frozenset({"archive", "dse", "packing", "bench", "cli"}),
    "dse": frozenset({"packing", "bench", "cli"}),
    "packing": frozenset({"dse", "bench", "cli"}),
}


def _imports(path: Path) -> set[str]:
    """The simcore folders or top-level modules ``path`` imports, at module level or in a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "simcore" else [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        out |= {n.split(".")[1] for n in names if n.startswith("simcore.")}
    return out


def _violations(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        floor = rel.parts[0].removesuffix(".py")
        if rel.parts[:2] == ("schedulers", "staged"):
            continue
        for target in sorted(_imports(path) & FORBIDDEN.get(floor, frozenset())):
            found.append(f"{rel.as_posix()} imports simcore.{target}")
    return found


def test_no_lower_floor_imports_a_higher_one() -> None:
    assert _violations(ROOT) == []


def test_the_engine_does_not_import_the_schedulers() -> None:
    assert "schedulers" not in _imports(ROOT / "core" / "engine.py")


def test_the_rule_catches_an_offender(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "engine.py").write_text("def f():\n    from simcore.schedulers.base import Scheduler\n")
    assert _violations(tmp_path) == ["core/engine.py imports simcore.schedulers"]
