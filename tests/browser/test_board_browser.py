"""The class leaderboard's page (board/cudalab_board/static/) in headless Chromium, through a real
JupyterHub running the board service (`python -m cudalab_board serve`) as a managed service at
/services/board/, its runner timing submissions through the cudalab kernel under test (the CPU
backend here; a GPU host may run the same test on its GPU).

Once per module JupyterHub starts as tests/deploy/test_hub_live.py starts it (its proxy, the
course's one shared password), with the groups of cudalab_board/roles.py (an instructor, a class of
students), every user allowed to reach the service, and the service over a SQLite board in the
test's directory and a problems file of one small matmul. The students submit their kernels
through the API with their own hub tokens, as %submit does, and wait for the runner's results.
Chromium then logs in through the hub's login form, as a person does, first as the instructor and
then as students, and checks what each sees against what the API answers each of them:

  * the instructor: every ranked entry with its student's name, in the board's order, ties marked
    (=K), the GPU and the clock named, the chart (a dot per entry, a dashed line per reference of
    the ladder, in the order of their times), the failed submissions with their findings and lines,
    and the class view of the exercise after 30 students' kernels posted their quick checks at once
    (how many compile, pass, pass each lesson check; the histogram of their times; the most common
    findings with their lines);
  * a student: their own row highlighted as "you", anonymised neighbours ("student K"), no other
    student's name anywhere in the page, their own failures only, and no class view (neither its
    button nor through its address); a student with no ranked entry is told how to submit;
  * both: a new result arriving (an api/events message) updates the page without a reload (a mark
    left in the page's window survives), and text a student wrote (a finding holding a script)
    shows as text and runs nothing.

docs/screenshots/board.png and classview.png are the instructor's board and class view as this
test leaves them: a run with CUDALAB_SCREENSHOTS=1 writes them (they are committed; a plain run
leaves the tree as it was). It skips, saying why, where chromium,
chromedriver, Selenium, JupyterHub or configurable-http-proxy is missing.
"""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO, free_tcp_ports, kernel_binary, serving
from test_lab_browser import _by, browser, skip_if_missing  # noqa: F401 (a fixture)

sys.path.insert(0, str(REPO / "tests" / "deploy"))
sys.path.insert(0, str(REPO / "board"))
from test_hub_live import MARKER, Hub, _missing as hub_missing  # noqa: E402
from cudalab_board import roles  # noqa: E402

INSTRUCTOR = "prof"
STUDENT = "erin"
NO_ENTRY = "gus"                     # only a failed submission
CLASS = [f"s{k:02d}" for k in range(30)] + ["alice", "bob", "carol", "dave", STUDENT, NO_ENTRY, "heidi"]
PROBLEM = "ps2.matmul"
EXERCISE = "matmul"
PAGE_TIMEOUT = 30           # seconds for the login, the page and its first fetches
RUN_TIMEOUT = 240           # seconds for the runner to finish the students' submissions (2 busy cores)
LIVE_TIMEOUT = 60           # seconds for a new submission's result, or a quick check, to show in the page
SCREENSHOTS = REPO / "docs" / "screenshots"
HOSTILE_TEXT = "<script>window.__pwned=2</script><img src=x onerror=\"window.__pwned=1\">"

# serial: a live hub, the board's runner and Chromium, with deadlines for what the page shows
pytestmark = [pytest.mark.timeout(600), pytest.mark.serial]

# hidden sizes the CPU runner takes in seconds; no rate limit, so that a student may resubmit at once
PROBLEMS = {PROBLEM: {"family": "matmul", "title": "Tiled matrix multiply", "exercise": EXERCISE,
                      "sizes": ["--m 67 --n 45 --k 33"], "seeds": [31], "flags": "",
                      "references": ["naive", "tiled"], "bound": "flops", "rate_limit_s": 0}}

TILED = """#define TILE {tile}
__global__ void {name}(const float *A, const float *B, float *C, int M, int N, int K)
{{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {{
        As[ty][tx] = row < M && p * TILE + tx < K ? A[row * K + p * TILE + tx] : 0.0f;
        Bs[ty][tx] = col < N && p * TILE + ty < K ? B[(p * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        {inner}for (int k = 0; k < TILE; k++) {{
            sum += As[ty][k] * Bs[k][tx];{in_loop}
        }}
        __syncthreads();
    }}
    if (row < M && col < N)
        C[row * N + col] = sum{wrong};
}}
"""


