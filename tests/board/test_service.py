"""The class board's service through a real HTTP client: `python -m cudalab_board serve` runs as
JupyterHub would run it (its environment, an SQLite file), against a small fake hub API that
answers `GET /hub/api/user` per token as the real hub does (name, groups, scopes). Every route,
the auth failures, the rate limit, malformed and absurd bodies, server-sent events, and 30 kernels'
quick checks posted at once."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from tornado import httpserver, ioloop, web

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "board"))
from cudalab_board import roles  # noqa: E402

PREFIX = "/services/board/"
SERVICE_TOKEN = "service-token"
STUDENTS = 30
USERS = {"tok-teacher": ("teacher", [roles.INSTRUCTORS]),
         "tok-outsider": ("outsider", []),
         **{f"tok-s{i}": (f"s{i}", [roles.STUDENTS]) for i in range(STUDENTS)}}
PROBLEMS = {"ps2.matmul": {"family": "matmul", "title": "Matmul", "sizes": ["--m 64 --n 64 --k 64"],
                           "seeds": [1], "references": ["naive", "tiled"], "bound": "flops",
                           "rate_limit_s": 60, "exercise": "matmul"}}
SOURCE = "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}\n"
pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeHubUser(web.RequestHandler):
    """The hub's GET /hub/api/user: who a token belongs to; 403 for an unknown token."""
    def get(self):
        token = self.request.headers.get("Authorization", "").partition(" ")[2]
        if token not in USERS:
            raise web.HTTPError(403)
        name, groups = USERS[token]
        scopes = [roles.ACCESS_SCOPE] if groups else []
        self.finish({"kind": "user", "name": name, "groups": groups, "scopes": scopes})


@pytest.fixture(scope="module")
def hub():
    port, started = free_port(), threading.Event()
    state = {}

    def run():
        asyncio.set_event_loop(asyncio.new_event_loop())
        loop = ioloop.IOLoop.current()
        server = httpserver.HTTPServer(web.Application([(r"/hub/api/user", FakeHubUser)]))
        server.listen(port, "127.0.0.1")
        state["loop"] = loop
        started.set()
        loop.start()
    threading.Thread(target=run, daemon=True).start()
    started.wait(10)
    yield f"http://127.0.0.1:{port}/hub/api"
    state["loop"].add_callback(state["loop"].stop)


def start_service(tmp_path, hub_url, *, class_view=True, problems_json=None, runner_env=None):
    """The service on a free port: (process, its base URL). runner_env: run submissions with that
    environment added (CUDALAB_BIN…), else --no-runner."""
    port = free_port()
    problems = tmp_path / "problems.json"
    problems.write_text(json.dumps(problems_json or PROBLEMS))
    env = dict(os.environ, **(runner_env or {}), PYTHONPATH=str(REPO / "board"), JUPYTERHUB_API_URL=hub_url,
               JUPYTERHUB_API_TOKEN=SERVICE_TOKEN, JUPYTERHUB_SERVICE_NAME="board",
               JUPYTERHUB_SERVICE_PREFIX=PREFIX, JUPYTERHUB_CLIENT_ID="service-board",
               JUPYTERHUB_HOST="", JUPYTERHUB_OAUTH_CALLBACK_URL=PREFIX + "oauth_callback",
               JUPYTERHUB_BASE_URL="/")
    command = [sys.executable, "-m", "cudalab_board", "serve", "--db", f"sqlite:///{tmp_path}/board.sqlite",
               "--problems", str(problems), "--port", str(port)] + ([] if runner_env else ["--no-runner"])
    if class_view:
        command.append("--class-view")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}{PREFIX}"
    for _ in range(200):
        try:
            requests.get(base + "api/boards/ps2.matmul", timeout=1)
            return proc, base
        except requests.ConnectionError:
            if proc.poll() is not None:
                raise AssertionError(proc.stdout.read().decode())
            time.sleep(0.05)
    raise AssertionError("the service did not answer")


@pytest.fixture
def service(tmp_path, hub):
    proc, base = start_service(tmp_path, hub)
    yield base, tmp_path
    proc.terminate()
    proc.wait(10)


def auth(token):
    return {"Authorization": f"token {token}"}


def submit(base, token, **over):
    body = {"problem": "ps2.matmul", "name": "mine", "family": "matmul", "source": SOURCE, "flags": ""}
    body.update(over)
    return requests.post(base + "api/submissions", json=body, headers=auth(token), timeout=10)


def test_submit_then_read_own_submission_and_board(service):
    base, _ = service
    r = submit(base, "tok-s1")
    assert r.status_code == 201, r.text
    sub = r.json()
    assert sub["status"] == "queued" and sub["position"] == 1
    got = requests.get(base + f"api/submissions/{sub['id']}", headers=auth("tok-s1"), timeout=10).json()
    assert (got["user"], got["name"], got["status"], got["problem"]) == ("s1", "mine", "queued", "ps2.matmul")
    assert "source" not in got
    board = requests.get(base + "api/boards/ps2.matmul", headers=auth("tok-s1"), timeout=10).json()
    assert board["title"] == "Matmul" and board["queue"] == 1 and board["entries"] == []


