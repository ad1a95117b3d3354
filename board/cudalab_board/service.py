"""service.py — the class board's tornado app: every route of the board's HTTP API, the page.

Routes (relative to the service's prefix, /services/board/ under JupyterHub):
  POST api/submissions          queue a student's kernel for a timed run (token only, rate-limited)
  GET  api/submissions/ID       one submission: its owner's, or any for an instructor (else 404)
  GET  api/problems             who is asking (name, instructor or not), the class view's switch, the problems
  GET  api/boards/PROBLEM       the board: references, ranked entries, failures, queue length
  POST api/quickchecks          a kernel's quick-check summary (token only; 403 with the class view off)
  GET  api/classview/EXERCISE   the class's latest quick checks, aggregated (instructors only)
  GET  api/events               server-sent events (events.py)
  GET  (the root)               the page (static/), behind the hub's OAuth login

Everything a client sends is hostile until checked: bodies are bounded before they are read
(tornado refuses a body over MAX_BODY_BYTES with a bare 400), parsed as JSON objects, and every
field is checked for type, size and shape before it reaches the store; a submission's flags are
limited to the options of a %%kernel cell (problems.submission_flags), so no text of a student's
can add an option the board sets (sizes, seeds, reps, checks) or a line to the cell the runner
builds.

The rate limit is the store's (enqueue_submission tests and records it in one statement, so two
posts of one student cannot both pass, across processes and restarts).
"""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from jupyterhub.services.auth import HubOAuthCallbackHandler
from tornado import web

from . import events as board_events
from . import problems, ranking, store
from .auth import ApiError, AuthenticatedHandler, hub_auth

STATIC_DIR = Path(__file__).resolve().parent / "static"

MAX_BODY_BYTES = 512 * 1024      # any request body: a 64 KiB source JSON-escaped fits
MAX_LINE = 1_000_000
QUICKCHECKS_PER_MINUTE = 120     # per student: a kernel posts one per %%kernel cell run