NAIVE = """__global__ void {name}(const float *A, const float *B, float *C, int M, int N, int K)
{{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {{
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }}
}}
"""


def tiled(name: str, wrong: str = "", inner: str = "", in_loop: str = "") -> str:
    """The lecture's tiled kernel (16 × 16 tiles, the family's launch); `wrong` is added to its
    result, `inner` goes before its inner loop and `in_loop` into it (the same kernel, slower or not)."""
    return TILED.format(name=name, tile=16, wrong=wrong, inner=inner, in_loop=in_loop)


def naive(name: str) -> str:
    return NAIVE.format(name=name)


# who submits what before the page opens: (student, kernel name, source)
# (the naive kernel fails the exercise's lesson check: it does not tile)
SUBMISSIONS = [("alice", "tiled16", tiled("tiled16")), ("bob", "rowcol", naive("rowcol")),
               ("carol", "unrolled", tiled("unrolled", inner="#pragma unroll\n        ")),
               ("dave", "synced", tiled("synced", in_loop="\n            __syncthreads();")),
               (STUDENT, "erin_v1", tiled("erin_v1")),
               (NO_ENTRY, "offbyone", tiled("offbyone", wrong=" + (row == 5 ? 1.0f : 0.0f)"))]
STATUSES = ["ranked", "failed", "ranked", "ranked", "ranked", "failed"]


def quick_check(k: int) -> dict:
    """Student k's kernel's quick-check summary, as a kernel posts it: 28 of 30 compile, 23 pass,
    25 keep the barrier before the read, 5 share the most common finding."""
    compiled, passed = k < 28, k < 23
    findings = []
    if 23 <= k < 28 or k < 2:
        findings.append({"text": "reads As before the barrier", "line": 11})
    if k == 29:
        findings.append({"text": HOSTILE_TEXT, "line": 3})
    return {"exercise": EXERCISE, "name": "mytiled", "compiled": compiled, "passed": passed,
            "lesson": {"barrier_before_read": k < 25} if compiled else {},
            "time_ms": 0.3 + 0.05 * k if passed else None, "findings": findings}


