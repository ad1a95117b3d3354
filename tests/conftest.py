"""conftest.py — shared fixtures and helpers for the Python tests of the cudalab kernel.

What lives here:
  * a session-wide temporary JUPYTER_PATH holding kernels/cudalab/kernel.json, written from
    share/jupyter/kernelspecs/cudalab/kernel.json with argv[0] = the binary under test
    ($CUDALAB_BIN, e.g. build-asan/bin/cudalab, else build/bin/cudalab); every test is
    skipped with a clear message when that binary does not exist;
  * `kernel`: a kernel started by jupyter_client's KernelManager, its stderr captured to a file
    (`kernel.log`), yielded as the pair (km, kc); `start_kernel` makes more (other key, env);
  * `spawn_kernel`: a kernel started by hand with subprocess from a connection file we write
    (ipc transport, tcp on 0.0.0.0, an empty key);
  * `execute(kc, code, **kw) -> (reply, iopub_msgs)`: one execute_request and every iopub
    message whose parent is that request, up to and including its idle status;
  * `Raw` (fixture `raw`): hand-built wire messages over pyzmq + hmac, so tests can send what
    jupyter_client never would: bad or replayed signatures, garbage frames, wrong versions.

Test modules import the plain helpers with `from conftest import ...` (pytest puts tests/ on
sys.path because this file has no package around it).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import itertools
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from queue import Empty
from typing import Any, Callable, Iterable, Iterator

import psutil
import pytest
import zmq
from jupyter_client import BlockingKernelClient, KernelManager

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import schema_variants  # noqa: E402  (the schemas' lists of variants, and the kernel under test)
from schemas import load_schema  # noqa: E402  (scripts/schemas.py: one loader for tests and record.py)

KERNELSPEC_TEMPLATE = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab" / "kernel.json"
DELIM = b"<IDS|MSG>"
TIMEOUT = 10.0            # seconds to wait for any one expected message
SILENCE = 0.3             # seconds of quiet that count as "no reply"
TEST_TIMEOUT = 60         # pytest-timeout per test, unless a test sets its own
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer")


def _raise_file_limit() -> None:
    """One pytest process starts hundreds of kernels and clients (zmq sockets, pipes, log files) over a
    run; the common soft limit of 1024 descriptors is near enough that a slow teardown can cross it, so
    take what the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, 65536), hard))


_raise_file_limit()


def kernel_binary() -> Path:
    """The kernel under test: $CUDALAB_BIN (relative to the repo root if not absolute) or build/bin/cudalab."""
    return schema_variants.kernel_binary()


# ---------------------------------------------------------------- pytest configuration

def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "serial: the test bounds a wall-clock time (a heartbeat stall, a wait for a turn) that tests "
        "running beside it on a 2-core machine would exceed; make test runs these after the parallel "
        "part, one at a time (-m serial)")


