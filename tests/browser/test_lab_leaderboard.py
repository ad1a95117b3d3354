"""`%leaderboard` in JupyterLab (issue 35): the board's table and its chart of the students' times against
the reference ladder, rendered by JupyterLab in headless Chromium from the kernel's own output, the board
served over HTTP as the board's API gives it (GET api/boards/PROBLEM, a student's token).

docs/screenshots/leaderboard.png is the cell as this test leaves it: a run with CUDALAB_SCREENSHOTS=1 writes
it (it is committed; a plain run leaves the tree as it was).
"""
from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import REPO, serving
from test_lab_browser import Lab, Page, _by, browser, run_all_cells, skip_if_missing  # noqa: F401 (a fixture)

TOKEN = "student-token-lab"
PROBLEM = "ps2.matmul"
LEADERBOARD = f"%leaderboard {PROBLEM}"
SCREENSHOT = REPO / "docs" / "screenshots" / "leaderboard.png"

pytestmark = pytest.mark.timeout(240)
# A student's view of a class board (the contract's shape: their own entry, two anonymised neighbours each
# side, the ladder run beside them, a failed entry with its finding).
BOARD = {
    "problem": PROBLEM, "title": "Tiled matrix multiply", "gpu": "NVIDIA H200", "clock_mhz": 1980,
    "run_at": "2026-11-29T10:00:00+00:00", "backend": "cuda",
    "references": [{"variant": "naive", "median_ms": 4.1, "ci95_rel": 0.01},
                   {"variant": "tiled", "median_ms": 1.9, "ci95_rel": 0.01},
                   {"variant": "fast", "median_ms": 0.62, "ci95_rel": 0.008},
                   {"variant": "cublas", "median_ms": 0.21, "ci95_rel": 0.006}],
    "entries": [{"rank": 4, "tied": False, "user": "student 12", "you": False, "name": "regtile",
                 "median_ms": 0.55, "ci95_rel": 0.01, "score": 2.62, "submitted_at": "2026-11-29T09:02:00+00:00"},
                {"rank": 5, "tied": True, "user": "student 3", "you": False, "name": "tiled32",
                 "median_ms": 1.31, "ci95_rel": 0.02, "score": 6.24, "submitted_at": "2026-11-29T09:11:00+00:00"},
                {"rank": 5, "tied": True, "user": "you", "you": True, "name": "mytiled",
                 "median_ms": 1.33, "ci95_rel": 0.02, "score": 6.33, "submitted_at": "2026-11-29T09:14:00+00:00"},
                {"rank": 7, "tied": False, "user": "student 8", "you": False, "name": "shared",
                 "median_ms": 1.87, "ci95_rel": 0.015, "score": 8.9, "submitted_at": "2026-11-29T09:20:00+00:00"},
                {"rank": 8, "tied": False, "user": "student 1", "you": False, "name": "naive2",
                 "median_ms": 3.95, "ci95_rel": 0.01, "score": 18.8, "submitted_at": "2026-11-29T09:31:00+00:00"}],
    "failed": [{"user": "you", "name": "mytiled_v0", "finding": "at the hidden size --m 1000 --n 1100 --k 900 "
                "(seed 7): CheckError: wrong at C[999][0]", "line": 14}],
    "queue": 3,
}


class BoardAPI:
    """GET api/boards/PROBLEM for the token TOKEN; 401 or 404 otherwise."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.headers.get("Authorization") != f"token {TOKEN}":
                    status, body = 401, {"error": "invalid token"}
                elif self.path.endswith(f"/api/boards/{PROBLEM}"):
                    status, body = 200, BOARD
                else:
                    status, body = 404, {"error": "no such route"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/board/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def page(tmp_path_factory, browser):  # noqa: F811 (the browser fixture)
    skip_if_missing()
    api = BoardAPI()
    try:
        env = {"CUDALAB_BOARD_URL": api.url, "CUDALAB_BOARD_TOKEN": TOKEN}
        with serving(Lab(tmp_path_factory.mktemp("lab"), cells=[LEADERBOARD], env=env)) as lab:
            pg = Page(browser, lab, tmp_path_factory.mktemp("screenshots"))
            run_all_cells(pg)
            yield pg
    finally:
        api.close()


def test_leaderboard_table_and_chart_in_jupyterlab(page: Page):
    By = _by()
    cell = page.cell(LEADERBOARD)
    assert not cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"), \
        page.snapshot("stderr")
    table = page.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table"), 30,
                      "the board's table")[0]
    text = table.text
    for entry in BOARD["entries"]:
        assert entry["name"] in text, text + page.snapshot("table")
    page.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"),
              30, "the board's chart (.vega-embed with a svg or canvas)")
    if os.environ.get("CUDALAB_SCREENSHOTS") == "1":
        # the window grown to the whole cell (table and chart), as a student scrolls through it
        page.driver.set_window_size(1400, 1900)
        page.driver.execute_script("arguments[0].scrollIntoView(true);", cell)
        page.wait(lambda d: cell.size["height"] < 1800, 10, "the cell to fit the window")
        cell.screenshot(str(SCREENSHOT))
