"""simcore is a plain library: importing all of it must not pull in Django or Celery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import simcore

CODE = """
import importlib, pkgutil, sys
import simcore
for m in pkgutil.walk_packages(simcore.__path__, 'simcore.'):
    if m.name.endswith('__main__'):
        continue
    importlib.import_module(m.name)
from simcore.schedulers import SCHEDULERS
from simcore.presets import CLUSTERS, WORKLOADS
SCHEDULERS.names(); CLUSTERS.names(); WORKLOADS.names()
bad = sorted(k for k in sys.modules if k.split('.')[0] in {'django', 'celery', 'kombu', 'dashboard'})
print(','.join(bad))
"""


def test_simcore_never_imports_django_or_celery() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _argparse_importers(root: Path) -> list[str]:
    """Modules under ``root`` (a simcore tree) outside its cli package that import argparse."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "argparse" for n in names):
                out.append(str(rel))
    return out


def test_only_the_command_line_imports_argparse() -> None:
    # Argument parsing lives in simcore.cli; the library takes plain arguments.
    assert _argparse_importers(Path(simcore.__file__).parent) == []


def test_the_argparse_rule_catches_an_offender(tmp_path: Path) -> None:
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "ok.py").write_text("import argparse\n")
    (tmp_path / "engine.py").write_text("from argparse import Namespace\n")
    assert _argparse_importers(tmp_path) == ["engine.py"]
