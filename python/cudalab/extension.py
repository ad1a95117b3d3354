"""`%load_ext cudalab`: cudalab's magics in any IPython kernel (Colab, Kaggle, VS Code, ipykernel).

The extension runs one cudalab kernel process for the notebook (results persist from cell to cell,
as in the native kernel: %assert and %score read them) and registers a line magic for each of its
line magics and a cell magic for each of its cell magics, asking the kernel which there are (its
completions of "%" and "%%"), so a magic added to the C kernel needs nothing here. A name IPython
or another extension already uses is left to it; `%cudalab LINE` and `%%cudalab` reach any of
cudalab's magics whatever their names.

A magic sends its text to the kernel as an execute_request and relays what comes back on iopub:
display_data and execute_result through IPython's display machinery with the same MIME bundle
(rich tables, the result document, Vega-Lite and SVG charts), a display with a display_id (a sweep's
progress) updated in place, %interact's widgets rebuilt here as ipywidgets whose changes re-run the
command in the kernel (interact.py), stream text to sys.stdout / sys.stderr (the kernel writes nothing on
stderr when a cell succeeds, so neither does this), and an error as an exception with the kernel's
ename, evalue and traceback lines (a failing %assert fails the cell with AssertionError). Ctrl-C or
the notebook's stop button while a magic waits interrupts the cudalab kernel and ends the cell with
KeyboardInterrupt.

The kernel never outlives the notebook: the extension stops it on unload and at interpreter exit,
and the kernel itself exits within a second of its parent (the IPython kernel) dying, whatever
killed it (kernel/server/kernel.c watches its parent and JPY_PARENT_PID). Its own log goes to a
file, not to the notebook: ipykernel forwards its process's stderr into the cell's output.
"""
from __future__ import annotations

import atexit
import builtins
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from queue import Empty
from typing import Any, Callable

from . import interact, kernelspec, locate

RESULT_MIME = "application/vnd.cudalab.result+json"
START_TIMEOUT = 30.0          # seconds for the kernel to answer its first kernel_info
REPLY_TIMEOUT = 10.0          # seconds for a reply to a request that runs nothing (complete, help)
DRAIN_TIMEOUT = 10.0          # seconds to wait for an interrupted cell to end
DOCUMENTS_KEPT = 20000        # result documents kept for results(): as many as the kernel's own store
POLL_S = 0.25                 # how often a waiting magic checks that the kernel is still alive

# The kernel's error names that are Python's own exception classes (of the plain layout): the
# exception raised is both a CudalabError and that class, so `except AssertionError` catches it.
BUILTIN_ERRORS = ("AssertionError", "RuntimeError", "MemoryError", "TypeError", "ValueError", "LookupError",
                  "IndexError", "KeyError", "ZeroDivisionError", "OverflowError")


class CudalabError(Exception):
    """An error the cudalab kernel answered a cell with: .ename, .evalue and .traceback (its lines).

    IPython shows the kernel's own traceback lines (`_render_traceback_`), as the native kernel does,
    not the Python frames of this module."""

    def __init__(self, ename: str, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename, self.evalue, self.traceback = ename, evalue, list(traceback)

    def __str__(self) -> str:
        return self.evalue

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"{self.ename}: {self.evalue}"]


class CudalabInterrupt(KeyboardInterrupt):
    """A cell the cudalab kernel stopped on an interrupt: a KeyboardInterrupt (so the cell ends as an
    interrupted one does) shown with the kernel's own lines."""

    def __init__(self, ename: str, evalue: str, traceback: list[str]):
        super().__init__(evalue)
        self.ename, self.evalue, self.traceback = ename, evalue, list(traceback)

    def _render_traceback_(self) -> list[str]:
        return self.traceback or [f"KeyboardInterrupt: {self.evalue}"]


# the name frontends and nbclient report (ipykernel's ename is the class's __name__), as the native
# kernel's; `except CudalabInterrupt` and `except KeyboardInterrupt` both still catch it
CudalabInterrupt.__name__ = CudalabInterrupt.__qualname__ = "KeyboardInterrupt"


_error_classes: dict[str, type] = {}


def error_class(ename: str) -> type:
    """The exception class named ename (so IPython and nbclient report the kernel's ename)."""
    if ename not in _error_classes:
        name = ename if ename.isidentifier() else "CudalabError"
        builtin = getattr(builtins, name, None) if name in BUILTIN_ERRORS else None
        bases = (CudalabError, builtin) if builtin else (CudalabError,)
        _error_classes[ename] = type(name, bases, {"__module__": "cudalab"})
    return _error_classes[ename]


class KernelDied(RuntimeError):
    """The cudalab kernel process is gone; the next magic starts a new one."""


def _display():
    from IPython import display
    return display


