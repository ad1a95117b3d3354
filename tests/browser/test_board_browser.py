"""The class leaderboard's page (board/cudalab_board/static/) in headless Chromium, through a real
JupyterHub running the board service as a managed service (/services/board/).

Once per module JupyterHub starts as tests/deploy/test_hub_live.py starts it (its proxy, the
course's one shared password), with the groups `instructors` (prof) and `students` (the class),
every user allowed to reach the board service (access:services!service=board), and the service
itself. Chromium then logs in through the hub's login form, as a person does, first as the
instructor and then as a student, and checks what each sees:

  * the instructor: every entry with its student's name, ranks with ties marked (=2), the GPU and
    the clock named, the chart (a dot per entry, a dashed line per reference of the ladder), the
    failed submissions with their findings and lines, and the class view of the exercise (how many
    kernels compile, pass, pass each lesson check; the histogram of their times; the most common
    findings with their lines);
  * a student: their own row highlighted as "you", at most two anonymised neighbours each side
    ("student K"), no other student's name anywhere in the page, their own failures only, and no
    class view (neither its button nor through its address);
  * both: a new result arriving (an api/events message) updates the page without a reload (a mark
    left in the page's window survives), and text a student wrote (a kernel named as markup, a
    finding holding a script) shows as text and runs nothing.

docs/screenshots/board.png and classview.png are the instructor's board and class view as this
test leaves them (its run writes them; they are committed).

The service here is tests/browser/board_standin.py (the API contract's read routes over data the
test puts in) until the service lane's tornado app is on main. It skips, saying why, where
chromium, chromedriver, Selenium, JupyterHub or configurable-http-proxy is missing.
"""
from __future__ import annotations

import json
import secrets
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, free_tcp_ports, serving
from test_lab_browser import _by, browser, skip_if_missing  # noqa: F401 (a fixture)

sys.path.insert(0, str(REPO / "tests" / "deploy"))
from test_hub_live import Hub, _missing as hub_missing  # noqa: E402

SERVICE = "board"
INSTRUCTOR = "prof"
STUDENT = "erin"
CLASS = ["alice", "bob", "carol", "dave", "erin", "frank", "mallory", "gus"]
PROBLEM = "ps2.matmul"
EXERCISE = "matmul"
PAGE_TIMEOUT = 30           # seconds for the login, the page and its first fetches
LIVE_TIMEOUT = 20           # seconds for an api/events message to show in the page (the stand-in's streams
                            # end after 10 s idle: the test hub's proxy passes only whole responses)
SCREENSHOTS = REPO / "docs" / "screenshots"
HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">'
HOSTILE_FINDING = "<script>window.__pwned=2</script> wrote out of bounds"

pytestmark = pytest.mark.timeout(240)

PROBLEMS = {PROBLEM: {"family": "matmul", "title": "Tiled matrix multiply", "exercise": EXERCISE,
                      "sizes": ["--m 1000 --n 1100 --k 900"], "seeds": [1], "flags": "",
                      "references": ["naive", "tiled", "fast", "cublas"], "bound": "flops",
                      "rate_limit_s": 60}}

REFERENCES = [{"variant": "naive", "median_ms": 4.1, "ci95_rel": 0.01},
              {"variant": "tiled", "median_ms": 1.3, "ci95_rel": 0.01},
              {"variant": "fast", "median_ms": 0.42, "ci95_rel": 0.02},
              {"variant": "cublas", "median_ms": 0.21, "ci95_rel": 0.01}]


def entry(rank, user, name, median_ms, tied=False):
    return {"rank": rank, "tied": tied, "user": user, "you": False, "name": name, "median_ms": median_ms,
            "ci95_rel": 0.03, "score": median_ms / REFERENCES[-1]["median_ms"],
            "submitted_at": "2026-11-29T10:00:00Z"}


def board(entries):
    """The instructor's view of the board (the stand-in derives a student's)."""
    return {"problem": PROBLEM, "title": PROBLEMS[PROBLEM]["title"], "gpu": "NVIDIA H200",
            "clock_mhz": 1980, "run_at": "2026-11-29T10:05:00Z", "backend": "cuda",
            "references": REFERENCES, "entries": entries, "queue": 3,
            "failed": [{"user": "gus", "name": "tooquick", "line": None,
                        "finding": "impossible: 0.0004 ms is below the FLOPs bound (0.0021 ms)"},
                       {"user": STUDENT, "name": "erin_v0", "line": 17, "finding": HOSTILE_FINDING}]}


