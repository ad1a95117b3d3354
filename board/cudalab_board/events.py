"""events.py — server-sent events: the page learns that a board or a class view changed.

`GET api/events` holds the response open (for STREAM_S, then the browser opens the next) and writes `event: board` / `data: {"problem": P}` and
`event: classview` / `data: {"exercise": E}` whenever either changes; the page then re-fetches
the route it shows (no data of the board travels in an event, so an event can never show a
student more than their own fetch would). Class-view events go to instructors only.

Changes come from the service's own writes (a submission queued, a quick check stored) and from
the runner's, which reaches the store through AnnouncingStore (the runner works in this process,
in a thread of its own: `publish` hands the change to the event loop). A slow reader never blocks the
others: each subscriber keeps a set of pending changes, so a burst of 200 results to one board is
one event when the reader catches up.
"""
from __future__ import annotations

import asyncio
import json

from tornado.iostream import StreamClosedError

from .auth import AuthenticatedHandler

BOARD = "board"
CLASSVIEW = "classview"
KEY_OF = {BOARD: "problem", CLASSVIEW: "exercise"}
# A stream ends this long after it opened, and the page's EventSource opens the next one after
# RECONNECT_MS (and re-fetches what it shows, for what changed in between): a proxy that passes only
# whole responses (the Python port of configurable-http-proxy, whose request timeout is 20 s) still
# delivers each stream's events, and no proxy's idle timeout ever cuts one (no keepalive needed).
STREAM_S = 15.0
RECONNECT_MS = 500


class Subscriber:
    def __init__(self, instructor: bool) -> None:
        self.instructor = instructor
        self.pending: dict[tuple[str, str], None] = {}   # ordered set of (event, key)
        self.wake = asyncio.Event()

    def offer(self, event: str, key: str) -> None:
        if event == CLASSVIEW and not self.instructor:
            return
        self.pending[(event, key)] = None
        self.wake.set()

    def take(self) -> list[tuple[str, str]]:
        changes = list(self.pending)
        self.pending.clear()
        self.wake.clear()
        return changes


class Events:
    """The service's broadcaster; `publish` may be called from any thread."""

    def __init__(self) -> None:
        self.subscribers: set[Subscriber] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def publish(self, event: str, key: str) -> None:
        assert event in KEY_OF, event
        if self.loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._deliver(event, key)
        else:
            self.loop.call_soon_threadsafe(self._deliver, event, key)

    def _deliver(self, event: str, key: str) -> None:
        for subscriber in self.subscribers:
            subscriber.offer(event, key)



class AnnouncingStore:
    """The store as the runner sees it: every write that changes a board (a submission taken off
    the queue, ranked, failed, an error, a new reference run) is announced once it is committed.
    Everything else passes through unchanged."""

    ANNOUNCED = ("claim_next_submission", "finish_submission", "rank_submission", "fail_submission",
                 "error_submission", "requeue_interrupted", "record_run")

    def __init__(self, store, events: Events) -> None:
        self._store = store
        self._events = events

    def __getattr__(self, name: str):
        attribute = getattr(self._store, name)
        if name not in self.ANNOUNCED:
            return attribute

        def announced(*args, **kwargs):
            outcome = attribute(*args, **kwargs)
            for problem in self._problems_of(name, args, kwargs, outcome):
                self._events.publish(BOARD, problem)
            return outcome
        return announced

    def _problems_of(self, name: str, args, kwargs, outcome) -> list[str]:
        if name == "record_run":
            return [args[0] if args else kwargs["problem"]]
        if name == "claim_next_submission":
            return [outcome["problem"]] if outcome else []
        if name == "requeue_interrupted":
            return []                      # at start, before anyone watches
        sub_id = args[0] if args else kwargs["sub_id"]
        found = self._store.get_submission(sub_id)
        return [found["problem"]] if found else []


class EventsHandler(AuthenticatedHandler):
    """GET api/events: the stream itself."""

    async def get(self) -> None:
        user = self.require_user()
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")      # nginx in front of a hub: do not buffer
        subscriber = self.subscriber = Subscriber(user.instructor)
        events: Events = self.board.events
        events.subscribers.add(subscriber)
        loop = asyncio.get_running_loop()
        ends = loop.time() + STREAM_S
        try:
            self.write(f"retry: {RECONNECT_MS}\n: connected\n\n")
            await self.flush()
            while loop.time() < ends:
                try:
                    await asyncio.wait_for(subscriber.wake.wait(), ends - loop.time())
                except asyncio.TimeoutError:
                    break
                for event, key in subscriber.take():
                    self.write(f"event: {event}\ndata: {json.dumps({KEY_OF[event]: key})}\n\n")
                await self.flush()
        except StreamClosedError:
            pass
        finally:
            events.subscribers.discard(subscriber)

    def on_connection_close(self) -> None:
        # wake the loop above so that it notices the closed stream at its next flush
        subscriber = getattr(self, "subscriber", None)
        if subscriber is not None:
            subscriber.wake.set()