def _http(method: str, url: str, token: str, body: dict | None = None) -> tuple[int, dict | None]:
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 method=method, headers={"Authorization": f"token {token}",
                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    return status, json.loads(raw) if raw else None


class BoardHub(Hub):
    """The course's hub with the board service, its groups, and every user allowed to reach it."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.service_port = free_tcp_ports(1)[0]
        self.problems = root / "board-problems.json"
        self.problems.write_text(json.dumps(PROBLEMS))
        self.tokens: dict[str, str] = {}

    def settings(self) -> dict[str, object]:
        settings = super().settings()
        settings["JupyterHub.services"] = settings["JupyterHub.services"] + [{
            "name": roles.SERVICE_NAME, "url": f"http://127.0.0.1:{self.service_port}",
            "oauth_no_confirm": True,
            "command": [sys.executable, "-m", "cudalab_board", "serve",
                        "--db", f"sqlite:///{self.root / 'board.sqlite'}", "--problems", str(self.problems),
                        "--port", str(self.service_port), "--class-view"],
            "cwd": str(self.root),
            "environment": {"PYTHONPATH": str(REPO / "board"),
                            "CUDALAB_BIN": str(kernel_binary().resolve()),
                            "CUDALAB_BACKEND": os.environ.get("CUDALAB_BACKEND", "cpu"),
                            "HOME": str(self.root),
                            MARKER: self.marker},   # the service, its runner and kernels: stopped with the hub
        }]
        settings["JupyterHub.load_groups"] = {roles.INSTRUCTORS: {"users": [INSTRUCTOR]},
                                              roles.STUDENTS: {"users": CLASS}}
        # the test's service also hands each user a token of their own, as their server has one
        test_role = {**settings["JupyterHub.load_roles"][0]}
        test_role["scopes"] = test_role["scopes"] + ["tokens"]
        settings["JupyterHub.load_roles"] = [test_role, *settings["JupyterHub.load_roles"][1:],
                                             {"name": "user", "scopes": ["self", roles.ACCESS_SCOPE]}]
        return settings

    @property
    def board_url(self) -> str:
        return f"{self.url}/services/{roles.SERVICE_NAME}/"

    def user_token(self, user: str) -> str:
        """The user's own hub token (what JUPYTERHUB_API_TOKEN holds in their server)."""
        if user not in self.tokens:
            status, body = self.api("POST", f"/users/{user}/tokens", {"note": "board browser test",
                                                                    "expires_in": 3600})
            assert status == 201, body
            self.tokens[user] = body["token"]
        return self.tokens[user]

    def call(self, user: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        """The board's API as `user`."""
        return _http(method, self.board_url + path, self.user_token(user), body)

    def submit(self, user: str, name: str, source: str) -> int:
        status, body = self.call(user, "POST", "api/submissions",
                                 {"problem": PROBLEM, "name": name, "family": "matmul", "source": source,
                                  "flags": ""})
        assert status == 201, body
        return body["id"]

    def wait_done(self, user: str, ids: list[int]) -> list[dict]:
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            subs = [self.call(user, "GET", f"api/submissions/{i}")[1] for i in ids]
            if all(s["status"] not in ("queued", "running") for s in subs):
                return subs
            if time.monotonic() > deadline:
                pytest.fail(f"submissions not run within {RUN_TIMEOUT} s: {subs}\n{self.log_text()}")
            time.sleep(1)

    def board(self, user: str) -> dict:
        status, body = self.call(user, "GET", f"api/boards/{PROBLEM}")
        assert status == 200, body
        return body


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing()
    why = hub_missing()
    if why:
        pytest.skip(f"board browser test skipped: {why}")
    with serving(BoardHub(tmp_path_factory.mktemp("hub"))) as server:
        for user in CLASS + [INSTRUCTOR]:
            status, body = server.api("POST", f"/users/{user}")
            assert status in (201, 409), body
        ids = [server.submit(user, name, source) for user, name, source in SUBMISSIONS]
        subs = server.wait_done(INSTRUCTOR, ids)
        assert [s["status"] for s in subs] == STATUSES, \
            [(s["status"], s["finding"]) for s in subs]
        yield server


# ---------------------------------------------------------------- the page, as a person uses it

class BoardPage:
    def __init__(self, driver, hub: BoardHub):
        self.driver, self.hub = driver, hub

    def wait(self, cond, timeout: float, what: str):
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(cond)
        except TimeoutException:
            pytest.fail(f"timed out after {timeout} s waiting for {what}" + self.diagnostics())

    def diagnostics(self) -> str:
        try:
            console = "\n".join(f"{e['level']} {e['message'][:300]}" for e in self.driver.get_log("browser")[-20:])
        except Exception:  # noqa: BLE001 — a diagnostic only
            console = "(no console log)"
        return f"\nbrowser console:\n{console}\npage text:\n{self.text()[:2000]}\n{self.hub.log_text()}"

    def text(self) -> str:
        return self.driver.find_element(_by().TAG_NAME, "body").text

    def log_in(self, user: str, entries: bool = True) -> None:
        """Through the hub's login form, as a person does, in a browser of their own (no cookie of
        the last user's); lands on the board's page and waits until it follows api/events."""
        By = _by()
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.driver.get(f"{self.hub.url}/hub/login?next=/services/{roles.SERVICE_NAME}/")
        self.wait(lambda d: d.find_elements(By.ID, "username_input"), PAGE_TIMEOUT, "the hub's login form")
        self.driver.find_element(By.ID, "username_input").send_keys(user)
        self.driver.find_element(By.ID, "password_input").send_keys(self.hub.password)
        self.driver.find_element(By.ID, "login_submit").click()
        shown = "#entries tbody tr[data-rank]" if entries else "#entries tbody tr.empty"
        self.wait(lambda d: d.current_url.startswith(self.hub.board_url) and d.find_elements(By.CSS_SELECTOR, shown),
                  PAGE_TIMEOUT, f"the board's page with its {'entries' if entries else 'empty table'}, logged in as {user}")
        self.driver.execute_script("window.__loaded_once = true;")   # a reload would lose it
        self.wait(lambda d: d.find_element(By.ID, "live").text == "live", PAGE_TIMEOUT,
                  "the page to follow api/events")

    def rows(self, table: str = "entries") -> list[dict[str, str]]:
        """The table's rows as {header: text}, read in one go in the page (a live update replaces
        the rows between two WebDriver calls)."""
        return self.driver.execute_script("""
            const t = document.getElementById(arguments[0]);
            const heads = [...t.querySelectorAll("thead th")].map((th) => th.innerText.trim());
            return [...t.querySelectorAll("tbody tr[data-user]")].map((tr) => {
              const row = {_class: tr.className};
              [...tr.querySelectorAll("td")].forEach((td, i) => { row[heads[i]] = td.innerText.trim(); });
              return row;
            });""", table)

    def screenshot(self, name: str) -> None:
        """docs/screenshots/NAME.png: the whole page (the window grown to it), as a projector shows it."""
        width, height = self.driver.execute_script(
            "return [window.outerWidth, document.documentElement.scrollHeight + (window.outerHeight - window.innerHeight)];")
        self.driver.set_window_size(width, max(height, 600))
        if os.environ.get("CUDALAB_SCREENSHOTS") == "1":
            self.driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

    def not_reloaded_and_nothing_ran(self) -> None:
        got = self.driver.execute_script("return [window.__loaded_once === true, window.__pwned];")
        assert got[0], "the page was reloaded" + self.diagnostics()
        assert got[1] is None, f"a student's text ran as script (window.__pwned = {got[1]})"


@pytest.fixture(scope="module")
def page(hub: BoardHub, browser) -> BoardPage:  # noqa: F811 (the fixture imported above)
    return BoardPage(browser, hub)


def shown(board: dict) -> list[tuple[str, str, str, str]]:
    """What the table shows of the API's entries: (rank, student, kernel, median ms)."""
    def ms(v):
        return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3g}"
    return [(f"={e['rank']}" if e["tied"] else str(e["rank"]), e["user"], e["name"], ms(e["median_ms"]))
            for e in board["entries"]]


def table(page: BoardPage) -> list[tuple[str, str, str, str]]:
    return [(r["rank"], r["student"].removesuffix(" (you)"), r["kernel"], r["median ms"]) for r in page.rows()]


def test_instructor_sees_every_name_the_ties_the_gpu_the_chart_and_the_failures(page: BoardPage):
    By = _by()
    page.log_in(INSTRUCTOR)
    picker = [o.get_attribute("value") for o in page.driver.find_elements(By.CSS_SELECTOR, "#problem option")]
    assert picker == list(PROBLEMS), picker
    board = page.hub.board(INSTRUCTOR)
    assert {e["user"] for e in board["entries"]} == {"alice", "carol", "dave", STUDENT}
    assert table(page) == shown(board)
    assert [r["_class"].split().count("tied") for r in page.rows()] == [int(e["tied"]) for e in board["entries"]]
    run = page.driver.find_element(By.ID, "board-run").text
    assert board["gpu"] and board["gpu"] in run and board["backend"] in run, (run, board)
    assert (f"clock {board['clock_mhz']} MHz" if board["clock_mhz"] else "clock unknown") in run, run

    chart = page.driver.find_element(By.CSS_SELECTOR, "#chart svg")
    assert len(chart.find_elements(By.CSS_SELECTOR, "g.entry circle")) == len(board["entries"])
    refs = {g.get_attribute("data-variant"): float(g.find_element(By.TAG_NAME, "line").get_attribute("x1"))
            for g in chart.find_elements(By.CSS_SELECTOR, "g.ref")}
    assert set(refs) == {r["variant"] for r in board["references"]} == {"naive", "tiled"}
    by_time = sorted(board["references"], key=lambda r: r["median_ms"])
    assert [refs[r["variant"]] for r in by_time] == sorted(refs.values()), "a slower reference lies further right"

    failed = page.rows("failed")
    assert sorted((f["student"], f["kernel"]) for f in failed) == [("bob", "rowcol"), (NO_ENTRY, "offbyone")]
    assert [(f["student"], f["kernel"], f["finding"], f["line"]) for f in failed] == \
        [(f["user"], f["name"], f["finding"], "" if f["line"] is None else str(f["line"])) for f in board["failed"]]
    assert all(f["finding"] for f in failed)
    page.not_reloaded_and_nothing_ran()


def test_a_new_result_reaches_the_instructors_board_without_a_reload(page: BoardPage):
    sid = page.hub.submit("heidi", "heidi16", tiled("heidi16"))
    page.wait(lambda d: any(r["student"] == "heidi" for r in page.rows()), LIVE_TIMEOUT,
              "heidi's new result on the board")
    assert page.hub.wait_done(INSTRUCTOR, [sid])[0]["status"] == "ranked"
    page.wait(lambda d: table(page) == shown(page.hub.board(INSTRUCTOR)), LIVE_TIMEOUT,
              "the board to show what the API answers")
    page.not_reloaded_and_nothing_ran()
    page.screenshot("board")


def test_instructor_class_view_of_30_kernels_reporting_at_once_live(page: BoardPage):
    By = _by()
    page.driver.find_element(By.ID, "show-class").click()
    page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#class-counts tbody tr"), PAGE_TIMEOUT, "the class view")
    assert "#class=matmul" in page.driver.current_url
    students = [f"s{k:02d}" for k in range(30)]
    with ThreadPoolExecutor(len(students)) as pool:
        answers = list(pool.map(lambda k: page.hub.call(students[k], "POST", "api/quickchecks", quick_check(k)),
                                range(30)))
    assert [status for status, _ in answers] == [204] * 30, answers

    def counts(d):
        """{check: "n of N"} as the class view's table shows it, read in one go (see rows())."""
        return d.execute_script("""
            return Object.fromEntries([...document.querySelectorAll("#class-counts tbody tr")].map(
              (tr) => [tr.dataset.check, tr.querySelectorAll("td")[1].innerText.trim()]));""")
    want = {"reported": "30", "compile": "28 of 30", "pass": "23 of 30",
            "lesson check: barrier_before_read": "25 of 30"}
    page.wait(lambda d: counts(d) == want, LIVE_TIMEOUT, f"the class view to show {want}")
    bins = page.driver.find_elements(By.CSS_SELECTOR, "#class-times svg rect.bin")
    assert sum(int(b.get_attribute("data-count")) for b in bins) == 23
    findings = [li.text for li in page.driver.find_elements(By.CSS_SELECTOR, "#class-findings li")]
    assert findings == ["7 kernels reads As before the barrier at line 11",
                        f"1 kernel {HOSTILE_TEXT} at line 3"], findings
    page.not_reloaded_and_nothing_ran()
    page.screenshot("classview")

    # a 31st kernel, and the one with the hostile finding fixes it: the view follows
    assert page.hub.call("heidi", "POST", "api/quickchecks", quick_check(0))[0] == 204
    assert page.hub.call("s29", "POST", "api/quickchecks", quick_check(5))[0] == 204
    page.wait(lambda d: counts(d)["compile"] == "30 of 31", LIVE_TIMEOUT, "the 31st kernel in the class view")
    assert page.driver.find_element(By.ID, "class-findings").text == "8 kernels reads As before the barrier at line 11"
    page.not_reloaded_and_nothing_ran()


def test_student_sees_their_own_rank_and_anonymised_neighbours_only(page: BoardPage):
    By = _by()
    page.log_in(STUDENT)
    board = page.hub.board(STUDENT)
    assert table(page) == shown(board)
    assert [r["_class"].split().count("you") for r in page.rows()] == [int(e["you"]) for e in board["entries"]]
    assert sum(e["you"] for e in board["entries"]) == 1
    others = [r["student"] for r in page.rows() if r["student"] != "you"]
    assert others and all(o.startswith("student ") for o in others), others
    text = page.text()
    for name in set(CLASS + [INSTRUCTOR]) - {STUDENT}:
        assert f" {name} " not in f" {text} ".replace("\n", " "), f"another user's name {name!r} is in the student's page"
    assert not page.driver.find_element(By.ID, "show-class").is_displayed()
    assert page.rows("failed") == []
    page.not_reloaded_and_nothing_ran()

    # their next submission fails, and their page shows it as theirs
    sid = page.hub.submit(STUDENT, "erin_v2", tiled("erin_v2", wrong=" * 2.0f"))
    page.wait(lambda d: [f["kernel"] for f in page.rows("failed")] == ["erin_v2"], LIVE_TIMEOUT,
              "the student's failed submission on their page")
    assert page.hub.wait_done(STUDENT, [sid])[0]["status"] == "failed"
    assert page.rows("failed")[0]["student"] == "you"
    page.not_reloaded_and_nothing_ran()


def test_student_cannot_open_the_class_view_by_its_address(page: BoardPage):
    By = _by()
    page.driver.get(f"{page.hub.board_url}#class={EXERCISE}")
    page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#entries tbody tr[data-rank]"), PAGE_TIMEOUT,
              "the board (not the class view)")
    assert not page.driver.find_element(By.ID, "classview").is_displayed()
    assert "reads As before the barrier" not in page.text()


def test_student_with_no_ranked_entry_is_told_how_to_submit_and_sees_their_failure(page: BoardPage):
    page.log_in(NO_ENTRY, entries=False)
    assert page.rows() == []
    assert f"%submit NAME --to {PROBLEM}" in page.driver.find_element(_by().ID, "entries").text
    assert [(f["student"], f["kernel"]) for f in page.rows("failed")] == [("you", "offbyone")]
