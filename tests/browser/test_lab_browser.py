"""The notebooks as a student sees them: JupyterLab (requirements-lab.txt) in headless Chromium.

Once per module: JupyterLab starts on a free port with a known token, a private Jupyter path
holding the cudalab kernelspec (the binary under test, as tests/conftest.py writes it) and private
settings; Chromium opens a small notebook written here, waits for its cudalab kernel, and runs every
cell through Run → Run All Cells. The tests then check in the page what a person would see:

  * each result's HTML table is rendered in the output area, with its header cells, and a sweep's
    table has one row per point (its final table, not the "running k of n" progress);
  * each sweep keeps its own table: a later sweep's update_display_data must not reach it;
  * each sweep's chart is drawn: JupyterLab 4.6 renders our application/vnd.vegalite.v5+json with
    its Vega extension (not the image/svg+xml fallback) into a .vega-embed canvas, which must hold
    the axes and labels and the series' coloured marks, not only exist;
  * no cell shows an error or writes to stderr (both render as application/vnd.jupyter.stderr).

It skips, saying why, without Debian's chromium and chromium-driver (`scripts/setup.sh test`
installs them when it can), Selenium or JupyterLab. Lab, its kernels, chromedriver and the
browser are stopped at the end, and any process of theirs still alive is killed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from conftest import free_tcp_ports, kill_survivors, serving, write_kernelspec

LAB_START_TIMEOUT = 60      # seconds for the server to answer
PAGE_TIMEOUT = 60           # seconds for the Lab page and the notebook to load
RUN_TIMEOUT = 90            # seconds for every cell to finish

# a bar chart: 3 variants (2 would be no chart), each point 2^22 flops (a smaller one times overheads: no chart)
EARLY_SWEEP = "%matmul --size 128 --variant naive,tiled,cublas"
SWEEP = "%matmul --size 128 --variant tiled --tile 4,8,16"        # a line chart
SWEEPS = [EARLY_SWEEP, SWEEP]
CELLS = [
    "%histo --text \"programming massively parallel processors\" --bin-width 4",
    EARLY_SWEEP,
    SWEEP,
]
EARLY_VARIANTS = ["cublas", "naive", "tiled"]
# a header cell each cell's first table must have
HEADER = {CELLS[0]: "count", EARLY_SWEEP: "variant", SWEEP: "variant"}
# the header cells of the last sweep's result table, and the values swept (the chart's x axis)
SWEEP_HEADERS = {"variant", "tile", "GFLOP/s", "check"}
SWEEP_TILES = ["4", "8", "16"]

pytestmark = pytest.mark.timeout(240)


# ---------------------------------------------------------------- what is needed, or why we skip

def _find(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n) or (n if os.path.isabs(n) and os.access(n, os.X_OK) else None)
        if p:
            return p
    return None


def _missing() -> str | None:
    """Why this test cannot run here, or None."""
    why = []
    if _find("chromium", "chromium-browser", "/usr/lib/chromium/chromium") is None:
        why.append("no chromium (apt-get install chromium)")
    if _find("chromedriver", "/usr/lib/chromium/chromedriver") is None:
        why.append("no chromedriver (apt-get install chromium-driver)")
    if importlib.util.find_spec("selenium") is None:
        why.append("selenium is not importable (requirements-test.txt)")
    if importlib.util.find_spec("jupyterlab") is None:
        why.append("JupyterLab is not importable (requirements-lab.txt)")
    return "; ".join(why) or None


def skip_if_missing(**modules: str) -> None:
    """Skips, saying why on stderr, where the browser test cannot run or a module it needs beyond
    the usual ones (name=where it comes from) is not importable."""
    why = [_missing()] + [f"{m} is not importable ({src})" for m, src in modules.items()
                          if importlib.util.find_spec(m) is None]
    why = "; ".join(filter(None, why))
    if why:
        msg = f"browser test skipped: {why}"
        print(f"\n{msg}", file=sys.stderr)
        pytest.skip(msg)


# ---------------------------------------------------------------- JupyterLab

def _notebook(path: Path, sources: list[str], kernel: tuple[str, str, str]) -> None:
    cells = [{"cell_type": "markdown", "id": "intro", "metadata": {},
              "source": "# cudalab in the browser"}]
    cells += [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
               "outputs": [], "source": src} for i, src in enumerate(sources)]
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
          "metadata": {"kernelspec": {"name": kernel[0], "display_name": kernel[1],
                                      "language": kernel[2]},
                       "language_info": {"name": kernel[2]}}}
    path.write_text(json.dumps(nb, indent=1))


def _settings(user_settings: Path) -> None:
    """No news, no update checks: nothing that pops up over the notebook or calls out."""
    d = user_settings / "@jupyterlab" / "apputils-extension"
    d.mkdir(parents=True)
    (d / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))


CUDALAB_KERNEL = ("cudalab", "cudalab (CUDA)", "cudalab")


class Lab:
    """JupyterLab serving one notebook, browser.ipynb, of the code cells `cells` on `kernel`
    (kernelspec name, display name, language), its server's environment plus `env`."""

    def __init__(self, root: Path, cells: list[str] = CELLS,
                 kernel: tuple[str, str, str] = CUDALAB_KERNEL, env: dict[str, str] | None = None):
        self.root = root
        self.cells = cells
        self.kernel = kernel
        self.extra_env = env or {}
        self.port = free_tcp_ports(1)[0]
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "lab.log"
        self.proc: subprocess.Popen | None = None
        self.seen: dict[int, psutil.Process] = {}    # every descendant noticed, for the teardown

    def start(self) -> None:
        data = self.root / "jupyter" / "share" / "jupyter"
        write_kernelspec(data, logos=True)
        notebooks = self.root / "notebooks"
        notebooks.mkdir()
        _notebook(notebooks / "browser.ipynb", self.cells, self.kernel)
        _settings(self.root / "user-settings")
        env = {**os.environ,
               "JUPYTER_PATH": str(data),
               "JUPYTER_CONFIG_DIR": str(self.root / "config"),
               "JUPYTER_RUNTIME_DIR": str(self.root / "runtime"),
               "JUPYTER_DATA_DIR": str(self.root / "data"),      # the notebook-signing key
               "JUPYTER_PLATFORM_DIRS": "1",
               "CUDALAB_BACKEND": os.environ.get("CUDALAB_BACKEND", "cpu"), **self.extra_env}
        env.pop("CUDALAB_DEBUG", None)
        args = [sys.executable, "-m", "jupyterlab", "--no-browser",
                f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={notebooks}",
                f"--IdentityProvider.token={self.token}",
                f"--LabServerApp.user_settings_dir={self.root / 'user-settings'}",
                f"--LabServerApp.workspaces_dir={self.root / 'workspaces'}",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
                "--ServerApp.log_level=INFO"]
        if os.getuid() == 0:
            args.append("--allow-root")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, cwd=notebooks, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + LAB_START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"JupyterLab exited {self.proc.returncode} at start:\n"
                                     f"{self.log_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}",
                                            timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not answer within {LAB_START_TIMEOUT} s:\n"
                                     f"{self.log_text()}")
            time.sleep(0.25)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:] if self.log_path.exists() else ""

    def notice_children(self) -> None:
        if self.proc is None:
            return
        try:
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                self.seen.setdefault(p.pid, p)
        except psutil.NoSuchProcess:
            pass

    def stop(self) -> list[str]:
        """Asks the server to shut down (it stops its kernels), then kills whatever is left."""
        left = []
        if self.proc is None:
            return left
        self.notice_children()
        if self.proc.poll() is None:
            try:
                req = urllib.request.Request(f"{self.url}/api/shutdown", method="POST",
                                             headers={"Authorization": f"token {self.token}"})
                urllib.request.urlopen(req, timeout=5).close()
            except OSError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                left.append(f"JupyterLab pid {self.proc.pid} still running 15 s after /api/shutdown")
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        left += kill_survivors(self.seen.values(), "JupyterLab")
        self.log.close()
        return left


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing()
    with serving(Lab(tmp_path_factory.mktemp("lab"))) as server:
        yield server


