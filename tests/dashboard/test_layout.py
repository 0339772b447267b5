"""The dashboard's rooms (issue 31): imports go one way, read from the source with ``ast`` (no Django needed).

- ``dashboard.common`` imports no feature: features hand it what it needs
  through its registries (queueing.register, waiting.register, repair.register).
- A feature imports from another feature only that feature's public modules:
  its ``models`` (foreign keys cross features), its ``access`` rules and its
  ``services``, plus the few named in :data:`EXTRA_PUBLIC`, each with why.
- Nothing inside a feature or common imports a project-level module (the
  ``dashboard.models`` registry, ``dashboard.tasks``, ``dashboard.urls``...),
  except common's use of the Celery app, and no feature imports the API.
- Leaving models aside (foreign keys point both ways), features depend on each
  other without a circle; and no circle of modules runs through common.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboard"

FEATURES = frozenset({"accounts", "experiments", "traces", "packing", "searches", "capacity"})
PUBLIC = frozenset({"models", "access", "services"})

#: Modules beyond PUBLIC that other features may import, and why.
EXTRA_PUBLIC = {
    "traces.uploads": "the uploaded cluster and trace files every feature reads (names, bytes, temporary files)",
    "experiments.jobs": "a run's per-job records: a packing analysis of a run reads them one chunk at a time",
    "experiments.forms": "a search's scenario is an experiment's: SearchForm extends ExperimentForm",
}

#: Project-level modules common may use: the Celery app (it imports nothing of the dashboard).
COMMON_MAY_USE = frozenset({"celery"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every dashboard module ``path`` imports, at module level or inside a function (``a.b`` of ``from a import b``
    counts as ``a.b`` when that is a module, else as ``a``)."""
    found: set[str] = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dashboard"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("dashboard"):
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if _is_module(sub) else module)
    return found


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _sources() -> dict[str, set[str]]:
    return {
        _module_name(p): _imports(p)
        for p in sorted(DASHBOARD.rglob("*.py"))
        if "migrations" not in p.parts and "management" not in p.parts
    }


def _room(module: str) -> str:
    """The room of a module: a feature, ``common``, ``api``, or ``project`` (settings, urls, celery...)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] in FEATURES | {"common", "api", "templatetags"}:
        return parts[1]
    return "project"


def test_common_imports_no_feature_and_no_project_module() -> None:
    bad = [
        f"{src} imports {dst}"
        for src, deps in _sources().items()
        if _room(src) == "common"
        for dst in sorted(deps)
        if _room(dst) != "common" and dst.removeprefix("dashboard.") not in COMMON_MAY_USE
    ]
    assert bad == []


def test_features_import_only_each_others_public_modules() -> None:
    bad = []
    for src, deps in _sources().items():
        room = _room(src)
        if room not in FEATURES:
            continue
        for dst in sorted(deps):
            other = _room(dst)
            if other in (room, "common"):
                continue
            rel = dst.removeprefix("dashboard.")
            public = other in FEATURES and (rel.split(".")[1] in PUBLIC or rel in EXTRA_PUBLIC)
            if not public:
                bad.append(f"{src} imports {dst}")
    assert bad == []


def test_features_depend_on_each_other_without_a_circle_models_aside() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for src, deps in _sources().items():
        for dst in deps:
            a, b = _room(src), _room(dst)
            if a in FEATURES and b in FEATURES and a != b and not dst.endswith(".models"):
                edges[a].add(b)
    assert _circles(edges) == []


def test_no_circle_of_modules_runs_through_common() -> None:
    graph = {src: {d for d in deps if d != src} for src, deps in _sources().items()}
    through_common = [c for c in _circles(graph) if any(_room(m) == "common" for m in c)]
    # Common's own modules may lean on each other (errors <-> outages share the outage page); never on a feature.
    assert [c for c in through_common if any(_room(m) != "common" for m in c)] == []


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_the_rules_see_the_rooms() -> None:
    # The checks above would pass vacuously if the walk found nothing: the rooms are there and hold modules.
    rooms = {_room(m) for m in _sources()}
    assert FEATURES | {"common", "api", "project"} <= rooms
    assert "dashboard.experiments.models" in _sources()["dashboard.models"]