ENTRIES = [entry(1, "alice", "tiled32", 0.25), entry(2, "bob", "regtile", 0.61, True),
           entry(2, "carol", "tiled16", 0.63, True), entry(4, "dave", "tiled8", 1.2),
           entry(5, STUDENT, "erin_v1", 2.0), entry(6, "frank", "naive2", 3.9),
           entry(7, "mallory", HOSTILE_NAME, 4.4)]

CLASS_VIEW = {"exercise": EXERCISE, "kernels": 30, "compiled": 28, "passed": 23,
              "lesson": {"barrier_before_read": 25, "coalesced_loads": 19},
              "times_ms": [0.3 + 0.1 * i for i in range(23)],
              "findings": [{"text": "out-of-bounds write to C", "line": 17, "count": 2},
                           {"text": "reads As before the barrier", "line": 11, "count": 5},
                           {"text": HOSTILE_FINDING, "line": 3, "count": 1}]}


class BoardHub(Hub):
    """The course's hub with the board service, its groups, and every user allowed to reach it."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.service_port = free_tcp_ports(1)[0]
        self.secret = secrets.token_hex(16)
        self.problems = root / "board-problems.json"
        self.problems.write_text(json.dumps(PROBLEMS))

    def settings(self) -> dict[str, object]:
        settings = super().settings()
        settings["JupyterHub.services"] = settings["JupyterHub.services"] + [{
            "name": SERVICE, "url": f"http://127.0.0.1:{self.service_port}", "oauth_no_confirm": True,
            "command": [sys.executable, str(REPO / "tests" / "browser" / "board_standin.py"),
                        str(self.problems)],
            "environment": {"BOARD_STANDIN_SECRET": self.secret},
        }]
        settings["JupyterHub.load_groups"] = {"instructors": {"users": [INSTRUCTOR]},
                                              "students": {"users": CLASS}}
        settings["JupyterHub.load_roles"] = settings["JupyterHub.load_roles"] + [{
            "name": "user", "scopes": ["self", f"access:services!service={SERVICE}"]}]
        return settings

    @property
    def board_url(self) -> str:
        return f"{self.url}/services/{SERVICE}/"

    def put(self, what: str, body: dict) -> None:
        """Puts a board or a class view into the stand-in (it announces it on api/events)."""
        req = urllib.request.Request(f"{self.board_url}test/{what}", data=json.dumps(body).encode(),
                                     method="PUT", headers={"X-Standin-Secret": self.secret})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 204


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    skip_if_missing()
    why = hub_missing()
    if why:
        pytest.skip(f"board browser test skipped: {why}")
    with serving(BoardHub(tmp_path_factory.mktemp("hub"))) as server:
        server.put(f"boards/{PROBLEM}", board(ENTRIES))
        server.put(f"classview/{EXERCISE}", CLASS_VIEW)
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
        """Through the hub's login form, as a person does; lands on the board's page."""
        By = _by()
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})   # as a browser of their own
        self.driver.get(f"{self.hub.url}/hub/login?next=/services/{SERVICE}/")
        self.wait(lambda d: d.find_elements(By.ID, "username_input"), PAGE_TIMEOUT, "the hub's login form")
        self.driver.find_element(By.ID, "username_input").send_keys(user)
        self.driver.find_element(By.ID, "password_input").send_keys(self.hub.password)
        self.driver.find_element(By.ID, "login_submit").click()
        shown = "#entries tbody tr[data-rank]" if entries else "#entries tbody tr.empty"
        self.wait(lambda d: d.current_url.startswith(self.hub.board_url) and d.find_elements(By.CSS_SELECTOR, shown),
                  PAGE_TIMEOUT, f"the board's page with its {'entries' if entries else 'empty table'}, logged in as {user}")
        self.driver.execute_script("window.__loaded_once = true;")   # a reload would lose it
        self.wait(lambda d: "live" == d.find_element(By.ID, "live").text, PAGE_TIMEOUT,
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
        self.driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))

    def not_reloaded_and_nothing_ran(self) -> None:
        got = self.driver.execute_script("return [window.__loaded_once === true, window.__pwned];")
        assert got[0], "the page was reloaded" + self.diagnostics()
        assert got[1] is None, f"a student's text ran as script (window.__pwned = {got[1]})"


@pytest.fixture(scope="module")
def page(hub: BoardHub, browser) -> BoardPage:  # noqa: F811 (the fixture imported above)
    return BoardPage(browser, hub)


def test_instructor_sees_every_name_the_ties_the_gpu_the_chart_and_the_failures(page: BoardPage):
    By = _by()
    page.log_in(INSTRUCTOR)
    rows = page.rows()
    assert [(r["rank"], r["student"], r["kernel"]) for r in rows] == \
        [("1", "alice", "tiled32"), ("=2", "bob", "regtile"), ("=2", "carol", "tiled16"),
         ("4", "dave", "tiled8"), ("5", STUDENT, "erin_v1"), ("6", "frank", "naive2"),
         ("7", "mallory", HOSTILE_NAME)], rows
    assert [r["_class"] for r in rows].count("tied") == 2
    assert not any("you" in r["_class"].split() for r in rows), "the instructor has no row of their own"
    assert rows[0]["median ms"] == "0.250" and rows[0]["±95%"] == "±3.0%" and rows[0]["score"] == "1.19×", rows[0]
    run = page.driver.find_element(By.ID, "board-run").text
    assert "NVIDIA H200" in run and "1980 MHz" in run and "cuda" in run, run
    assert "3 submissions waiting" in page.driver.find_element(By.ID, "board-queue").text

    chart = page.driver.find_element(By.CSS_SELECTOR, "#chart svg")
    dots = chart.find_elements(By.CSS_SELECTOR, "g.entry circle")
    assert len(dots) == len(ENTRIES)
    refs = {g.get_attribute("data-variant"): g for g in chart.find_elements(By.CSS_SELECTOR, "g.ref")}
    assert list(refs) == [r["variant"] for r in REFERENCES]
    # a log axis: the references' lines fall in their order, cuBLAS leftmost, naive rightmost
    xs = [float(refs[r["variant"]].find_element(By.TAG_NAME, "line").get_attribute("x1")) for r in REFERENCES]
    assert xs == sorted(xs, reverse=True), xs
    alice = float(chart.find_element(By.CSS_SELECTOR, "g.entry[data-user='alice'] circle").get_attribute("cx"))
    assert xs[3] < alice < xs[2], "alice's 0.25 ms lies between cuBLAS's 0.21 and fast's 0.42"

    failed = page.rows("failed")
    assert [(f["student"], f["kernel"], f["line"]) for f in failed] == \
        [("gus", "tooquick", ""), (STUDENT, "erin_v0", "17")], failed
    assert failed[0]["finding"].startswith("impossible:") and failed[1]["finding"] == HOSTILE_FINDING
    page.not_reloaded_and_nothing_ran()


def test_a_new_result_reaches_the_instructors_board_without_a_reload(page: BoardPage):
    page.hub.put(f"boards/{PROBLEM}", board([entry(1, "heidi", "wmma", 0.22)] +
                                            [{**e, "rank": e["rank"] + 1} for e in ENTRIES]))
    page.wait(lambda d: page.rows() and page.rows()[0]["student"] == "heidi", LIVE_TIMEOUT,
              "heidi's new result at the top of the board")
    assert len(page.rows()) == len(ENTRIES) + 1
    page.not_reloaded_and_nothing_ran()
    page.screenshot("board")


def test_instructor_class_view_counts_times_and_common_findings_live(page: BoardPage):
    By = _by()
    page.driver.find_element(By.ID, "show-class").click()
    page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#class-counts tbody tr"), PAGE_TIMEOUT, "the class view")
    assert "#class=matmul" in page.driver.current_url
    counts = {tr.get_attribute("data-check"): tr.find_elements(By.TAG_NAME, "td")[1].text
              for tr in page.driver.find_elements(By.CSS_SELECTOR, "#class-counts tbody tr")}
    assert counts == {"reported": "30", "compile": "28 of 30", "pass": "23 of 30",
                      "lesson check: barrier_before_read": "25 of 30",
                      "lesson check: coalesced_loads": "19 of 30"}, counts
    bins = page.driver.find_elements(By.CSS_SELECTOR, "#class-times svg rect.bin")
    assert sum(int(b.get_attribute("data-count")) for b in bins) == len(CLASS_VIEW["times_ms"])
    findings = [li.text for li in page.driver.find_elements(By.CSS_SELECTOR, "#class-findings li")]
    assert findings == ["5 kernels reads As before the barrier at line 11",
                        "2 kernels out-of-bounds write to C at line 17",
                        f"1 kernel {HOSTILE_FINDING} at line 3"], findings

    page.hub.put(f"classview/{EXERCISE}", {**CLASS_VIEW, "kernels": 31, "compiled": 29,
                                           "findings": [{**CLASS_VIEW["findings"][1], "count": 6}]})
    page.wait(lambda d: "29 of 31" in d.find_element(By.CSS_SELECTOR, "#class-counts tr[data-check='compile']").text,
              LIVE_TIMEOUT, "the class view to show the 31st kernel")
    assert page.driver.find_element(By.ID, "class-findings").text == "6 kernels reads As before the barrier at line 11"
    page.not_reloaded_and_nothing_ran()
    page.hub.put(f"classview/{EXERCISE}", CLASS_VIEW)
    page.wait(lambda d: "28 of 30" in d.find_element(By.CSS_SELECTOR, "#class-counts tr[data-check='compile']").text,
              LIVE_TIMEOUT, "the class view back at 30 kernels")
    page.screenshot("classview")


def test_student_sees_their_own_rank_and_anonymised_neighbours_only(page: BoardPage):
    By = _by()
    page.hub.put(f"boards/{PROBLEM}", board(ENTRIES))
    page.log_in(STUDENT)
    rows = page.rows()
    assert [(r["rank"], r["student"]) for r in rows] == \
        [("=2", rows[0]["student"]), ("4", rows[1]["student"]), ("5", "you"), ("6", rows[3]["student"]),
         ("7", rows[4]["student"])], rows
    assert [r["_class"].split().count("you") for r in rows] == [0, 0, 1, 0, 0]
    others = [r["student"] for r in rows if r["student"] != "you"]
    assert all(o.startswith("student ") for o in others) and len(set(others)) == 4, others
    text = page.text()
    for name in CLASS + [INSTRUCTOR]:
        if name != STUDENT:
            assert name not in text, f"another student's name {name!r} is in the student's page"
    assert [f["kernel"] for f in page.rows("failed")] == ["erin_v0"], "only their own failures"
    assert not page.driver.find_element(By.ID, "show-class").is_displayed()
    page.not_reloaded_and_nothing_ran()

    # their next submission ranks, and their page follows
    improved = [e for e in ENTRIES if e["user"] != STUDENT]
    improved.insert(1, entry(2, STUDENT, "erin_v2", 0.5))
    improved = [{**e, "rank": i + 1} for i, e in enumerate(improved)]
    page.hub.put(f"boards/{PROBLEM}", board(improved))
    page.wait(lambda d: any(r["student"] == "you" and r["rank"] == "2" for r in page.rows()), LIVE_TIMEOUT,
              "the student's new rank")
    assert [r["kernel"] for r in page.rows() if r["student"] == "you"] == ["erin_v2"]
    page.not_reloaded_and_nothing_ran()


def test_student_cannot_open_the_class_view_by_its_address(page: BoardPage):
    By = _by()
    page.driver.get(f"{page.hub.board_url}#class={EXERCISE}")
    page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#entries tbody tr[data-rank]"), PAGE_TIMEOUT,
              "the board (not the class view)")
    assert not page.driver.find_element(By.ID, "classview").is_displayed()
    assert "reads As before the barrier" not in page.text()


def test_student_with_no_ranked_entry_is_told_how_to_submit_and_sees_their_failure(page: BoardPage):
    page.log_in("gus", entries=False)
    assert page.rows() == []
    assert f"%submit NAME --to {PROBLEM}" in page.driver.find_element(_by().ID, "entries").text
    failed = page.rows("failed")
    assert [(f["student"], f["kernel"]) for f in failed] == [("you", "tooquick")], failed
    assert failed[0]["finding"].startswith("impossible:")