def _module_scoped_here(item: pytest.Item) -> bool:
    """Whether the test uses a fixture of its own module that is built once for more than one test
    (module or session scope: a graded course, a live hub, a built wheel)."""
    module = item.nodeid.split("::")[0]
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(d.scope != "function" and d.baseid == module for ds in defs.values() for d in ds)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A hang must fail, not block: every test gets a timeout unless it names its own.

    make test spreads the suite over pytest-xdist workers with --dist loadgroup (tests one by one,
    except a group's, which share one worker): the tests of a module with a module- or session-scoped
    fixture of its own form a group, so that fixture is built once, not once per worker."""
    xdist = config.pluginmanager.hasplugin("xdist")        # (which knows the xdist_group mark)
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT))
        if xdist and item.get_closest_marker("xdist_group") is None and _module_scoped_here(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# ---------------------------------------------------------------- environment

RECORDED_FIXTURES = Path(__file__).resolve().parent / "notebooks" / "fixtures"


@pytest.fixture
def recorded_folder(tmp_path, monkeypatch) -> Path:
    """A notebooks folder as %recorded finds one: the fixture notebook beside its recording
    (tests/notebooks/fixtures); the test, and a kernel it starts, work in it."""
    shutil.copy(RECORDED_FIXTURES / "mini-recorded.ipynb", tmp_path)
    shutil.copytree(RECORDED_FIXTURES / "recorded", tmp_path / "recorded")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_kernelspec(data: Path, logos: bool = False) -> Path:
    """The cudalab kernelspec of the binary under test in the Jupyter data path data (with its logos, for
    a frontend); returns its folder."""
    spec_dir = data / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True)
    spec = json.loads(KERNELSPEC_TEMPLATE.read_text())
    spec["argv"] = [str(kernel_binary())] + list(spec["argv"][1:])
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    for logo in KERNELSPEC_TEMPLATE.parent.glob("logo-*") if logos else ():     # logo-svg.svg, the PNGs
        shutil.copy(logo, spec_dir / logo.name)
    return spec_dir


def kill_survivors(procs: Iterable[psutil.Process], server: str, describe=lambda p: p.name()) -> list[str]:
    """The processes of a stopped server still alive after 5 s, killed; a line for each."""
    _, alive = psutil.wait_procs(list(procs), timeout=5)
    left = []
    for p in alive:
        try:
            left.append(f"pid {p.pid} ({describe(p)}) outlived {server}: killed")
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
    return left


@contextlib.contextmanager
def serving(server: Any) -> Iterator[Any]:
    """A test's server (JupyterLab, JupyterHub: start(), and stop() returning what it had to kill) for the
    length of a fixture; what outlived it is said on stderr."""
    try:
        server.start()
        yield server
    finally:
        left = server.stop()
        if left:
            print("\n".join(left), file=sys.stderr)


@pytest.fixture(scope="session", autouse=True)
def jupyter_env(tmp_path_factory: pytest.TempPathFactory):
    """A private Jupyter data path with the cudalab kernelspec, set before any lookup."""
    binary = kernel_binary()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.skip(f"cudalab kernel binary not found at {binary}: run `make` first "
                    f"(or set CUDALAB_BIN to the binary to test)")
    root = tmp_path_factory.mktemp("jupyter")
    data = root / "share" / "jupyter"
    spec_dir = write_kernelspec(data)
    (root / "runtime").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(data))
        mp.setenv("JUPYTER_RUNTIME_DIR", str(root / "runtime"))
        mp.setenv("JUPYTER_CONFIG_DIR", str(root / "config"))   # no user config in the way
        mp.setenv("JUPYTER_PLATFORM_DIRS", "1")                  # silences a jupyter_core warning
        mp.delenv("CUDALAB_DEBUG", raising=False)                # tests count log lines
        # this session's own admission directory (the kernel makes it, mode 0700): make test runs the
        # suite in several pytest workers (xdist) at once, and a timed run in one worker's kernel must
        # not make another worker's cell wait for its turn (a wait line, waited_ms > 0). Tests of
        # admission itself set their own.
        mp.setenv("CUDALAB_ADMISSION_DIR", str(root / "admission"))
        yield {"root": root, "data": data, "spec_dir": spec_dir, "binary": binary}


# ---------------------------------------------------------------- the kernel's stderr

class KernelLog:
    """The kernel's stderr (and its worker's, which shares it), captured to a file."""

    def __init__(self, path: Path):
        self.path = path

    def text(self) -> str:
        return self.path.read_text(errors="replace") if self.path.exists() else ""

    def lines(self, needle: str | None = None) -> list[str]:
        return [l for l in self.text().splitlines() if needle is None or needle in l]

    def wait_for(self, needle: str, count: int = 1, timeout: float = 5.0) -> list[str]:
        """Waits until at least `count` lines contain needle; returns the matching lines."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.lines(needle)
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def sanitizer_reports(self) -> list[str]:
        return [l for l in self.lines() if any(m in l for m in SANITIZER_MARKERS)]


class KernelPair(tuple):
    """(km, kc) that also carries .log (KernelLog) and .pid, so `km, kc = kernel` works."""

    def __new__(cls, km: KernelManager, kc: BlockingKernelClient, log: KernelLog):
        self = super().__new__(cls, (km, kc))
        self.log = log
        return self

    @property
    def km(self) -> KernelManager:
        return self[0]

    @property
    def kc(self) -> BlockingKernelClient:
        return self[1]

    @property
    def pid(self) -> int:
        return self[0].provisioner.process.pid


def _check_sanitizers(log: KernelLog) -> None:
    reports = log.sanitizer_reports()
    if reports:
        pytest.fail("sanitizer reports in the kernel's stderr:\n" + "\n".join(reports[:20]) +
                    f"\n(full log: {log.path})")


def wait_ready(kc: BlockingKernelClient, log: KernelLog) -> None:
    """Ready = iopub subscribed (its iopub_welcome arrived) and a kernel_info answered, with that
    request's busy/idle drained, so iopub holds nothing when the test starts.

    Quicker than jupyter_client's wait_for_ready, which sleeps 0.2 s flushing iopub; when no
    welcome comes (the welcome tests say why) it falls back to wait_for_ready."""
    try:
        welcome = kc.get_iopub_msg(timeout=TIMEOUT)
    except Empty:
        welcome = None
    if welcome is None or welcome["msg_type"] != "iopub_welcome":
        try:
            kc.wait_for_ready(timeout=TIMEOUT)
        except RuntimeError as e:
            pytest.fail(f"the kernel did not become ready: {e}\nits stderr:\n{log.text()}")
        return
    msg_id = kc.kernel_info()
    try:
        get_reply(kc, msg_id)
        collect_iopub(kc, msg_id)
    except AssertionError as e:
        pytest.fail(f"the kernel did not become ready: {e}\nits stderr:\n{log.text()}")


PORT_RACE_TRIES = 3


def lost_a_port_race(km: KernelManager, log: KernelLog) -> bool:
    """Whether the kernel exited at its start because a port jupyter_client had chosen for it was
    taken before it could bind it. jupyter_client picks free ports and closes them for the kernel to
    bind; under make test's parallel workers another process (a client's outgoing connection, another
    kernel) can take one in between. Not the kernel's doing: the test starts it again on new ports."""
    proc = km.provisioner.process if km.provisioner else None
    if proc is None:
        return False
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        return False
    return "Address already in use" in log.text()


