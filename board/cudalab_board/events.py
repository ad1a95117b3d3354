"""events.py — server-sent events: the page learns that a board or a class view changed.

`GET api/events` holds the response open and writes `event: board` / `data: {"problem": P}` and
`event: classview` / `data: {"exercise": E}` whenever either changes; the page then re-fetches
the route it shows (no data of the board travels in an event, so an event can never show a
student more than their own fetch would). Class-view events go to instructors only.

Changes come from the service's own writes (a submission queued, a quick check stored) and from
the store, which the runner writes: `Events.watch_store` polls the store's change counter, so a
result is announced whichever process or thread recorded it. A slow reader never blocks the
others: each subscriber keeps a set of pending changes, so a burst of 200 results to one board is
one event when the reader catches up.
"""
from __future__ import annotations

import asyncio
import json
import logging

from tornado.iostream import StreamClosedError

from .auth import AuthenticatedHandler

log = logging.getLogger("cudalab_board")

BOARD = "board"
CLASSVIEW = "classview"
KEY_OF = {BOARD: "problem", CLASSVIEW: "exercise"}
KEEPALIVE_S = 15.0        # a comment line this often keeps proxies from closing an idle stream
WATCH_INTERVAL_S = 0.5    # how often the store's change counter is read


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

    async def watch_store(self, store) -> None:
        """Announce what others wrote into the store (the runner's results): the store's
        `changes_since(cursor)` answers the problems and exercises changed after a cursor."""
        cursor, _, _ = await asyncio.to_thread(store.changes_since, None)
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            try:
                cursor, problems, exercises = await asyncio.to_thread(store.changes_since, cursor)
            except Exception:          # a database hiccup must not end the live view for good
                log.exception("reading the store's changes failed; retrying")
                continue
            for problem in problems:
                self._deliver(BOARD, problem)
            for exercise in exercises:
                self._deliver(CLASSVIEW, exercise)


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
        try:
            self.write(": connected\n\n")
            await self.flush()
            while True:
                try:
                    await asyncio.wait_for(subscriber.wake.wait(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    self.write(": keepalive\n\n")
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