def field(body: dict, key: str, kind, *, optional: bool = False):
    """body[key] if it is of `kind` (bool is never a number here), else ApiError 400."""
    if key not in body or body[key] is None:
        if optional:
            return None
        raise ApiError(400, f"'{key}' is missing")
    value = body[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise ApiError(400, f"'{key}' must be {' or '.join(k.__name__ for k in kinds)}")
    return value


def name_field(body: dict, key: str) -> str:
    value = field(body, key, str)
    if not problems.NAME.match(value):
        raise ApiError(400, f"'{key}' must be a name: at most 64 letters, digits, '_', '.' or '-'")
    return value


def line_field(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LINE:
        raise ApiError(400, "a finding's 'line' must be a line number or null")
    return value


class ApiHandler(AuthenticatedHandler):
    def json_body(self) -> dict:
        try:
            body = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the body is not JSON: {str(e)[:80]}")
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object")
        return body

    def send(self, document, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(document))


class SubmissionsHandler(ApiHandler):
    def post(self) -> None:
        user = self.require_user(token_only=True)
        body = self.json_body()
        problem_id = field(body, "problem", str)
        problem = self.board.problems.get(problem_id)
        if problem is None:
            raise ApiError(400, f"no problem '{problem_id[:64]}' on this board")
        name = name_field(body, "name")
        family = field(body, "family", str)
        if family != problem.family:
            raise ApiError(400, f"{problem_id} takes a {problem.family} kernel, not "
                                f"'{family[:64]}'")
        source = field(body, "source", str)
        if not source.strip() or "\0" in source:
            raise ApiError(400, "the source is empty or holds a NUL byte")
        try:
            flags = problems.submission_flags(field(body, "flags", str, optional=True) or "")
        except ValueError as e:
            raise ApiError(400, str(e))
        try:
            submission_id, position = self.board.store.enqueue_submission(
                problem_id, user.name, name, family, source, flags, rate_limit_s=problem.rate_limit_s)
        except store.RateLimited as e:
            raise ApiError(429, f"one submission per {problem.rate_limit_s} s to {problem_id}: "
                                f"try again in {e.retry_after_s} s", retry_after_s=e.retry_after_s)
        except store.InvalidSubmission as e:
            raise ApiError(400, str(e))
        self.board.events.publish(board_events.BOARD, problem_id)
        self.send({"id": submission_id, "status": "queued", "position": position}, 201)


class SubmissionHandler(ApiHandler):
    def get(self, submission_id: str) -> None:
        user = self.require_user()
        found = self.board.store.get_submission(int(submission_id)) if len(submission_id) < 19 else None
        if found is None or not (user.instructor or found["user"] == user.name):
            raise ApiError(404, f"no submission {submission_id[:20]} of yours")
        self.send({key: found.get(key) for key in
                   ("id", "problem", "user", "name", "status", "position", "finding", "result")})


class ProblemsHandler(ApiHandler):
    """GET api/problems: who is asking and what this board holds (the page's picker and views)."""

    def get(self) -> None:
        user = self.require_user()
        self.send({"user": user.name, "instructor": user.instructor, "class_view": self.board.class_view,
                   "problems": [{"problem": pid, "title": p.title, "exercise": p.exercise}
                                for pid, p in self.board.problems.items()]})


class BoardHandler(ApiHandler):
    def get(self, problem_id: str) -> None:
        user = self.require_user()
        problem = self.board.problems.get(problem_id)
        if problem is None:
            raise ApiError(404, f"no problem '{problem_id[:64]}' on this board")
        self.send(ranking.board_document(problem_id, problem.title, self.board.store.board(problem_id),
                                         user.name, user.instructor))


class QuickChecksHandler(ApiHandler):
    def post(self) -> None:
        user = self.require_user(token_only=True)
        if not self.board.class_view:
            raise ApiError(403, "this course has not opted in to the class view")
        summary = quickcheck_summary(self.json_body())
        if not self.board.quickcheck_allowed(user.name):
            raise ApiError(429, f"over {QUICKCHECKS_PER_MINUTE} quick checks a minute",
                           retry_after_s=60)
        try:
            self.board.store.record_quickcheck(user.name, **summary)
        except store.InvalidSubmission as e:
            raise ApiError(400, str(e))
        self.board.events.publish(board_events.CLASSVIEW, summary["exercise"])
        self.set_status(204)
        self.finish()


def quickcheck_summary(body: dict) -> dict:
    """One quick check's fields, of the right types (ApiError 400 else); the store bounds their
    sizes. Nothing but the summary is kept: a quick check never carries source."""
    lesson = field(body, "lesson", dict, optional=True) or {}
    if not all(isinstance(passed, bool) for passed in lesson.values()):
        raise ApiError(400, "'lesson' maps check names to true or false")
    time_ms = field(body, "time_ms", (int, float), optional=True)
    findings = field(body, "findings", list, optional=True) or []
    checked = []
    for finding in findings:
        if not isinstance(finding, dict):
            raise ApiError(400, "a finding is an object {\"text\", \"line\"}")
        checked.append({"text": field(finding, "text", str), "line": line_field(finding.get("line"))})
    return {"exercise": name_field(body, "exercise"), "name": name_field(body, "name"),
            "compiled": field(body, "compiled", bool), "passed": field(body, "passed", bool),
            "lesson": lesson, "time_ms": time_ms, "findings": checked}


class ClassViewHandler(ApiHandler):
    def get(self, exercise: str) -> None:
        user = self.require_user()
        if not user.instructor:
            raise ApiError(403, "the class view is for instructors")
        if not self.board.class_view:
            raise ApiError(403, "this course has not opted in to the class view")
        self.send(self.board.store.class_view(exercise))


class PageHandler(AuthenticatedHandler):
    """The page for the projector and for students; a browser without the hub's cookie is sent
    through the hub's OAuth login and back."""

    def get(self) -> None:
        if self.current_user is None:
            if self.refusal:                       # identified by the hub, but not in the course
                raise ApiError(403, self.refusal)
            self.redirect(self.get_login_url())
            return
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish((STATIC_DIR / "index.html").read_bytes())


class NotFoundHandler(ApiHandler):
    def prepare(self) -> None:
        raise ApiError(404, "no such route")


class Board:
    """What the handlers share: the store, the problems, the switches, the rate limits."""

    def __init__(self, board_store, board_problems: dict[str, problems.Problem], *, class_view: bool) -> None:
        self.store = board_store
        self.problems = board_problems
        self.class_view = class_view
        self.events = board_events.Events()
        self.hub_auth = hub_auth()
        self.quickcheck_times: dict[str, list[float]] = {}

    def quickcheck_allowed(self, user: str) -> bool:
        now = time.monotonic()
        recent = [t for t in self.quickcheck_times.get(user, ()) if now - t < 60]
        allowed = len(recent) < QUICKCHECKS_PER_MINUTE
        if allowed:
            recent.append(now)
        self.quickcheck_times[user] = recent
        return allowed


def make_app(board: Board, prefix: str | None = None) -> web.Application:
    """The tornado application of `board` under the service's prefix (the hub's
    JUPYTERHUB_SERVICE_PREFIX, "/services/board/"; "/" when run alone)."""
    prefix = prefix or os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/")
    prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    args = {"board": board}
    routes = [
        (prefix + r"api/submissions", SubmissionsHandler, args),
        (prefix + r"api/submissions/([0-9]+)", SubmissionHandler, args),
        (prefix + r"api/problems", ProblemsHandler, args),
        (prefix + r"api/boards/([^/]+)", BoardHandler, args),
        (prefix + r"api/quickchecks", QuickChecksHandler, args),
        (prefix + r"api/classview/([^/]+)", ClassViewHandler, args),
        (prefix + r"api/events", board_events.EventsHandler, args),
        (prefix + r"oauth_callback", HubOAuthCallbackHandler),
        (prefix + r"static/(.*)", web.StaticFileHandler, {"path": str(STATIC_DIR)}),
        (prefix, PageHandler, args),
        (prefix + r"api/.*", NotFoundHandler, args),
    ]
    return web.Application(routes, cookie_secret=os.urandom(32), hub_auth=board.hub_auth,
                           default_handler_class=NotFoundHandler, default_handler_args=args)