def test_auth_failures(service):
    base, _ = service
    assert requests.get(base + "api/boards/ps2.matmul", timeout=10).status_code == 401
    assert requests.get(base + "api/boards/ps2.matmul", headers=auth("forged"), timeout=10).status_code == 401
    r = requests.get(base + "api/boards/ps2.matmul", headers=auth("tok-outsider"), timeout=10)
    assert r.status_code == 403 and "error" in r.json()
    assert submit(base, "forged").status_code == 401
    sub = submit(base, "tok-s1").json()
    # another student's submission is not found; the instructor sees it
    assert requests.get(base + f"api/submissions/{sub['id']}", headers=auth("tok-s2"), timeout=10).status_code == 404
    assert requests.get(base + f"api/submissions/{sub['id']}", headers=auth("tok-teacher"),
                        timeout=10).json()["user"] == "s1"
    assert requests.get(base + "api/classview/matmul", headers=auth("tok-s1"), timeout=10).status_code == 403
    assert requests.get(base + "api/submissions/99999999999999999999", headers=auth("tok-teacher"),
                        timeout=10).status_code == 404


def test_rate_limit_per_student_per_problem(service):
    base, _ = service
    assert submit(base, "tok-s3").status_code == 201
    r = submit(base, "tok-s3", name="again")
    assert r.status_code == 429
    assert 0 < r.json()["retry_after_s"] <= 60
    # concurrent resubmissions: exactly one passes
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: submit(base, "tok-s4").status_code, range(8)))
    assert sorted(codes) == [201] + [429] * 7
    assert submit(base, "tok-s5").status_code == 201      # another student is not limited by them


@pytest.mark.parametrize("body,why", [
    (b"{not json", "JSON"), (b"[1,2]", "object"),
    (json.dumps({"problem": "nope", "name": "a", "family": "matmul", "source": SOURCE}).encode(), "problem"),
    (json.dumps({"problem": "ps2.matmul", "name": "a", "family": "histo", "source": SOURCE}).encode(), "matmul"),
    (json.dumps({"problem": "ps2.matmul", "name": "a", "family": "matmul", "source": "x" * (64 * 1024 + 1)}).encode(),
     "KiB"),
    (json.dumps({"problem": "ps2.matmul", "name": "a", "family": "matmul", "source": SOURCE,
                 "flags": "--reps 1"}).encode(), "flags"),
    (json.dumps({"problem": "ps2.matmul", "name": "a", "family": "matmul", "source": SOURCE,
                 "flags": "-DX=1\n%matmul"}).encode(), "flags"),
    (json.dumps({"problem": "ps2.matmul", "name": "a\nb", "family": "matmul", "source": SOURCE}).encode(), "name"),
    (json.dumps({"problem": "ps2.matmul", "name": 5, "family": "matmul", "source": SOURCE}).encode(), "name"),
])
def test_malformed_submissions_are_400_and_not_queued(service, body, why):
    base, _ = service
    r = requests.post(base + "api/submissions", data=body, headers=auth("tok-s6"), timeout=10)
    assert r.status_code == 400 and why in r.json()["error"], r.text
    assert submit(base, "tok-s6").status_code == 201      # nothing was queued, so no rate limit applied


def test_absurd_body_is_refused_before_it_is_read(service):
    base, _ = service
    try:
        r = requests.post(base + "api/submissions", data=b"x" * (8 << 20), headers=auth("tok-s7"), timeout=10)
        assert r.status_code == 400
    except requests.ConnectionError:
        pass                                              # tornado may close as it refuses
    assert submit(base, "tok-s7").status_code == 201      # and the service still works


