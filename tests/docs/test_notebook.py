"""docs/notebooks/compare.ipynb runs from top to bottom in a real kernel, and plots what the library computes.

The executed notebook's figure is drawn again in headless Chromium (Debian's package, as the browser tests use)
with the platform's own plotly.js, and saved as ``test-artifacts/notebook-compare.png``; the run time goes to
``test-artifacts/notebook-timing.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebooks" / "compare.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
PLOTLY_JS = ROOT / "static" / "dashboard" / "plotly-basic.min.js"  # scatter and bar: what the notebook draws
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def executed() -> Any:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT)  # the kernel imports this checkout's simcore
    try:
        t0 = time.monotonic()
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": ROOT}})
        client.execute()
        took = time.monotonic() - t0
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "notebook-timing.json").write_text(
        json.dumps({"notebook": "docs/notebooks/compare.ipynb", "wall_s": round(took, 1), "load": os.getloadavg()})
    )
    return nb


def _figure(nb: Any) -> dict[str, Any]:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "application/vnd.plotly.v1+json" in out.get("data", {}):
                return dict(out["data"]["application/vnd.plotly.v1+json"])
    raise AssertionError("the notebook showed no Plotly figure")


def test_the_notebook_runs_and_plots_each_scheduler(executed: Any) -> None:
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    fig = _figure(executed)
    names = [t.get("name") for t in fig["data"] if t.get("type") == "scatter" and t.get("showlegend") is not False]
    assert names == ["greedy", "tetris", "mris"]
    bar = next(t for t in fig["data"] if t["type"] == "bar")
    assert list(bar["x"]) == ["greedy", "tetris", "mris"]


def test_the_bars_are_the_mean_response_of_the_runs(executed: Any) -> None:
    """The notebook's bar for Greedy equals the mean over its seeds of runs made here, independently."""
    from simcore import api

    bar = next(t for t in _figure(executed)["data"] if t["type"] == "bar")
    means = [
        api.run(
            api.RunSpec(
                "google-balanced",
                "google-like",
                "greedy",
                seed=seed,
                load=1.0,
                hours=0.3,
                cluster_params={"machines_per_config": 2},
                engine="python",
            )
        ).summary["mean_response_s"]
        for seed in (0, 1, 2)
    ]
    y = bar["y"]
    greedy = y[0] if isinstance(y, list) else None
    if greedy is None:  # plotly.py 6+ may encode arrays as {"dtype", "bdata"}
        import base64

        import numpy as np

        greedy = float(np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])[0])
    assert greedy == pytest.approx(sum(means) / 3, rel=1e-12)
    assert max(means) > 0, "the scenario should make jobs wait, or the comparison shows nothing"


@pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (make test installs it)",
)
def test_the_plot_is_saved_as_a_png(executed: Any) -> None:
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop in this thread
    from playwright.sync_api import sync_playwright

    fig = _figure(executed)
    out = ARTIFACTS / "notebook-compare.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1240, "height": 460})
            page.set_content('<div id="fig" style="width:1200px;height:420px"></div>')
            page.add_script_tag(path=str(PLOTLY_JS))
            page.evaluate("f => Plotly.newPlot('fig', f.data, f.layout, {staticPlot: true})", fig)
            page.wait_for_selector("#fig .main-svg")
            page.locator("#fig").screenshot(path=str(out))
            traces = page.evaluate("document.querySelectorAll('#fig .trace').length")
        finally:
            browser.close()
    assert traces >= 7  # three CCDF lines, three queue lines, one bar trace
    assert out.stat().st_size > 10_000