@pytest.fixture
def start_kernel(tmp_path: Path) -> Iterable[Callable[..., KernelPair]]:
    """Factory: start_kernel(key=None, env=None, transport="tcp") -> KernelPair(km, kc) with .log.

    key=b"" starts an unsigned kernel (empty key in the connection file). transport="ipc" names
    socket paths under tmp_path, as Jupyter Server does (a connection file per kernel, its sockets
    beside it). Safe to call from several threads at once. Every kernel is shut down at the end of
    the test and its stderr checked for sanitizer reports."""
    started: list[tuple[KernelPair, Any]] = []
    numbers = itertools.count()

    def start(key: bytes | None = None, env: dict[str, str] | None = None, transport: str = "tcp") -> KernelPair:
        n = next(numbers)
        for attempt in range(PORT_RACE_TRIES):
            log = KernelLog(tmp_path / f"kernel{n}{'.' + str(attempt) if attempt else ''}.stderr")
            # without a connection file of its own, an ipc kernel's sockets would be ./kernel-ipc-1…5,
            # the same paths for every kernel this process starts
            km = KernelManager(kernel_name="cudalab", transport=transport,
                               **({"connection_file": str(tmp_path / f"kernel{n}.json")} if transport == "ipc" else {}))
            km.shutdown_wait_time = 3.0
            if key is not None:
                km.session.key = key
            fh = open(log.path, "wb")
            kw: dict[str, Any] = {"stderr": fh}
            if env is not None:
                kw["env"] = {**os.environ, **env}
            km.start_kernel(**kw)
            kc = km.client()
            kc.start_channels()
            pair = KernelPair(km, kc, log)
            try:
                wait_ready(kc, log)
            except pytest.fail.Exception:
                if attempt + 1 < PORT_RACE_TRIES and lost_a_port_race(km, log):
                    kc.stop_channels()
                    km.cleanup_resources()
                    fh.close()
                    continue
                started.append((pair, fh))
                raise
            started.append((pair, fh))
            return pair
        raise AssertionError("unreachable")

    yield start
    problems = []
    for pair, fh in reversed(started):
        km, kc = pair
        try:
            problems += _stop(km, kc, pair.log)
        finally:
            fh.close()
    for pair, _ in started:
        _check_sanitizers(pair.log)
    if problems:
        pytest.fail("\n".join(problems))


def _stop(km: KernelManager, kc: BlockingKernelClient, log: KernelLog) -> list[str]:
    """Shuts a kernel down the way a frontend does; a kernel still running must then exit 0.

    Quicker than km.shutdown_kernel(), which polls every 0.1 s; that is the fallback."""
    problems = []
    proc = km.provisioner.process if km.provisioner else None
    try:
        if proc is not None and proc.poll() is None:
            kc.control_channel.send(kc.session.msg("shutdown_request", {"restart": False}))
            try:
                rc = proc.wait(5)
                if rc != 0:
                    problems.append(f"kernel pid {proc.pid} exited {rc} after shutdown_request; "
                                    f"its stderr:\n{log.text()}")
            except subprocess.TimeoutExpired:
                problems.append(f"kernel pid {proc.pid} still running 5 s after shutdown_request")
                km.shutdown_kernel(now=True)
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    return problems


@pytest.fixture
def kernel(start_kernel) -> KernelPair:
    """One fresh kernel for this test: unpack as `km, kc = kernel`; kernel.log is its stderr."""
    return start_kernel()


# ---------------------------------------------------------------- kernels started by hand

def free_tcp_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class SpawnedKernel:
    """A kernel started with subprocess from a connection file we wrote."""

    def __init__(self, proc: subprocess.Popen, conn: dict, conn_file: Path, log: KernelLog):
        self.proc, self.conn, self.conn_file, self.log = proc, conn, conn_file, log
        self.kc: BlockingKernelClient | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def client(self, connect_ip: str | None = None) -> BlockingKernelClient:
        """A started, ready client. connect_ip overrides the ip to connect to (for 0.0.0.0)."""
        info = dict(self.conn)
        if connect_ip:
            info["ip"] = connect_ip
        kc = BlockingKernelClient()
        kc.load_connection_info(info)
        kc.start_channels()
        self.kc = kc
        wait_ready(kc, self.log)
        return kc


