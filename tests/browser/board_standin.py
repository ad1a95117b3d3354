"""A stand-in of the board service's HTTP API for tests/browser/test_board_browser.py, until the
service lane's tornado app (board/cudalab_board/service.py) is on main; then the browser test runs
the real service and this file goes.

JupyterHub runs it as a managed service (`python board_standin.py PROBLEMS_JSON`, its prefix, port
and token from the JUPYTERHUB_SERVICE_* variables the hub sets). It authenticates every request
through the hub (HubOAuth: the page's cookie, or a token) and reads the user's groups, serves the
page from board/cudalab_board/static/ and the contract's read routes (api/problems, api/boards/P,
api/classview/E, api/events) from what the test puts in through test-only routes
(PUT test/boards/P with the instructor's view of a board, PUT test/classview/E), which need the
secret in $BOARD_STANDIN_SECRET. A student's view is derived here as the contract says: their own
entry as "you", the others as "student K", two neighbours each side, their own failures only.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.iostream import StreamClosedError

STATIC = Path(__file__).resolve().parents[2] / "board" / "cudalab_board" / "static"
INSTRUCTORS = "instructors"
NEIGHBOURS = 2
# An event stream ends this long after its first event, or when idle this long: the Python port of
# configurable-http-proxy (the test hub's) buffers a whole response, so a stream that never ends never
# reaches the page through it; the page's EventSource reconnects after `retry` and re-fetches.
EVENTS_BATCH_S = 0.3
EVENTS_IDLE_S = 10
EVENTS_RETRY_MS = 300


class Store:
    def __init__(self, problems: dict):
        self.problems = problems
        self.boards: dict[str, dict] = {}
        self.classviews: dict[str, dict] = {}
        self.listeners: set[asyncio.Queue] = set()

    def changed(self, event: str, data: dict) -> None:
        for q in self.listeners:
            q.put_nowait((event, data))


def student_view(board: dict, me: str) -> dict:
    order = sorted({e["user"] for e in board["entries"]} | {f["user"] for f in board["failed"]})
    alias = {u: f"student {k + 1}" for k, u in enumerate(order)}
    entries = [{**e, "user": "you" if e["user"] == me else alias[e["user"]], "you": e["user"] == me}
               for e in board["entries"]]
    own = [i for i, e in enumerate(entries) if e["you"]]
    if own:
        entries = entries[max(0, own[0] - NEIGHBOURS):own[0] + NEIGHBOURS + 1]
    else:
        entries = []
    failed = [{**f, "user": "you"} for f in board["failed"] if f["user"] == me]
    return {**board, "entries": entries, "failed": failed}


class Base(HubOAuthenticated, web.RequestHandler):
    @property
    def store(self) -> Store:
        return self.settings["store"]

    def instructor(self) -> bool:
        return INSTRUCTORS in (self.current_user.get("groups") or [])

    def send(self, body: dict) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))


class Page(Base):
    @web.authenticated
    def get(self):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish((STATIC / "index.html").read_bytes())


class Problems(Base):
    @web.authenticated
    def get(self):
        self.send({"user": self.current_user["name"], "instructor": self.instructor(), "class_view": True,
                   "problems": [{"problem": k, "title": v.get("title", ""), "exercise": v.get("exercise")}
                                for k, v in self.store.problems.items()]})


class Board(Base):
    @web.authenticated
    def get(self, problem):
        board = self.store.boards.get(problem)
        if board is None:
            raise web.HTTPError(404)
        self.send(board if self.instructor() else student_view(board, self.current_user["name"]))


class ClassView(Base):
    @web.authenticated
    def get(self, exercise):
        if not self.instructor():
            raise web.HTTPError(403)
        self.send(self.store.classviews.get(exercise) or
                  {"exercise": exercise, "kernels": 0, "compiled": 0, "passed": 0, "lesson": {},
                   "times_ms": [], "findings": []})


class Events(Base):
    @web.authenticated
    async def get(self):
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        q: asyncio.Queue = asyncio.Queue()
        self.store.listeners.add(q)
        try:
            self.write(f"retry: {EVENTS_RETRY_MS}\n\n")
            await self.flush()
            try:
                first = await asyncio.wait_for(q.get(), EVENTS_IDLE_S)
            except asyncio.TimeoutError:
                return
            await asyncio.sleep(EVENTS_BATCH_S)
            for event, data in [first] + [q.get_nowait() for _ in range(q.qsize())]:
                self.write(f"event: {event}\ndata: {json.dumps(data)}\n\n")
            await self.flush()
        except StreamClosedError:
            pass
        finally:
            self.store.listeners.discard(q)


class Put(web.RequestHandler):
    """The test's door: the secret, not the hub."""
    def check_xsrf_cookie(self):
        pass

    def put(self, kind, key):
        if self.request.headers.get("X-Standin-Secret") != os.environ["BOARD_STANDIN_SECRET"]:
            raise web.HTTPError(403)
        store: Store = self.settings["store"]
        body = json.loads(self.request.body)
        if kind == "boards":
            store.boards[key] = body
            store.changed("board", {"problem": key})
        else:
            store.classviews[key] = body
            store.changed("classview", {"exercise": key})
        self.set_status(204)


async def main(problems_file: str) -> None:
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    store = Store(json.loads(Path(problems_file).read_text()))
    app = web.Application([
        (prefix, Page),
        (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
        (url_path_join(prefix, "api/problems"), Problems),
        (url_path_join(prefix, r"api/boards/([^/]+)"), Board),
        (url_path_join(prefix, r"api/classview/([^/]+)"), ClassView),
        (url_path_join(prefix, "api/events"), Events),
        (url_path_join(prefix, r"test/(boards|classview)/([^/]+)"), Put),
    ], static_path=str(STATIC), static_url_prefix=url_path_join(prefix, "static/"),
        cookie_secret=os.urandom(32), store=store)
    port = int(os.environ["JUPYTERHUB_SERVICE_URL"].rsplit(":", 1)[1].strip("/"))
    HTTPServer(app).listen(port, "127.0.0.1")
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
