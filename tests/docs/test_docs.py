"""The documentation site: it builds with warnings as errors, fetches nothing from elsewhere, and its examples run.

* The site is built once per session with ``mkdocs build --strict`` (as ``make docs`` does) into a temporary
  directory; a warning (a broken link or anchor, a page missing from the navigation, a docstring the reference
  cannot render) fails the build and this test.
* Every ``console`` block of the pages is run: each ``$ `` line as a shell command in a scratch directory
  that sees the project's ``docs/`` and ``tests/`` and ``../shared`` as the project root does; it must exit 0,
  and every output line the block shows must appear in what it printed.
* Every ``pycon`` block is a doctest (the blocks of one page share their names, as in one session).
"""

from __future__ import annotations

import doctest
import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: ../shared as the examples name it (its data/ holds the trace extracts; SIMCORE_SHARED_DATA may move it).
SHARED = SHARED_DATA.parent

pytest.importorskip("mkdocs", reason="the docs extra is not installed (make install installs it)")

FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def _blocks(kind: str) -> list[tuple[str, int, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == kind:
                found.append((str(page.relative_to(DOCS)), text[: m.start()].count("\n") + 1, m.group(2)))
    return found


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    warnings = [ln for ln in proc.stderr.splitlines() if "WARNING" in ln or "ERROR" in ln]
    assert proc.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(warnings or [proc.stderr[-3000:]])
    pages = sorted(out.rglob("*.html"))
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "docs-build.json").write_text(
        json.dumps({"build_s": round(took, 1), "html_pages": len(pages), "load_average": os.getloadavg()})
    )
    return out


def test_the_site_builds_strict_with_every_section(site: Path) -> None:
    for page in (
        "index.html",
        "getting-started/index.html",
        "tutorials/lotes-figure-11/index.html",
        "tutorials/packing-google-trace/index.html",
        "tutorials/profile-study/index.html",
        "tutorials/design-space-search/index.html",
        "tutorials/mris/index.html",
        "how-to/import-foreign-trace/index.html",
        "how-to/write-a-scheduler/index.html",
        "how-to/deploy-workers/index.html",
        "reference/cli/index.html",
        "reference/library/index.html",
        "reference/rest-api/index.html",
        "notes/index.html",
    ):
        assert (site / page).is_file(), page


class _Assets(HTMLParser):
    """Every address a page makes the browser fetch by itself (not links the reader may follow)."""

    FETCHED = {"script": ("src",), "img": ("src", "srcset"), "link": ("href",), "iframe": ("src",), "source": ("src",)}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and name in self.FETCHED.get(tag, ()):
                # <link rel="canonical"> and the like are not fetched; stylesheets, icons and preloads are.
                self.urls.append(value)


def test_no_page_fetches_anything_from_another_site(site: Path) -> None:
    outside = re.compile(r"^\s*(https?:)?//", re.I)
    offenders = []
    for page in site.rglob("*.html"):
        parser = _Assets()
        parser.feed(page.read_text())
        offenders += [f"{page.relative_to(site)}: {u}" for u in parser.urls if outside.match(u)]
    for css in site.rglob("*.css"):
        offenders += [
            f"{css.relative_to(site)}: {u}"
            for u in re.findall(r"url\(\s*['\"]?([^)'\"]+)", css.read_text())
            if outside.match(u)
        ]
    assert not offenders, "assets from outside the site:\n" + "\n".join(sorted(offenders)[:20])
    text = (site / "index.html").read_text()
    assert "fonts.googleapis" not in text and "fonts.gstatic" not in text


def test_generated_references_follow_the_code(site: Path) -> None:
    import argparse

    from simcore.cli import build_parser

    cli = (site / "reference/cli/index.html").read_text()
    commands = next(a for a in build_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    for name, sub in commands.choices.items():
        assert f'id="simcore-{name}"' in cli, name
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert f"<code>{flag}</code>" in cli, (name, flag)
    rest = (site / "reference/rest-api/index.html").read_text()
    for path in ("/api/experiments/", "/api/experiments/{id}/sweep/", "/api/packing/", "/api/searches/"):
        assert f"<code>GET {path}</code>" in rest or f"<code>POST {path}</code>" in rest, path
    library = (site / "reference/library/index.html").read_text()
    assert 'id="simcore.frames.jobs"' in library and 'id="simcore.api.run"' in library


def test_the_speed_table_is_the_file_make_bench_wrote(site: Path) -> None:
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    speed = (site / "guide/speed/index.html").read_text()
    assert results["measured_at"] in speed and "<!-- bench-results -->" not in speed
    for r in results["results"]:
        if r.get("status") == "ok":
            assert f"{r['jobs_per_s']:,.0f}" in speed, r["scheduler"]


def test_every_note_is_listed_in_the_navigation(tmp_path: Path) -> None:
    sys.path.insert(0, str(DOCS))
    try:
        import hooks  # docs/hooks.py
    finally:
        sys.path.remove(str(DOCS))
    for name in ("index.md", "ops.md", "bench-speed.md", "README.txt"):
        (tmp_path / name).write_text("# x\n")
    assert hooks.notes_nav(tmp_path) == ["notes/index.md", "notes/bench-speed.md", "notes/ops.md"]


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory laid out as the project root is for the examples: docs/, tests/ and ../shared."""
    base = tmp_path_factory.mktemp("examples")
    work = base / "project"
    work.mkdir()
    for name in ("docs", "tests"):
        (work / name).symlink_to(ROOT / name)
    if SHARED.exists():
        (base / "shared").symlink_to(SHARED)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "simcore"  # this checkout's simcore, whatever the environment has installed
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m simcore "$@"\n')
    shim.chmod(0o755)
    return work


CONSOLE = _blocks("console")


@pytest.mark.parametrize("page,line,block", CONSOLE, ids=[f"{p}:{n}" for p, n, _ in CONSOLE])
def test_console_examples_run(scratch: Path, page: str, line: int, block: str) -> None:
    lines = block.strip("\n").split("\n")
    commands = [ln[2:] for ln in lines if ln.startswith("$ ")]
    shown = [ln for ln in lines if not ln.startswith("$ ") and ln.strip()]
    assert commands, f"{page}:{line}: a console block without a '$ ' command"
    if any("../shared/" in c for c in commands) and not (scratch.parent / "shared").exists():
        if os.environ.get("CI"):  # CI has the extracts: their absence there is a broken checkout
            pytest.fail(f"the shared trace extracts are missing ({SHARED_DATA})")
        pytest.skip(f"the shared trace extracts are not beside the project ({SHARED_DATA})")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{scratch.parent / 'bin'}:{os.environ['PATH']}"}
    output = ""
    for cmd in commands:
        proc = subprocess.run(["bash", "-c", cmd], cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{page}:{line}: `{cmd}` exited {proc.returncode}:\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, proc.stderr
        output += proc.stdout
    printed = [ln.rstrip() for ln in output.splitlines()]
    for want in shown:
        assert want.rstrip() in printed, f"{page}:{line}: the block shows {want!r}, which the command did not print"


PAGES_WITH_PYCON = sorted({p for p, _, _ in _blocks("pycon")})


@pytest.mark.parametrize("page", PAGES_WITH_PYCON)
def test_python_examples_run_as_doctests(page: str) -> None:
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    from simcore.schedulers import SCHEDULERS

    names: dict[str, object] = {"__name__": f"docs_{Path(page).stem}"}
    # An example registers a scheduler: the other tests must not see it. Load the registry first (it fills itself
    # on first use): a snapshot taken before would be empty, and restoring it would leave this process with no
    # schedulers at all (test_notebook then failed when it ran after this test in the same xdist process).
    SCHEDULERS.names()
    registered = dict(SCHEDULERS._items)
    try:
        for _, line, block in (b for b in _blocks("pycon") if b[0] == page):
            test = parser.get_doctest(block, names, f"{page}:{line}", str(DOCS / page), line)
            runner.run(test, clear_globs=False)
            names = test.globs  # the next block of the page goes on from this one
    finally:
        SCHEDULERS._items.clear()
        SCHEDULERS._items.update(registered)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_the_platform_serves_the_built_site_under_its_policy(site: Path, client, settings) -> None:
    """Every inline script of the real theme is allowed by hash; assets and the search index are served."""
    import base64
    import hashlib

    settings.DOCS_ROOT = site
    for url in ("/docs/", "/docs/tutorials/mris/", "/docs/reference/cli/"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = b"".join(response.streaming_content).decode()
        script_src = next(d for d in response["Content-Security-Policy"].split("; ") if d.startswith("script-src"))
        inline = re.findall(r"<script>(.*?)</script>", page, re.S)
        assert inline, "the theme's inline scripts moved: check the policy still covers them"
        for code in inline:
            digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in script_src
        for asset in re.findall(r'<script src="([^"]+)"', page):
            assert client.get(f"{url}{asset}").status_code == 200, asset
    assert client.get("/docs/search/search_index.json").status_code == 200
