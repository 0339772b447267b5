"""MkDocs hooks (mkdocs.yml ``hooks:``): the generated pages, the speed tables and the engineering notes.

* ``reference/cli.md`` from ``simcore``'s argument parsers (``gen_cli.py``) and ``reference/rest-api.md``
  from the platform's OpenAPI schema (``gen_rest.py``) are added to the site's files at build time;
  nothing generated is committed.
* ``<!-- bench-results -->`` in a page becomes the table of ``bench/results.json``, the file
  ``make bench`` writes (``simcore bench --save``), so no speed figure is copied by hand.
* Every ``docs/notes/*.md`` is listed under "Engineering notes" in the navigation: a branch adds its
  note as a new file and the merge needs no edit to mkdocs.yml.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.structure.files import File, Files

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCH_RESULTS = ROOT / "bench" / "results.json"
BENCH_MARKER = "<!-- bench-results -->"
NOTES_SECTION = "Engineering notes"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # simcore from this checkout, installed or not


def _generator(name: str) -> ModuleType:
    """``docs/<name>.py`` (mkdocs loads this file by path, so its neighbours are not importable by name)."""
    spec = importlib.util.spec_from_file_location(f"simcore_docs_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notes_nav(notes_dir: Path) -> list[str]:
    """The "Engineering notes" section: its index first, then every other note by file name."""
    notes = sorted(p.name for p in notes_dir.glob("*.md") if p.name != "index.md")
    return ["notes/index.md", *(f"notes/{name}" for name in notes)]


def on_config(config: Any) -> Any:
    for entry in config["nav"]:
        if isinstance(entry, dict) and NOTES_SECTION in entry:
            entry[NOTES_SECTION] = notes_nav(HERE / "notes")
            return config
    raise ValueError(f"mkdocs.yml's nav has no {NOTES_SECTION!r} section for docs/notes/*.md")


def on_files(files: Files, config: Any) -> Files:
    pages = {"reference/cli.md": _generator("gen_cli").page(), "reference/rest-api.md": _generator("gen_rest").page()}
    for uri, text in pages.items():
        files.append(File.generated(config, uri, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if BENCH_MARKER not in markdown:
        return markdown
    from simcore.bench.report import markdown as bench_markdown

    if not BENCH_RESULTS.exists():
        raise FileNotFoundError(f"{BENCH_RESULTS} is missing: run `make bench` (it writes the speed tables' data)")
    return markdown.replace(BENCH_MARKER, bench_markdown(json.loads(BENCH_RESULTS.read_text())))
