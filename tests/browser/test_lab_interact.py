"""%interact in JupyterLab, as an instructor uses it in front of a class: a real ipywidgets slider.

The machinery is test_lab_browser.py's (JupyterLab on a private port and Jupyter path, headless
Chromium, Run → Run All Cells); the notebook here holds one cell,

    %interact %matmul --size 64 --variant tiled --tile 4,8,16

whose widget must render through JupyterLab's widget manager (jupyterlab_widgets, pinned in
requirements-lab.txt): a SelectionSlider reading 4 above an Output holding the result's HTML
table (tile 4). The test then moves the slider as a person would, with the keyboard (the handle
takes focus, Right Arrow), and checks that the table in the Output now shows tile 8: the kernel got
the update, re-ran the command and replaced the result in place. A screenshot of that state is
saved to build/screenshots/interact.png. It skips, saying why, where chromium, chromedriver,
Selenium, JupyterLab or jupyterlab_widgets is missing.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, serving
from test_lab_browser import Lab, Page, _by, browser, run_all_cells, skip_if_missing  # noqa: F401 (a fixture)

CELL = "%interact %matmul --size 64 --variant tiled --tile 4,8,16"
SCREENSHOT = REPO / "build" / "screenshots" / "interact.png"
RERUN_TIMEOUT = 30          # seconds for a moved slider's re-run to show

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing(jupyterlab_widgets="requirements-lab.txt")
    with serving(Lab(tmp_path_factory.mktemp("lab"), cells=[CELL])) as server:
        yield server


def _widget_tiles(cell) -> list[str]:
    """The tile column of the table inside the widget's Output ([] while none is shown, or while the
    re-run's result replaces it: a table found can be gone before its cells are read)."""
    from selenium.common.exceptions import StaleElementReferenceException
    By = _by()
    try:
        tables = cell.find_elements(By.CSS_SELECTOR, ".widget-output table")
        if not tables:
            return []
        headers = [th.text.strip() for th in tables[0].find_elements(By.CSS_SELECTOR, "th")]
        if "tile" not in headers:
            return []
        col = headers.index("tile")
        return [tds[col].text.strip() for tds in
                (r.find_elements(By.CSS_SELECTOR, "td") for r in tables[0].find_elements(By.CSS_SELECTOR, "tr"))
                if len(tds) > col]
    except StaleElementReferenceException:
        return []


def test_interact_slider_reruns_in_place(lab: Lab, browser, tmp_path_factory: pytest.TempPathFactory):
    from selenium.webdriver.common.keys import Keys
    By = _by()
    pg = Page(browser, lab, tmp_path_factory.mktemp("screenshots"))
    run_all_cells(pg)
    cell = pg.cell(CELL)

    # the widget: a slider reading the first choice, above the first run's table
    pg.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".widget-slider .noUi-handle"), 30,
            "the %interact slider (a rendered ipywidgets SelectionSlider)")
    readout = cell.find_element(By.CSS_SELECTOR, ".widget-slider .widget-readout")
    assert readout.text.strip() == "4", f"the slider reads {readout.text!r}"
    label = cell.find_element(By.CSS_SELECTOR, ".widget-slider .widget-label")
    assert label.text.strip() == "tile", f"the slider's description is {label.text!r}"
    pg.wait(lambda d: _widget_tiles(cell) == ["4"], 30, "the first run's table (tile 4) in the widget")
    assert not cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"), \
        "the cell shows an error or stderr"

    # move it as a person would: focus the handle, one step right
    handle = cell.find_element(By.CSS_SELECTOR, ".widget-slider .noUi-handle")
    handle.click()
    handle.send_keys(Keys.ARROW_RIGHT)
    pg.wait(lambda d: readout.text.strip() == "8", 10, "the slider to read 8")
    pg.wait(lambda d: _widget_tiles(cell) == ["8"], RERUN_TIMEOUT,
            "the re-run's table (tile 8) to replace the first one in the widget")
    assert len(cell.find_elements(By.CSS_SELECTOR, ".widget-output table")) == 1, \
        "the widget shows more than the latest result"
    cell.location_once_scrolled_into_view
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOT))
    shutil.copy(SCREENSHOT, pg.shots / "interact.png")
    print(f"\n[screenshot] {SCREENSHOT.relative_to(REPO)}")
