"""__main__.py — `python -m cudalab_board serve --db URL --problems FILE --port N [--class-view]`.

JupyterHub starts this as the managed service "board" (deploy/jupyterhub/jupyterhub_config.py),
with the environment HubOAuth reads (JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN,
JUPYTERHUB_SERVICE_PREFIX, …). One process serves the HTTP API and runs the queue: the runner
(runner.py) takes queued submissions one at a time through a real cudalab kernel, the binary in
$CUDALAB_BIN (else `cudalab` on PATH). `--no-runner` serves the API alone (a board whose queue
another process runs, and the service's own tests).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys

from . import problems, store as board_store
from .events import AnnouncingStore
from .service import Board, MAX_BODY_BYTES, make_app

log = logging.getLogger("cudalab_board")


def start_runner(store, board_problems) -> None:
    """The queue's hand-off to the runner, in this process (the one call the contract fixes);
    `store` is the AnnouncingStore, so that its results reach the page live."""
    from . import runner
    binary = os.environ.get("CUDALAB_BIN") or shutil.which("cudalab")
    if not binary:
        sys.exit("cudalab_board: no cudalab binary to run submissions with (set CUDALAB_BIN)")
    runner.Runner(store, board_problems, binary).start()


async def serve(args: argparse.Namespace) -> None:
    board_problems = problems.load_problems(args.problems)
    store = board_store.open_store(args.db)
    board = Board(store, board_problems, class_view=args.class_view)
    board.events.bind(asyncio.get_running_loop())
    app = make_app(board)
    server = app.listen(args.port, address=args.ip, max_body_size=MAX_BODY_BYTES,
                        xheaders=True)                      # behind the hub's proxy
    if not args.no_runner:
        start_runner(AnnouncingStore(store, board.events), board_problems)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log.info("cudalab board on %s:%d, %d problems, class view %s", args.ip, args.port,
             len(board_problems), "on" if args.class_view else "off")
    await stop.wait()
    server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cudalab_board")
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve", help="serve the board's API and page, and run its queue")
    s.add_argument("--db", default="sqlite:///board.sqlite",
                   help="sqlite:///PATH (on this host's local disk) or postgresql://…")
    s.add_argument("--problems", required=True, help="the course's problems file (JSON)")
    s.add_argument("--port", type=int, default=int(os.environ.get("JUPYTERHUB_SERVICE_PORT", 10101)))
    s.add_argument("--ip", default="127.0.0.1")
    s.add_argument("--class-view", action="store_true",
                   help="accept the class's quick checks (the course opts in)")
    s.add_argument("--no-runner", action="store_true", help="serve the API only; run no submissions")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[board %(asctime)s %(levelname)s] %(message)s")
    try:
        asyncio.run(serve(args))
    except (problems.ProblemError, ValueError, OSError) as e:
        print(f"cudalab_board: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