def test_quickchecks_30_kernels_at_once(service):
    base, _ = service

    def passes(i):
        return i % 3 == 0 and i % 10 != 0                  # a kernel that passes compiled

    def post(i):
        body = {"exercise": "matmul", "name": "tiled", "compiled": i % 10 != 0, "passed": passes(i),
                "lesson": {"uses_shared": i % 2 == 0}, "time_ms": float(i) if passes(i) else None,
                "findings": [{"text": "reads As before the barrier", "line": 11}] * (i % 2) }
        return requests.post(base + "api/quickchecks", json=body, headers=auth(f"tok-s{i}"), timeout=30).status_code
    with ThreadPoolExecutor(STUDENTS) as pool:
        assert set(pool.map(post, range(STUDENTS))) == {204}
    view = requests.get(base + "api/classview/matmul", headers=auth("tok-teacher"), timeout=10).json()
    assert view["kernels"] == STUDENTS
    assert view["compiled"] == sum(i % 10 != 0 for i in range(STUDENTS))
    assert view["passed"] == sum(passes(i) for i in range(STUDENTS))
    assert view["lesson"] == {"uses_shared": sum(i % 2 == 0 and i % 10 != 0 for i in range(STUDENTS))}
    assert view["times_ms"] == [float(i) for i in range(STUDENTS) if passes(i)]
    assert view["findings"] == [{"text": "reads As before the barrier", "line": 11, "count": STUDENTS // 2}]
    r = requests.post(base + "api/quickchecks", json={"exercise": "matmul", "name": "x", "compiled": "yes",
                                                       "passed": True}, headers=auth("tok-s1"), timeout=10)
    assert r.status_code == 400


def test_forged_quick_checks_count_one_kernel_per_student(service):
    """A student who posts forged summaries for themself (many kernel names, passed without compiling,
    every lesson check, a finding over and over) is still one kernel: compiled, passed, each lesson check
    and each finding count them once at most, and what contradicts itself counts as far as it holds."""
    base, _ = service
    honest = {"exercise": "forged", "name": "tiled", "compiled": True, "passed": True,
              "lesson": {"uses_shared": True, "no_bank_conflicts": False}, "time_ms": 2.0,
              "findings": [{"text": "reads As before the barrier", "line": 11}]}
    assert requests.post(base + "api/quickchecks", json=honest, headers=auth("tok-s1"), timeout=10).status_code == 204
    for k in range(40):
        forged = {"exercise": "forged", "name": f"kernel{k}", "compiled": k % 2 == 0, "passed": True,
                  "lesson": {"uses_shared": True, "no_bank_conflicts": True}, "time_ms": 0.001 * (k + 1),
                  "findings": [{"text": "reads As before the barrier", "line": 11}] * 10}
        r = requests.post(base + "api/quickchecks", json=forged, headers=auth("tok-s2"), timeout=10)
        assert r.status_code == 204, r.text
    view = requests.get(base + "api/classview/forged", headers=auth("tok-teacher"), timeout=10).json()
    assert view["kernels"] == 2 and view["compiled"] == 1 and view["passed"] == 1, view
    # s2's latest post (k = 39) did not compile: it passes nothing and has no time, whatever it claims
    assert view["lesson"] == {"uses_shared": 1, "no_bank_conflicts": 0}
    assert view["times_ms"] == [2.0]
    assert view["findings"] == [{"text": "reads As before the barrier", "line": 11, "count": 2}]
    forged["compiled"] = True                              # now it holds together: one more kernel, not 40
    assert requests.post(base + "api/quickchecks", json=forged, headers=auth("tok-s2"), timeout=10).status_code == 204
    view = requests.get(base + "api/classview/forged", headers=auth("tok-teacher"), timeout=10).json()
    assert (view["kernels"], view["compiled"], view["passed"]) == (2, 2, 2), view
    assert view["lesson"] == {"uses_shared": 2, "no_bank_conflicts": 1}
    assert view["times_ms"] == [0.04, 2.0]


def test_quickchecks_refused_when_class_view_is_off(tmp_path, hub):
    proc, base = start_service(tmp_path, hub, class_view=False)
    try:
        r = requests.post(base + "api/quickchecks", json={"exercise": "matmul", "name": "x", "compiled": True,
                                                           "passed": True}, headers=auth("tok-s1"), timeout=10)
        assert r.status_code == 403
    finally:
        proc.terminate()
        proc.wait(10)


def read_events(base, token, got, ready):
    with requests.get(base + "api/events", headers=auth(token), stream=True, timeout=30) as r:
        event = None
        for line in r.iter_lines(decode_unicode=True):
            if line.startswith(": connected"):
                ready.set()
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                got.append((event, json.loads(line[6:])))
                if len(got) >= 2:
                    return


def test_events_announce_board_and_classview_changes(service):
    base, _ = service
    teacher, student = [], []
    ready_t, ready_s = threading.Event(), threading.Event()
    threads = [threading.Thread(target=read_events, args=(base, "tok-teacher", teacher, ready_t), daemon=True),
               threading.Thread(target=read_events, args=(base, "tok-s9", student, ready_s), daemon=True)]
    for t in threads:
        t.start()
    assert ready_t.wait(10) and ready_s.wait(10)
    assert submit(base, "tok-s8").status_code == 201
    r = requests.post(base + "api/quickchecks", json={"exercise": "matmul", "name": "x", "compiled": True,
                                                       "passed": True}, headers=auth("tok-s8"), timeout=10)
    assert r.status_code == 204
    assert submit(base, "tok-s10").status_code == 201
    for t in threads:
        t.join(15)
    assert teacher == [("board", {"problem": "ps2.matmul"}), ("classview", {"exercise": "matmul"})]
    assert student[0] == ("board", {"problem": "ps2.matmul"}) and ("classview", {"exercise": "matmul"}) not in student


def test_page_redirects_to_hub_login_without_cookie(service):
    base, _ = service
    r = requests.get(base, allow_redirects=False, timeout=10)
    assert r.status_code == 302 and "oauth2/authorize" in r.headers["Location"]