class Spawned:
    """The kernels one test started by hand: each from a connection dict written to
    kernel-NAME{n}.json (mode 600), its stderr to kernel-NAME{n}.stderr; close() stops every one
    still running (SIGTERM, then SIGKILL) and checks each stderr for sanitizer reports."""

    def __init__(self, tmp_path: Path, name: str):
        self.tmp_path, self.name = tmp_path, name
        self.kernels: list[tuple[SpawnedKernel, Any]] = []

    def launch(self, conn: dict, args: list[str] | None = None,
               env: dict[str, str] | None = None) -> SpawnedKernel:
        n = len(self.kernels)
        conn_file = self.tmp_path / f"kernel-{self.name}{n}.json"
        conn_file.write_text(json.dumps(conn))
        conn_file.chmod(0o600)
        log = KernelLog(self.tmp_path / f"kernel-{self.name}{n}.stderr")
        fh = open(log.path, "wb")
        proc = subprocess.Popen([str(kernel_binary()), "-f", str(conn_file), *(args or [])],
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=fh,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        sk = SpawnedKernel(proc, conn, conn_file, log)
        self.kernels.append((sk, fh))
        return sk

    def close(self) -> None:
        for sk, fh in reversed(self.kernels):
            if sk.kc is not None:
                sk.kc.stop_channels()
            if sk.proc.poll() is None:
                sk.proc.send_signal(signal.SIGTERM)
                try:
                    sk.proc.wait(5)
                except subprocess.TimeoutExpired:
                    sk.proc.kill()
                    sk.proc.wait(5)
            fh.close()
        for sk, _ in self.kernels:
            _check_sanitizers(sk.log)


@pytest.fixture
def spawn_kernel(tmp_path: Path) -> Iterable[Callable[..., SpawnedKernel]]:
    """Factory: spawn_kernel(transport="tcp", ip="127.0.0.1", key=None, env=None, args=None).

    Writes the connection file itself (tcp: free ports; ipc: ip is a path prefix under tmp_path)
    and starts `cudalab -f FILE`. key=None makes a random key; b"" means unsigned."""
    spawned = Spawned(tmp_path, "spawn")

    def spawn(transport: str = "tcp", ip: str = "127.0.0.1", key: bytes | None = None,
              env: dict[str, str] | None = None, args: list[str] | None = None) -> SpawnedKernel:
        n = len(spawned.kernels)
        if key is None:
            key = uuid.uuid4().hex.encode()
        if transport == "ipc":
            ip = str(tmp_path / f"k{n}")
            ports = [1, 2, 3, 4, 5]
        else:
            ports = free_tcp_ports(5)
        conn = {"shell_port": ports[0], "iopub_port": ports[1], "stdin_port": ports[2],
                "control_port": ports[3], "hb_port": ports[4], "ip": ip, "transport": transport,
                "key": key.decode(), "signature_scheme": "hmac-sha256", "kernel_name": "cudalab"}
        return spawned.launch(conn, args, env)

    yield spawn
    spawned.close()


# ---------------------------------------------------------------- message helpers (jupyter_client)

def get_reply(kc: BlockingKernelClient, msg_id: str, timeout: float = TIMEOUT,
              channel: str = "shell") -> dict:
    """The reply to msg_id on shell or control; replies to other requests are skipped."""
    get = kc.get_shell_msg if channel == "shell" else kc.get_control_msg
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {channel} reply to {msg_id} within {timeout} s")
        try:
            msg = get(timeout=left)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def collect_iopub(kc: BlockingKernelClient, msg_id: str, timeout: float = TIMEOUT) -> list[dict]:
    """Every iopub message whose parent is msg_id, in order, up to and including status idle."""
    msgs: list[dict] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no idle status for {msg_id} within {timeout} s; got "
                                 f"{len(msgs)} messages: {summary(msgs)}")
        try:
            msg = kc.get_iopub_msg(timeout=left)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return msgs


def summary(msgs: list[dict], limit: int = 8) -> str:
    """A short account of messages for assertion texts: types and clipped contents."""
    parts = [f"{m['msg_type']} {json.dumps(m['content'])[:120]}" for m in msgs[:limit]]
    if len(msgs) > limit:
        parts.append(f"… and {len(msgs) - limit} more")
    return "; ".join(parts)


def execute(kc: BlockingKernelClient, code: str, timeout: float = TIMEOUT, **kw: Any) -> tuple[dict, list[dict]]:
    """Runs one execute_request (kw: silent, store_history, user_expressions, stop_on_error, …).

    Returns (execute_reply, iopub messages of that request in order: busy, execute_input,
    outputs…, idle)."""
    msg_id = kc.execute(code, **kw)
    msgs = collect_iopub(kc, msg_id, timeout)
    reply = get_reply(kc, msg_id, timeout)
    return reply, msgs


def quiet_ok(kc: BlockingKernelClient, code: str, timeout: float = 60, **kw: Any) -> list[dict]:
    """A cell that succeeds with nothing on stderr: its iopub messages."""
    reply, msgs = execute(kc, code, timeout=timeout, **kw)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert not streams(msgs, "stderr"), streams(msgs, "stderr")
    return msgs


def failed(kc: BlockingKernelClient, code: str, timeout: float = 60) -> tuple[dict, list[dict]]:
    """A cell that fails: its reply's content and its iopub messages."""
    reply, msgs = execute(kc, code, timeout=timeout)
    c = reply["content"]
    assert c["status"] == "error", c
    return c, msgs


def request(kc: BlockingKernelClient, msg_type: str, content: dict | None = None,
            channel: str = "shell", timeout: float = TIMEOUT) -> tuple[dict, list[dict]]:
    """Sends any request through kc's session; returns (reply, iopub messages up to idle)."""
    msg = kc.session.msg(msg_type, content or {})
    getattr(kc, f"{channel}_channel").send(msg)
    msg_id = msg["header"]["msg_id"]
    msgs = collect_iopub(kc, msg_id, timeout)
    reply = get_reply(kc, msg_id, timeout, channel)
    return reply, msgs