# ---------------------------------------------------------------- the browser

@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing()
    tmp_path = tmp_path_factory.mktemp("chromium")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = _find("chromium", "chromium-browser", "/usr/lib/chromium/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,1000", "--no-first-run", "--no-default-browser-check",
              "--disable-extensions", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--metrics-recording-only",
              f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=_find("chromedriver", "/usr/lib/chromium/chromedriver"),
                      log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=opts)
    driver_pid = service.process.pid if service.process else None
    seen = {}
    if driver_pid:
        seen[driver_pid] = psutil.Process(driver_pid)
        seen.update({p.pid: p for p in seen[driver_pid].children(recursive=True)})
    try:
        yield driver
    finally:
        if driver_pid:
            try:
                seen.update({p.pid: p for p in psutil.Process(driver_pid).children(recursive=True)})
            except psutil.NoSuchProcess:
                pass
        try:
            driver.quit()
        finally:
            kill_survivors(seen.values(), "the browser driver")


# ---------------------------------------------------------------- the notebook, run in the page

def _by():
    from selenium.webdriver.common.by import By
    return By


class Page:
    """The browser on the notebook after Run All Cells; .cells are its code cells, in order."""

    def __init__(self, driver, lab: Lab, shots: Path):
        self.driver, self.lab, self.shots = driver, lab, shots
        self.sources = lab.cells

    def snapshot(self, name: str = "page") -> str:
        shot = self.shots / f"{name}.png"
        try:
            self.driver.save_screenshot(str(shot))
        except Exception:  # noqa: BLE001 — a diagnostic only
            pass
        try:
            console = "\n".join(f"{e['level']} {e['message'][:300]}"
                                for e in self.driver.get_log("browser")[-20:])
        except Exception:  # noqa: BLE001
            console = "(no console log)"
        return (f"\nscreenshot: {shot}\nbrowser console:\n{console}\n"
                f"JupyterLab log (tail):\n{self.lab.log_text()}")

    def wait(self, cond, timeout: float, what: str):
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.25).until(cond)
        except TimeoutException:
            pytest.fail(f"timed out after {timeout} s waiting for {what}" + self.snapshot())

    @property
    def cells(self) -> list:
        return self.driver.find_elements(_by().CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")

    def cell(self, source: str):
        return self.cells[self.sources.index(source)]


def run_all_cells(pg: Page) -> None:
    """Opens the Lab's notebook, waits for its kernel, runs Run → Run All Cells as a
    person would, and waits until every cell has run (its prompt [n]:)."""
    from selenium.webdriver.support import expected_conditions as EC
    By = _by()
    driver, lab = pg.driver, pg.lab
    driver.get(f"{lab.url}/lab/tree/browser.ipynb?token={lab.token}&reset")
    pg.wait(EC.presence_of_all_elements_located((By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")),
            PAGE_TIMEOUT, "the notebook's code cells")
    # ready = the notebook's session has its kernel, connected and idle (Run All before that
    # races the session's start and can end in a Select Kernel dialog with no cell run)
    pg.wait(lambda d: d.execute_script(
        "const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        "const sc = w && w.sessionContext, k = sc && sc.session && sc.session.kernel;"
        "return !!(sc && sc.isReady && k && k.name === arguments[0] &&"
        "          k.connectionStatus === 'connected' && k.status === 'idle');", lab.kernel[0]),
            PAGE_TIMEOUT, f"the notebook's {lab.kernel[0]} kernel to be connected and idle")
    lab.notice_children()
    dialogs = driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog")
    assert not dialogs, "a dialog is open over the notebook: " + dialogs[0].text + pg.snapshot()

    # Run → Run All Cells, as a person would
    pg.wait(EC.element_to_be_clickable(
        (By.XPATH, "//li[contains(@class,'lm-MenuBar-item')][.//*[normalize-space(text())='Run']]")),
        PAGE_TIMEOUT, "the Run menu").click()
    pg.wait(EC.element_to_be_clickable(
        (By.XPATH, "//ul[contains(@class,'lm-Menu-content')]/li[contains(@class,'lm-Menu-item')]"
                   "[.//*[contains(@class,'lm-Menu-itemLabel')][normalize-space(.)='Run All Cells']]")),
        10, "Run All Cells in the Run menu").click()

    def all_ran(d):
        dialogs = d.find_elements(By.CSS_SELECTOR, ".jp-Dialog")
        if dialogs:
            pytest.fail("a dialog opened instead of the cells running: " + dialogs[0].text +
                        pg.snapshot())
        prompts = [e.text.strip() for e in
                   d.find_elements(By.CSS_SELECTOR, ".jp-CodeCell .jp-InputArea-prompt")]
        return len(prompts) == len(pg.sources) and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts)

    pg.wait(all_ran, RUN_TIMEOUT, "every cell to run (prompts [n]:)")
    lab.notice_children()


@pytest.fixture(scope="module")
def page(lab: Lab, browser, tmp_path_factory: pytest.TempPathFactory) -> Page:
    By = _by()
    pg = Page(browser, lab, tmp_path_factory.mktemp("screenshots"))
    t0 = time.monotonic()
    run_all_cells(pg)
    # rendering is asynchronous: the sweeps' final tables replace their progress tables, the charts
    # are drawn by vega-embed after the output is added
    for src in SWEEPS:
        pg.wait(lambda d: "running" not in pg.cell(src).find_element(
            By.CSS_SELECTOR, ".jp-RenderedHTMLCommon h4").text, 20, f"the final table of {src}")
    print(f"\n[timing] browser: page open to every cell run {time.monotonic() - t0:.1f} s")
    yield pg
    pg.snapshot("final")


# ---------------------------------------------------------------- the checks

def test_no_error_output(page: Page):
    """No cell shows an error or writes to stderr (both render as application/vnd.jupyter.stderr)."""
    errs = page.driver.find_elements(
        _by().CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert not errs, "error output in the page:\n" + "\n---\n".join(e.text[:800] for e in errs)


def test_every_result_is_an_html_table(page: Page):
    By = _by()
    for i, cell in enumerate(page.cells):
        tables = cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output.jp-RenderedHTMLCommon table")
        assert tables, f"cell {i} ({CELLS[i]}) shows no HTML table; its output:\n{cell.text[:1500]}"
        headers = [th.text.strip() for th in tables[0].find_elements(By.CSS_SELECTOR, "th")]
        assert HEADER[CELLS[i]] in headers, f"cell {i} ({CELLS[i]}): table headers {headers}"


def _rows(cell) -> list[dict[str, str]]:
    By = _by()
    table = cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output.jp-RenderedHTMLCommon table")
    headers = [th.text.strip() for th in table.find_elements(By.CSS_SELECTOR, "th")]
    return [dict(zip(headers, (td.text.strip() for td in r.find_elements(By.CSS_SELECTOR, "td"))))
            for r in table.find_elements(By.CSS_SELECTOR, "tr") if r.find_elements(By.CSS_SELECTOR, "td")]


def test_sweep_table_has_a_row_per_point(page: Page):
    rows = _rows(page.cell(SWEEP))
    assert rows and SWEEP_HEADERS <= set(rows[0]), f"headers {list(rows[0]) if rows else []}"
    assert [r["tile"] for r in rows] == SWEEP_TILES, rows
    assert all(r["check"] == "ok" for r in rows), rows


def test_each_sweep_keeps_its_own_table(page: Page):
    """A sweep's progress table is one display updated in place (update_display_data by
    display_id); a later sweep must not update an earlier cell's table: display ids are unique."""
    rows = _rows(page.cell(EARLY_SWEEP))
    assert sorted(r["variant"] for r in rows) == EARLY_VARIANTS, (
        f"the table of `{EARLY_SWEEP}` shows {[(r.get('variant'), r.get('tile'), r.get('m')) for r in rows]}: "
        "another cell's sweep updated it (a display_id reused across cells?)")


@pytest.mark.parametrize("src", ["SWEEP", "EARLY_SWEEP"])
def test_sweep_chart_is_drawn(page: Page, src: str):
    """JupyterLab 4.6 renders our application/vnd.vegalite.v5+json with its Vega extension (not the
    image/svg+xml fallback) into a .vega-embed; the chart must be drawn, not just present."""
    By = _by()
    cell = page.cell(globals()[src])
    embed = page.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"),
                      30, f"the chart of {globals()[src]} (.vega-embed with a svg or canvas)")[0]
    assert embed.size["width"] > 200 and embed.size["height"] > 100, f"chart is {embed.size}"
    out = embed.find_element(By.XPATH, "ancestor::div[contains(@class,'jp-OutputArea-output')]")
    assert "jp-RenderedVegaLite" in out.get_attribute("class"), out.get_attribute("class")
    assert not cell.find_elements(By.CSS_SELECTOR, ".jp-RenderedSVG, .jp-RenderedImage"), \
        "the SVG fallback is shown as well as the Vega chart"
    if embed.tag_name == "svg":
        marks = embed.find_elements(By.CSS_SELECTOR, "g.mark-symbol path, g.mark-line path, g.mark-rect path")
        assert len(marks) >= 2, f"{len(marks)} marks in the chart's svg"
        return
    # vega-embed's default renderer is a canvas: no DOM to read, so count its pixels. Axes, ticks,
    # labels and title are grey or black; the series' line, points or bars are the coloured ink.
    def drawn(d):
        inked, coloured = d.execute_script(
            "const c = arguments[0], px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
            "let inked = 0, coloured = 0;"
            "for (let i = 0; i < px.length; i += 4) {"
            "  if (px[i+3] < 128) continue;"
            "  const hi = Math.max(px[i], px[i+1], px[i+2]), lo = Math.min(px[i], px[i+1], px[i+2]);"
            "  if (lo < 200) inked++;"
            "  if (hi - lo > 60) coloured++;"
            "}"
            "return [inked, coloured];", embed)
        return (inked, coloured) if inked > 1000 and coloured > 100 else None
    inked, coloured = page.wait(drawn, 20, "the chart's canvas to hold axes, labels and the coloured series")
    print(f"\n[chart] {globals()[src]}: canvas {embed.size}, {inked} inked pixels, {coloured} coloured")
