"""`%load_ext cudalab` in JupyterLab, as on Colab, Kaggle or VS Code: a Python notebook (ipykernel,
the python3 kernelspec) whose cells use cudalab's magics through the IPython extension.

The machinery is test_lab_browser.py's (JupyterLab on a private port and Jupyter path, headless
Chromium, Run → Run All Cells). The notebook's IPython kernel imports this tree's python/cudalab
(PYTHONPATH) and runs the binary under test (CUDALAB_BIN). Checked in the page, as a student sees
it: the magics' results render as the same HTML tables as in a cudalab notebook (a sweep's final
table after its progress display, the chart beside it), a failing `%assert` fails its cell with an
AssertionError, and Python sees the results (`cudalab.results()` when pandas is there, else
`cudalab.documents()`). A screenshot is saved to build/screenshots/load_ext.png. It skips, saying
why, where chromium, chromedriver, Selenium or JupyterLab is missing.
"""
from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from conftest import REPO, kernel_binary, serving
from test_lab_browser import Lab, Page, _by, browser, run_all_cells, skip_if_missing  # noqa: F401 (a fixture)

SWEEP = "%matmul --size 128 --variant naive,tiled,cublas"     # 2^22 flops a point: charted
FAILING = "%assert matmul[variant=tiled].gflops < 0"
RESULTS = ("import cudalab\nprint('magics', sorted({d['magic'] for d in cudalab.documents()}))"
           if importlib.util.find_spec("pandas") is None else
           "import cudalab\ndf = cudalab.results()\nprint('magics', sorted(set(df.magic)))")
# the failing %assert last: Run All Cells stops at a cell that fails
CELLS = ["%load_ext cudalab", "%device", SWEEP, "%assert matmul.check.passed",
         "%%histo --bin-width 4\nprogramming massively parallel processors", RESULTS, FAILING]
SCREENSHOT = REPO / "build" / "screenshots" / "load_ext.png"
PYTHON_KERNEL = ("python3", "Python 3 (ipykernel)", "python")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing(ipykernel="requirements-test.txt")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")])),
           "CUDALAB_BIN": str(kernel_binary())}
    with serving(Lab(tmp_path_factory.mktemp("lab"), cells=CELLS, kernel=PYTHON_KERNEL, env=env)) as server:
        yield server


def _errors(cell) -> list[str]:
    return [e.text for e in cell.find_elements(
        _by().CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")]


def _headers(cell) -> list[list[str]]:
    """Each HTML table's header cells in the cell's outputs (results render as tables)."""
    By = _by()
    return [[th.text.strip() for th in t.find_elements(By.CSS_SELECTOR, "thead th")]
            for t in cell.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table")]


def test_load_ext_notebook_in_the_browser(lab: Lab, browser, tmp_path_factory: pytest.TempPathFactory):
    By = _by()
    pg = Page(browser, lab, tmp_path_factory.mktemp("screenshots"))
    run_all_cells(pg)

    for src in CELLS:
        if src != FAILING:
            assert not _errors(pg.cell(src)), f"{src!r} shows an error: {_errors(pg.cell(src))}" + pg.snapshot()
    assert any("AssertionError" in e for e in _errors(pg.cell(FAILING))), \
        "the failing %assert does not fail its cell with an AssertionError" + pg.snapshot()

    # the sweep: the final table (three rows, the variant column) once the progress display is emptied
    sweep = pg.cell(SWEEP)
    pg.wait(lambda d: any("variant" in h for h in _headers(sweep)), 30, "the sweep's final table")
    rows = [r.find_elements(By.CSS_SELECTOR, "td") for r in
            sweep.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table tbody tr")]
    names = {td.text.strip() for tds in rows for td in tds}
    assert {"naive", "tiled", "cublas"} <= names, f"the sweep's table holds {sorted(names)}" + pg.snapshot()
    pg.wait(lambda d: sweep.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"), 30,
            "the sweep's chart (drawn by JupyterLab's Vega extension)")
    assert _headers(pg.cell("%device")), "%device shows no table" + pg.snapshot()

    out = pg.cell(RESULTS).find_element(By.CSS_SELECTOR, ".jp-OutputArea-output").text
    assert "matmul" in out and "histo" in out, f"cudalab's results seen from Python: {out!r}"

    sweep.location_once_scrolled_into_view
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))
    shutil.copy(SCREENSHOT, pg.shots / "load_ext.png")
    print(f"\n[screenshot] {SCREENSHOT.relative_to(REPO)}")