def completions(kc: BlockingKernelClient, code: str) -> list[str]:
    """The matches of a complete_request for code with the cursor at its end."""
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)})
    return reply["content"]["matches"]


def outputs(msgs: list[dict]) -> list[dict]:
    """The output messages among iopub messages: neither status nor execute_input."""
    return [m for m in msgs if m["msg_type"] not in ("status", "execute_input")]


def cell(kc: BlockingKernelClient, code: str, timeout: float = 120) -> tuple[dict, str, dict | None]:
    """Runs a cell: (reply content, the text of its outputs, its last result document or None)."""
    reply, msgs = execute(kc, code, timeout=timeout)
    text, doc = [], None
    for m in outputs(msgs):
        c = m["content"]
        text.append(c.get("text", "") or c.get("evalue", "") or c.get("data", {}).get("text/plain", ""))
        if "application/vnd.cudalab.result+json" in c.get("data", {}):
            doc = c["data"]["application/vnd.cudalab.result+json"]
    return reply["content"], "\n".join(text), doc


def compiled(kc: BlockingKernelClient, code: str) -> tuple[dict, str, dict | None]:
    """A %%kernel cell, as cell() runs it; the test is skipped where there is no NVRTC to compile it
    (NVRTC is part of the CUDA toolkit; the tests that need no compiler still run)."""
    c, text, doc = cell(kc, code)
    if c["status"] == "error" and "NVRTC" in c.get("evalue", "") and "CompileError" not in c["ename"]:
        pytest.skip("no NVRTC here: " + c["evalue"].splitlines()[0])
    return c, text, doc


def host_work_runs_s(evalue: str) -> float:
    """The runs' share of a host-work refusal in seconds: "3 runs (--warmup + --reps) 0.52 s" -> 0.52."""
    m = re.search(r"\d+ runs? \(--warmup \+ --reps\) ([0-9.e+-]+) (s|min|h|days)\b", evalue)
    assert m, evalue
    return float(m.group(1)) * {"s": 1, "min": 60, "h": 3600, "days": 86400}[m.group(2)]


