"""`%leaderboard` in JupyterLab (issue 35): the board's table and its chart of the students' times against
the reference ladder, rendered by JupyterLab in headless Chromium from the kernel's own output. The board
is the real one: `python -m cudalab_board serve` with its runner (the binary under test; the CPU backend
where there is no GPU) behind the fake hub API of tests/board/test_service.py, five kernels of four students
submitted through its API and run at the problem's hidden sizes (three ranked; two failed: a barrier missing, a lesson check),
then one student's `%leaderboard` with that student's token.

docs/screenshots/leaderboard.png is the cell as this test leaves it: a run with CUDALAB_SCREENSHOTS=1 writes
it (it is committed; a plain run leaves the tree as it was).
"""
from __future__ import annotations

import os
import sys
import time

import pytest
import requests

from conftest import REPO, kernel_binary, serving
from test_board_browser import NAIVE
from test_lab_browser import Lab, Page, _by, browser, run_all_cells, skip_if_missing  # noqa: F401 (a fixture)

sys.path.insert(0, str(REPO / "tests" / "board"))
from board_runs import HIDDEN_MATMUL, TILED_MATMUL  # noqa: E402
from test_service import auth, hub, start_service  # noqa: E402,F401 (a fixture)

PROBLEM = "t.matmul"
LEADERBOARD = f"%leaderboard {PROBLEM}"
SCREENSHOT = REPO / "docs" / "screenshots" / "leaderboard.png"
# (token, the kernel's name, its source): the fake hub's students s0…s3; s0, whose view is shown, also
# submitted an earlier version that forgot the second barrier (the next phase overwrites tiles still read)
SUBMISSIONS = [("tok-s0", "mytiled", TILED_MATMUL),
               ("tok-s0", "mytiled_v0", TILED_MATMUL.replace("            sum += As[ty][k] * Bs[k][tx];\n        __syncthreads();",
                                                             "            sum += As[ty][k] * Bs[k][tx];")),
               ("tok-s1", "unrolled", TILED_MATMUL.replace("        for (int k = 0; k < TILE; k++)",
                                                           "        #pragma unroll\n        for (int k = 0; k < TILE; k++)")),
               # reads A and B from global memory in its loop: the lesson check fails it
               ("tok-s2", "naive2", NAIVE.format(name="NAME")),
               ("tok-s3", "restrict", TILED_MATMUL.replace("const float *A, const float *B, float *C",
                                                          "const float *__restrict__ A, const float *__restrict__ B, "
                                                          "float *__restrict__ C"))]
EXPECTED = ["ranked", "failed", "ranked", "failed", "ranked"]
FINISHED = ("ranked", "failed", "error")

# serial: the board runs its submissions while the test waits for them
pytestmark = [pytest.mark.timeout(480), pytest.mark.serial]


@pytest.fixture(scope="module")
def board(tmp_path_factory, hub):  # noqa: F811 (the hub fixture)
    """(the board's base URL, its board document for s0) once every submission has finished."""
    assert len({source for _, _, source in SUBMISSIONS}) == len(SUBMISSIONS), "an edit of TILED_MATMUL did not apply"
    tmp = tmp_path_factory.mktemp("board")
    proc, base = start_service(tmp, hub, problems_json={PROBLEM: HIDDEN_MATMUL},
                               runner_env={"CUDALAB_BIN": str(kernel_binary())})
    try:
        ids = []
        for token, name, source in SUBMISSIONS:
            r = requests.post(base + "api/submissions", headers=auth(token), timeout=10,
                              json={"problem": PROBLEM, "name": name, "family": "matmul",
                                    "source": source.replace("NAME", name), "flags": ""})
            assert r.status_code == 201, r.text
            ids.append((token, r.json()["id"]))
        deadline = time.monotonic() + 360
        while True:
            subs = [requests.get(base + f"api/submissions/{i}", headers=auth(t), timeout=10).json() for t, i in ids]
            states = [sub["status"] for sub in subs]
            if all(s in FINISHED for s in states):
                break
            assert time.monotonic() < deadline, f"the runner did not finish the submissions: {states}"
            time.sleep(1)
        if states != EXPECTED:
            raise AssertionError("\n".join(f"{sub['name']}: {sub['status']}: {sub['finding']}" for sub in subs))
        doc = requests.get(base + f"api/boards/{PROBLEM}", headers=auth(SUBMISSIONS[0][0]), timeout=10).json()
        yield base, doc
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def page(tmp_path_factory, browser, board):  # noqa: F811 (the browser fixture)
    skip_if_missing()
    base, _ = board
    env = {"CUDALAB_BOARD_URL": base, "CUDALAB_BOARD_TOKEN": SUBMISSIONS[0][0]}
    with serving(Lab(tmp_path_factory.mktemp("lab"), cells=[LEADERBOARD], env=env)) as lab:
        pg = Page(browser, lab, tmp_path_factory.mktemp("screenshots"))
        run_all_cells(pg)
        yield pg


def test_leaderboard_table_and_chart_in_jupyterlab(page: Page, board):
    By = _by()
    _, doc = board
    cell = page.cell(LEADERBOARD)
    assert not cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"), \
        page.snapshot("stderr")
    table = page.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table"), 30,
                      "the board's table")[0]
    text = table.text
    assert doc["entries"] and doc["failed"], doc
    for entry in doc["entries"] + doc["failed"]:
        assert entry["name"] in cell.text, cell.text + page.snapshot("table")
    assert "mytiled_v0" in cell.text and "you" in text, cell.text
    page.wait(lambda d: cell.find_elements(By.CSS_SELECTOR, ".vega-embed svg.marks, .vega-embed canvas.marks"),
              30, "the board's chart (.vega-embed with a svg or canvas)")
    if os.environ.get("CUDALAB_SCREENSHOTS") == "1":
        # the window grown to the whole cell (table and chart), as a student scrolls through it
        page.driver.set_window_size(1400, 1900)
        page.driver.execute_script("arguments[0].scrollIntoView(true);", cell)
        page.wait(lambda d: cell.size["height"] < 1800, 10, "the cell to fit the window")
        cell.screenshot(str(SCREENSHOT))