class Session:
    """One cudalab kernel process and a client of it, for one IPython session."""

    def __init__(self) -> None:
        self.km: Any = None
        self.kc: Any = None
        self.log_path: Path | None = None
        self._log_file: Any = None
        self._keep_log = False
        self.mirrors: interact.Mirrors | None = None    # the %interact widgets of the running kernel

    # ------------------------------------------------------------------ life

    @property
    def pid(self) -> int | None:
        proc = self._process()
        return proc.pid if proc is not None else None

    def _process(self):
        """The kernel's Popen: the provisioner's (jupyter_client 7 and later) or km.kernel (6.1, which
        Colab's runtime still pins: the extension must not make pip replace it)."""
        if self.km is None:
            return None
        prov = getattr(self.km, "provisioner", None)
        return getattr(prov, "process", None) if prov is not None else getattr(self.km, "kernel", None)

    def alive(self) -> bool:
        proc = self._process()
        return proc is not None and proc.poll() is None

    def start(self) -> None:
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpec

        spec = kernelspec.kernel_json(argv0=[str(locate.binary())])
        km = KernelManager()
        km._kernel_spec = KernelSpec(resource_dir=str(locate.kernelspec_dir()), **spec)
        km.shutdown_wait_time = 3.0
        named = os.environ.get("CUDALAB_EXTENSION_LOG")
        if named:
            self.log_path, self._keep_log = Path(named), True
            self._log_file = open(self.log_path, "ab")
        else:
            fd, path = tempfile.mkstemp(prefix="cudalab-kernel-", suffix=".log")
            self.log_path, self._keep_log = Path(path), False
            self._log_file = os.fdopen(fd, "wb")
        km.start_kernel(env=locate.kernel_env(), stdin=subprocess.DEVNULL, stdout=self._log_file,
                        stderr=self._log_file)
        self.km = km
        kc = km.client()
        kc.start_channels()
        self.kc = kc
        # a widget sends to the kernel that opened it: after a restart its models are gone
        self.mirrors = interact.Mirrors(send=lambda cid, data: self.comm_update(kc, cid, data),
                                        close_remote=lambda cid: self.comm_close(kc, cid),
                                        keep=_keep_result)
        self._wait_ready()

    def _wait_ready(self) -> None:
        # The kernel's XPUB welcomes each subscriber: after it, nothing published is lost to the
        # subscription still being on its way (cudalab always sends it; the wait is bounded anyway).
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self._check_alive("while starting")
            try:
                msg = self.kc.iopub_channel.get_msg(timeout=POLL_S)
            except Empty:
                continue
            if msg["msg_type"] == "iopub_welcome":
                break
        msg_id = self.kc.kernel_info()
        self._reply(msg_id, START_TIMEOUT)
        self._drain(msg_id, relay=False, timeout=REPLY_TIMEOUT)

    def stop(self) -> None:
        """Shuts the kernel down (a shutdown_request, then kills what is left) and forgets it."""
        km, kc = self.km, self.kc
        proc = self._process()
        self.km = self.kc = self.mirrors = None
        try:
            if kc is not None:
                kc.stop_channels()
            if km is not None:
                if proc is not None and proc.poll() is None:
                    try:
                        km.shutdown_kernel(now=False)
                    except Exception:
                        proc.kill()
                        proc.wait(5)
                km.cleanup_resources()
        finally:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
            if self.log_path is not None and not self._keep_log:
                try:
                    self.log_path.unlink()
                except OSError:
                    pass

    def _check_alive(self, doing: str) -> None:
        proc = self._process()
        if proc is None or proc.poll() is None:
            return
        log = self.log_path.read_text(errors="replace")[-2000:] if self.log_path and self.log_path.exists() else ""
        self._keep_log = True
        status = proc.returncode
        self.stop()
        raise KernelDied(f"the cudalab kernel exited ({'signal ' + str(-status) if status < 0 else 'status ' + str(status)}) "
                         f"{doing}; the next cudalab magic starts a new one (earlier results are gone from "
                         f"%assert, cudalab.results() keeps them). Its log, {self.log_path}:\n{log}")

    def ensure(self) -> None:
        """A running kernel: the one there is, or a new one (the first magic, or after one died)."""
        if self.km is not None and not self.alive():
            self.stop()
        if self.km is None:
            self.start()

    # ------------------------------------------------------------------ requests

    def _reply(self, msg_id: str, timeout: float | None) -> dict:
        """The shell reply to msg_id (replies to earlier, abandoned requests are dropped)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while deadline is None or time.monotonic() < deadline:
            self._check_alive("while answering")
            try:
                msg = self.kc.shell_channel.get_msg(timeout=POLL_S)
            except Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        raise TimeoutError(f"the cudalab kernel did not answer within {timeout:g} s (its log: {self.log_path})")

    def complete(self, code: str) -> list[str]:
        self.ensure()
        msg_id = self.kc.complete(code, len(code))
        reply = self._reply(msg_id, REPLY_TIMEOUT)
        return list(reply["content"].get("matches", []))

    def run(self, code: str) -> None:
        """Runs code in the cudalab kernel, relaying its outputs; raises its error, if it has one."""
        self.ensure()
        msg_id = self.kc.execute(code, silent=False, store_history=True, allow_stdin=False, stop_on_error=False)
        error = self._relay_until_idle(msg_id)
        reply = self._reply(msg_id, REPLY_TIMEOUT)
        for payload in reply["content"].get("payload", []):
            if payload.get("source") == "set_next_input":
                _shell_set_next_input(payload.get("text", ""), payload.get("replace", False))
        if error is not None:
            ename, evalue, tb = error.get("ename", "Error"), error.get("evalue", ""), error.get("traceback", [])
            if ename == "KeyboardInterrupt":
                raise CudalabInterrupt(ename, evalue, tb)
            raise error_class(ename)(ename, evalue, tb)

    def _relay_until_idle(self, msg_id: str) -> dict | None:
        """Relays the request's outputs up to its idle status and returns its error content. The stop
        button (SIGINT to this IPython kernel) lands here while we wait: it is passed on, and ends
        the wait with CudalabInterrupt carrying what the cudalab kernel said about what it stopped."""
        try:
            return self._drain(msg_id, relay=True, timeout=None)
        except KeyboardInterrupt:
            self.km.interrupt_kernel()
            error = None
            try:
                error = self._drain(msg_id, relay=True, timeout=DRAIN_TIMEOUT)
            except (TimeoutError, KeyboardInterrupt):
                pass
            if error is None:
                error = {"ename": "KeyboardInterrupt", "evalue": "interrupted", "traceback": []}
            raise CudalabInterrupt(error.get("ename", "KeyboardInterrupt"), error.get("evalue", ""),
                                   error.get("traceback", [])) from None

    def _comm_send(self, kc: Any, msg_type: str, comm_id: str, data: dict) -> str:
        """Sends a comm message to the kernel as a frontend would (kc: the client of the kernel that
        opened the comm); its msg_id."""
        if kc is not self.kc or not self.alive():
            raise KernelDied("the cudalab kernel that showed this %interact has exited: run its cell again")
        msg = kc.session.msg(msg_type, {"comm_id": comm_id, "data": data})
        kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]

    def comm_update(self, kc: Any, comm_id: str, data: dict) -> None:
        """A change of a %interact control, sent to its model in the kernel; waits for the re-run it
        starts, relaying what comes back (the Output's new outputs)."""
        self._relay_until_idle(self._comm_send(kc, "comm_msg", comm_id, data))

    def comm_close(self, kc: Any, comm_id: str) -> None:
        """Closes a %interact's model in the kernel (and with it the whole %interact). Not waited for:
        it is sent while the cell that opened the model still runs, and the kernel takes it after."""
        self._comm_send(kc, "comm_close", comm_id, {})

    def _drain(self, msg_id: str, relay: bool | Callable[[str, dict], None],
               timeout: float | None) -> dict | None:
        """Reads iopub until the request's idle status; relays its outputs (relay: True shows them, a
        callable gets each (msg_type, content)); returns its error content."""
        deadline = None if timeout is None else time.monotonic() + timeout
        error = None
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the cudalab kernel did not finish within {timeout:g} s")
            try:
                msg = self.kc.iopub_channel.get_msg(timeout=POLL_S)
            except Empty:
                self._check_alive("while running a cell")
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                return error
            if kind == "error":
                error = content
            elif callable(relay):
                relay(kind, content)
            elif relay:
                self._relay(kind, content)

    def _relay(self, kind: str, content: dict) -> None:
        if kind == "stream":
            out = sys.stderr if content.get("name") == "stderr" else sys.stdout
            out.write(content.get("text", ""))
            out.flush()
            return
        if kind == "clear_output":
            _display().clear_output(wait=bool(content.get("wait")))
            return
        if kind in ("comm_open", "comm_msg", "comm_close"):
            if self.mirrors is not None:
                getattr(self.mirrors, kind)(content)
            return
        if kind not in ("display_data", "execute_result", "update_display_data"):
            return
        data, metadata = content.get("data", {}), content.get("metadata", {})
        display_id = (content.get("transient") or {}).get("display_id")
        _keep_result(data)
        display = _display()
        if interact.WIDGET_VIEW_MIME in data and self.mirrors is not None and self.mirrors.show(data, display):
            return
        if display_id:
            display.display(data, raw=True, metadata=metadata, display_id=display_id,
                            update=kind == "update_display_data")
        else:
            display.publish_display_data(data, metadata=metadata)


def _keep_result(data: dict) -> None:
    """Keeps the result document a display's bundle carries, if any, for cudalab.results() (a result
    is never a display updated later, so each is kept once)."""
    if RESULT_MIME in data:
        _documents.append(data[RESULT_MIME])


def _shell_set_next_input(text: str, replace: bool) -> None:
    from IPython import get_ipython
    ip = get_ipython()
    if ip is not None and text:
        ip.set_next_input(text, replace=replace)


# ---------------------------------------------------------------------- the IPython side

_session: Session | None = None
# The result documents of every cell, kept here rather than in the Session so that they outlive a
# kernel that died and %reload_ext; as many as the kernel's own store keeps (README: 20,000).
_documents: deque[dict] = deque(maxlen=DOCUMENTS_KEPT)
_registered: list[tuple[str, str]] = []      # (kind, name) of every magic this extension added
_atexit_registered = False


def session() -> Session:
    """The extension's session (the cudalab kernel starts on first use)."""
    global _session
    if _session is None:
        _session = Session()
    return _session


def kernel_pid() -> int | None:
    """The pid of the running cudalab kernel, or None."""
    return _session.pid if _session is not None else None


# One cudalab magic as IPython sees it: called with the (already variable-expanded) line, and for a
# cell magic the cell; its __doc__ (`%matmul?`) is the kernel's `%help NAME`, asked once.
class _Magic:

    def __init__(self, name: str, kind: str):
        self.__name__ = name
        self.kind = kind
        self._doc: str | None = None

    def __call__(self, line: str, cell: str | None = None) -> None:
        if self.kind == "cell":
            session().run(f"%%{self.__name__} {line}\n{cell or ''}")
        else:
            session().run(f"%{self.__name__} {line}")

    @property
    def __doc__(self) -> str:            # type: ignore[override]
        if self._doc is None:
            self._doc = help_text(self.__name__)
        return self._doc


def help_text(name: str) -> str:
    """%help NAME's text/plain, without showing it."""
    s = session()
    s.ensure()
    msg_id = s.kc.execute(f"%help {name}", silent=False, store_history=False)
    texts: list[str] = []

    def keep(kind: str, content: dict) -> None:
        if kind in ("execute_result", "display_data"):
            texts.append(content["data"].get("text/plain", ""))

    s._drain(msg_id, relay=keep, timeout=REPLY_TIMEOUT)
    s._reply(msg_id, REPLY_TIMEOUT)
    return "".join(texts) or f"cudalab's %{name}: `%help {name}` shows its flags."


def cudalab_magic(line: str, cell: str | None = None) -> None:
    """%cudalab LINE runs LINE as a cudalab cell; %%cudalab runs the whole cell as one (any magic,
    including one whose name IPython already uses)."""
    session().run(line if cell is None else (f"{line}\n{cell}" if line.strip() else cell))


def load(ip) -> None:
    """load_ipython_extension: start the kernel, register its magics."""
    global _atexit_registered
    s = session()
    s.ensure()
    if not _atexit_registered:
        atexit.register(_at_exit)
        _atexit_registered = True
    if _registered:
        return                                    # %reload_ext: the magics are there
    taken = ip.magics_manager.magics
    wanted = [("line", m[1:]) for m in s.complete("%") if m.startswith("%") and not m.startswith("%%")]
    wanted += [("cell", m[2:]) for m in s.complete("%%") if m.startswith("%%")]
    wanted.append(("line_cell", "cudalab"))
    skipped = []
    for kind, name in wanted:
        if not name.isidentifier():
            continue
        kinds = ("line", "cell") if kind == "line_cell" else (kind,)
        if any(name in taken[k] for k in kinds):
            skipped.append(("%%" if kind == "cell" else "%") + name)
            continue
        func: Callable = cudalab_magic if name == "cudalab" else _Magic(name, kind)
        ip.register_magic_function(func, magic_kind=kind, magic_name=name)
        _registered.extend((k, name) for k in kinds)
    if skipped:
        print(f"cudalab: {', '.join(skipped)} already defined in IPython: run them as `%cudalab ...`")


def unload(ip) -> None:
    """unload_ipython_extension: remove the magics, stop the kernel."""
    global _session
    for kind, name in _registered:
        ip.magics_manager.magics[kind].pop(name, None)
        if hasattr(ip.magics_manager.user_magics, name):
            try:
                delattr(ip.magics_manager.user_magics, name)
            except AttributeError:
                pass
    _registered.clear()
    if _session is not None:
        if _session.mirrors is not None:
            _session.mirrors.close_all()         # as the kernel's shutdown closes its own widgets
        _session.stop()
        _session = None


def _at_exit() -> None:
    if _session is not None:
        try:
            _session.stop()
        except Exception:
            pass


def documents() -> list[dict]:
    """Every result document this session's cudalab magics produced, oldest first."""
    return list(_documents)