def runner_host_work_s(kc: BlockingKernelClient, run: str) -> float:
    """The host-work estimate (seconds) of a student's kernel on the CPU runner, from the refusals of
    run (a family command naming it) under a low CUDALAB_HOST_WORK_LIMIT: the runner makes at most 3
    launches whatever --reps says, so --reps 3 and --reps 100 --warmup 5 are refused with one estimate."""
    c, _, _ = cell(kc, f"{run} --reps 3 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "--force" in c["evalue"], c
    three = host_work_runs_s(c["evalue"])
    c, _, _ = cell(kc, f"{run} --reps 100 --warmup 5")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert host_work_runs_s(c["evalue"]) == three
    return three


def edited(code: str, old: str | None = None, new: str = "") -> str:
    """A kernel's source with old (which must be there) replaced by new: one bug of a corpus."""
    if old is None:
        return code
    assert old in code, old
    return code.replace(old, new)


def runner_error(kc: BlockingKernelClient, code: str) -> tuple[str, str, str]:
    """A %%kernel cell whose quick check fails on the CPU runner: (ename, evalue, the traceback's lines)."""
    c, _, _ = compiled(kc, code)
    assert c["status"] == "error", "the quick check passed"
    return c["ename"], c["evalue"], "\n".join(c["traceback"])


def streams(msgs: list[dict], name: str | None = None) -> list[str]:
    return [m["content"]["text"] for m in msgs
            if m["msg_type"] == "stream" and (name is None or m["content"]["name"] == name)]


def wait_lines(msgs: list[dict]) -> list[str]:
    """What a cell said, live, while it waited for the GPU or a timed turn: the text of each display and
    update of its wait lines (display ids cudalab-wait-…), in order. A display's first frame has no
    text/plain (a terminal would keep it: cell_output.c); the update right after it has."""
    return [m["content"]["data"]["text/plain"] for m in msgs
            if m["msg_type"] in ("display_data", "update_display_data")
            and "text/plain" in m["content"]["data"]
            and m["content"].get("transient", {}).get("display_id", "").startswith("cudalab-wait-")]


def statuses(msgs: list[dict]) -> list[str]:
    return [m["content"]["execution_state"] for m in msgs if m["msg_type"] == "status"]


def assert_busy_idle(msgs: list[dict], msg_id: str) -> None:
    """busy first, idle last, exactly one of each, all with the request as parent."""
    assert msgs, "no iopub messages for the request"
    assert msgs[0]["msg_type"] == "status" and msgs[0]["content"]["execution_state"] == "busy", \
        f"first iopub message is not status busy: {msgs[0]['msg_type']} {msgs[0]['content']}"
    assert msgs[-1]["msg_type"] == "status" and msgs[-1]["content"]["execution_state"] == "idle", \
        f"last iopub message is not status idle: {msgs[-1]['msg_type']} {msgs[-1]['content']}"
    assert statuses(msgs) == ["busy", "idle"], f"status sequence {statuses(msgs)}"
    for m in msgs:
        assert m["parent_header"]["msg_id"] == msg_id


def no_message(get: Callable[..., dict], timeout: float = SILENCE) -> dict | None:
    """The first message that arrives within timeout, or None."""
    try:
        return get(timeout=timeout)
    except Empty:
        return None


def kernel_children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def wait_gone(procs: Iterable[psutil.Process], timeout: float = 5.0) -> list[psutil.Process]:
    """Waits for the processes to end (reaping zombies we own); returns those still alive."""
    procs = list(procs)
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


# ---------------------------------------------------------------- raw wire messages

def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Raw:
    """Hand-built Jupyter wire messages, straight to the kernel's sockets.

    raw.frames(...) builds a message's frames (signed with the key unless told otherwise);
    raw.send(channel, frames) sends them from this object's DEALER socket for that channel;
    raw.recv(channel) reads one message and checks the kernel signed it right;
    raw.request(channel, msg_type, content) does both halves of an ordinary request.
    """

    def __init__(self, conn: dict):
        self.conn = conn
        key = conn.get("key", b"")
        self.key = key.encode() if isinstance(key, str) else bytes(key)
        self.session = uuid.uuid4().hex
        self._ctx: zmq.Context | None = None
        self.sockets: dict[str, zmq.Socket] = {}

    @property
    def ctx(self) -> zmq.Context:
        if self._ctx is None:
            self._ctx = zmq.Context()
        return self._ctx

    def url(self, channel: str) -> str:
        port = self.conn[f"{channel}_port"]
        if self.conn.get("transport", "tcp") == "ipc":
            return f"ipc://{self.conn['ip']}-{port}"
        ip = self.conn["ip"]
        if ip in ("0.0.0.0", "*"):
            ip = "127.0.0.1"
        return f"tcp://{ip}:{port}"

    def socket(self, channel: str, subscribe: bytes = b"") -> zmq.Socket:
        if channel in self.sockets:
            return self.sockets[channel]
        kind = {"shell": zmq.DEALER, "control": zmq.DEALER, "stdin": zmq.DEALER,
                "hb": zmq.REQ, "iopub": zmq.SUB}[channel]
        s = self.ctx.socket(kind)
        s.linger = 0
        if kind == zmq.DEALER:
            s.identity = f"raw-{channel}-{self.session[:8]}".encode()
        if kind == zmq.SUB:
            s.setsockopt(zmq.SUBSCRIBE, subscribe)
        s.connect(self.url(channel))
        self.sockets[channel] = s
        return s

    # -- building

    def sign(self, parts: list[bytes]) -> bytes:
        if not self.key:
            return b""
        h = hmac.new(self.key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    def header(self, msg_type: str, **overrides: Any) -> dict:
        h = {"msg_id": uuid.uuid4().hex, "session": self.session, "username": "raw",
             "date": utcnow(), "msg_type": msg_type, "version": "5.3"}
        h.update(overrides)
        return {k: v for k, v in h.items() if v is not None}

    @staticmethod
    def dumps(obj: Any) -> bytes:
        return obj if isinstance(obj, bytes) else json.dumps(obj).encode()

    def frames(self, msg_type: str = "kernel_info_request", content: Any = None, *,
               header: Any = None, parent: Any = None, metadata: Any = None,
               signature: bytes | None = None, ids: Iterable[bytes] = (),
               buffers: Iterable[bytes] = ()) -> list[bytes]:
        """[ids…, <IDS|MSG>, signature, header, parent, metadata, content, buffers…].

        header/parent/metadata/content may be dicts (JSON-encoded) or raw bytes (sent as is);
        signature=None signs the four JSON frames with the key."""
        parts = [self.dumps(self.header(msg_type) if header is None else header),
                 self.dumps({} if parent is None else parent),
                 self.dumps({} if metadata is None else metadata),
                 self.dumps({} if content is None else content)]
        sig = self.sign(parts) if signature is None else signature
        return [*ids, DELIM, sig, *parts, *buffers]

    @staticmethod
    def msg_id(frames: list[bytes]) -> str:
        return json.loads(frames[frames.index(DELIM) + 2])["msg_id"]

    # -- sending and receiving

    def send(self, channel: str, frames: list[bytes]) -> None:
        self.socket(channel).send_multipart(frames)

    def request(self, channel: str, msg_type: str, content: Any = None, **kw: Any) -> str:
        frames = self.frames(msg_type, content, **kw)
        self.send(channel, frames)
        return self.msg_id(frames)

    def recv_frames(self, channel: str, timeout: float = TIMEOUT) -> list[bytes] | None:
        s = self.socket(channel)
        if s.poll(int(timeout * 1000)):
            return s.recv_multipart()
        return None

    def parse(self, frames: list[bytes]) -> dict:
        """Splits a message from the kernel and checks its signature."""
        d = frames.index(DELIM)
        sig, parts = frames[d + 1], frames[d + 2:d + 6]
        assert len(parts) == 4, f"message from the kernel has {len(parts)} JSON frames"
        assert sig == self.sign(parts), f"kernel's signature {sig!r} does not match its frames"
        header, parent, metadata, content = (json.loads(p) for p in parts)
        return {"ids": frames[:d], "signature": sig, "header": header, "parent_header": parent,
                "metadata": metadata, "content": content, "buffers": frames[d + 6:],
                "msg_type": header["msg_type"]}

    def recv(self, channel: str, timeout: float = TIMEOUT) -> dict | None:
        frames = self.recv_frames(channel, timeout)
        return None if frames is None else self.parse(frames)

    def reply(self, channel: str, msg_id: str, timeout: float = TIMEOUT) -> dict:
        """The reply to msg_id; fails on a reply to anything else or on silence."""
        msg = self.recv(channel, timeout)
        assert msg is not None, f"no reply on {channel} to {msg_id} within {timeout} s"
        assert msg["parent_header"].get("msg_id") == msg_id, \
            f"got a reply to {msg['parent_header'].get('msg_id')} ({msg['msg_type']}), wanted {msg_id}"
        return msg

    def silent(self, channel: str, timeout: float = SILENCE) -> dict | None:
        """Whatever arrives on channel within timeout (None = nothing did)."""
        return self.recv(channel, timeout)

    def heartbeat(self, payload: bytes = b"ping", timeout: float = 2.0) -> bytes | None:
        s = self.socket("hb")
        s.send(payload)
        if s.poll(int(timeout * 1000)):
            return s.recv()
        # a REQ socket that got no answer is stuck: start a fresh one next time
        s.close(0)
        del self.sockets["hb"]
        return None

    def close(self) -> None:
        for s in self.sockets.values():
            s.close(0)
        self.sockets.clear()
        if self._ctx is not None:
            self._ctx.destroy(linger=0)    # also closes sockets made straight from raw.ctx
            self._ctx = None


def raw_for(conn: dict) -> Raw:
    """A Raw helper for a connection-info dict (km.get_connection_info() or a spawned one)."""
    return Raw(conn)


@pytest.fixture
def raw(kernel: KernelPair) -> Iterable[Raw]:
    """Raw wire access to the `kernel` fixture's kernel (same key)."""
    r = Raw(kernel.km.get_connection_info())
    yield r
    r.close()


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs the binary in command-line mode."""
    return subprocess.run([str(kernel_binary()), *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def run_cell(cell: str, json_mode: bool = True, timeout: float = 120,
             env: dict[str, str] | None = None) -> tuple[int, list[dict], str, str]:
    """(exit code, documents, stdout, stderr) of one cell in command-line mode, on the CPU backend
    unless env says otherwise; the documents only with json_mode and exit code 0."""
    args = ["--run", cell] + (["--json"] if json_mode else [])
    r = cli(*args, env={"CUDALAB_BACKEND": "cpu"} if env is None else env, timeout=timeout)
    docs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()] if json_mode and r.returncode == 0 else []
    return r.returncode, docs, r.stdout, r.stderr


def magic_doc(magic: str, cell: str, schema: dict, env: dict[str, str] | None = None) -> dict:
    """The one document of MAGIC that CELL prints on the CPU backend (with env's variables too), valid
    against schema, with exit code 0 and nothing on stderr."""
    import jsonschema
    rc, docs, _, err = run_cell(cell, env={"CUDALAB_BACKEND": "cpu", **(env or {})})
    assert rc == 0, err
    assert err == "", f"stderr on success: {err!r}"
    found = [d for d in docs if d and d.get("magic") == magic]
    assert len(found) == 1, docs
    jsonschema.validate(found[0], schema)
    return found[0]


def builtin_variants(family: str, broken: bool = False) -> list[str]:
    """FAMILY's built-in variants as the kernel under test lists them (%help FAMILY), in row order: those
    `--variant all` runs, or with broken=True those broken on purpose."""
    return [v["name"] for v in schema_variants.help_variants(family, str(kernel_binary())) if v["broken"] == broken]


def gpu_visible() -> bool:
    """Whether this machine shows an NVIDIA device node (a hint, not a promise that CUDA works)."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


__all__ = [
    "DELIM", "REPO", "SILENCE", "TIMEOUT", "KernelLog", "KernelPair", "Raw", "SpawnedKernel",
    "assert_busy_idle", "builtin_variants", "cli", "collect_iopub", "execute", "free_tcp_ports", "get_reply",
    "gpu_visible", "kernel_binary", "kernel_children", "load_schema", "magic_doc", "no_message",
    "outputs", "raw_for", "request", "run_cell", "statuses", "streams", "utcnow", "wait_gone",
]


# ---------------------------------------------------------------- heartbeat monitor

class HeartbeatMonitor:
    """Pings a kernel's heartbeat every `period` seconds from a process of its own and records the
    longest wait for an echo (a ping still unanswered counts for as long as it has waited).

    A process, not a thread: a test building a 1 GiB payload holds Python's lock for a second,
    which a thread would count as the kernel's stall. The README promises heartbeat "at all
    times": the hostile-input tests run one throughout and assert the worst stall against a
    generous bound (CI has 2 cores and ASan); bench/stall.py reports the real figure. Use as a
    context manager: `with HeartbeatMonitor(conn) as hb: ...`, then hb.worst, hb.pings, hb.check()."""

    PINGER = r"""
import select, sys, time, zmq
url, period = sys.argv[1], float(sys.argv[2])
ctx = zmq.Context()
sock = ctx.socket(zmq.REQ)
sock.setsockopt(zmq.LINGER, 0)
sock.connect(url)
worst, pings, stop = 0.0, 0, False
print("ready", flush=True)
while not stop:
    t0 = time.monotonic()
    sock.send(b"ping")
    while not sock.poll(10):
        worst = max(worst, time.monotonic() - t0)
        if select.select([sys.stdin], [], [], 0)[0]:
            stop = True
            break
    if stop:
        break
    sock.recv()
    pings += 1
    worst = max(worst, time.monotonic() - t0)
    left = period - (time.monotonic() - t0)
    stop = bool(select.select([sys.stdin], [], [], max(0.0, left))[0])
print(pings, worst, flush=True)
"""

    def __init__(self, conn: dict, period: float = 0.05):
        self.url = f"{conn['transport']}://{conn['ip']}:{conn['hb_port']}" \
            if conn["transport"] == "tcp" else f"ipc://{conn['ip']}-{conn['hb_port']}"
        self.period = period
        self.worst = 0.0
        self.pings = 0
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> "HeartbeatMonitor":
        import sys
        self._proc = subprocess.Popen([sys.executable, "-c", self.PINGER, self.url, str(self.period)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout.readline().strip() == "ready", "the heartbeat monitor did not start"
        return self

    def __exit__(self, *exc: Any) -> None:
        self._proc.stdin.close()                # the pinger stops at EOF and reports
        out = self._proc.stdout.read().split()
        self._proc.wait(5)
        if len(out) == 2:
            self.pings, self.worst = int(out[0]), float(out[1])

    def check(self, bound: float = 0.5) -> None:
        """Fails the test when a ping waited longer than bound seconds (or none was answered)."""
        assert self.pings > 0, f"no heartbeat answered at all ({self.url})"
        assert self.worst <= bound, f"heartbeat stalled for {self.worst * 1e3:.0f} ms (bound {bound * 1e3:.0f} ms)"


def kernel_conn(pair: KernelPair) -> dict:
    """The connection info of a kernel started by start_kernel, for a HeartbeatMonitor or Raw."""
    return pair.km.get_connection_info(session=False)


class ZmtpPeer:
    """A ZeroMQ peer spoken by hand over TCP (ZMTP 3.0, NULL mechanism): it sends frames of any
    size to a kernel's socket without keeping anything itself. A pyzmq SUB keeps its own
    subscriptions in a trie one level per byte, which a many-megabyte topic overflows (the
    client crashes, not the kernel); this peer lets a test send such a subscription."""

    def __init__(self, ip: str, port: int, socket_type: str):
        self.sock = socket.create_connection((ip, port), timeout=5)
        greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
        self.sock.sendall(greeting)
        self._recv_exact(64)
        prop = b"\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type.encode()
        self._frame(b"\x05READY" + prop, command=True)

    def _recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def _frame(self, body: bytes, command: bool = False, more: bool = False) -> None:
        flags = (0x04 if command else 0) | (0x01 if more else 0)
        if len(body) > 255:
            head = bytes([flags | 0x02]) + len(body).to_bytes(8, "big")
        else:
            head = bytes([flags, len(body)])
        self.sock.sendall(head + body)

    def send(self, *parts: bytes) -> None:
        """Sends one message of these frames (the peer may drop the connection: no error)."""
        try:
            for i, p in enumerate(parts):
                self._frame(p, more=i < len(parts) - 1)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


@functools.lru_cache(maxsize=None)
def sanitized_kernel() -> bool:
    """Is the kernel under test built with AddressSanitizer? Its quarantine holds freed memory,
    so resident-memory bounds are checked only against a release build. (Read once a run.)"""
    return b"__asan_init" in kernel_binary().read_bytes()


# ---------------------------------------------------------------- kernels from a connection file as given

@pytest.fixture
def spawn_conn(tmp_path: Path) -> Iterable[Callable[..., SpawnedKernel]]:
    """Factory: spawn_conn(conn, env=None) -> SpawnedKernel started from exactly this connection
    info (ports of 0, a host name for ip, any signature_scheme), written to kernel-conn{n}.json.

    Unlike spawn_kernel it fills in nothing, and the kernel may refuse the file: sk.proc tells.
    At the end every kernel still running gets SIGTERM, and every stderr is checked for sanitizer
    reports."""
    spawned = Spawned(tmp_path, "conn")

    def spawn(conn: dict, env: dict[str, str] | None = None) -> SpawnedKernel:
        return spawned.launch(dict(conn), env=env)

    yield spawn
    spawned.close()
