"""The course's hub, live: what can run here of deploy/jupyterhub without Docker or a GPU.

Once per module, JupyterHub (the version deploy/jupyterhub/requirements-hub.txt pins, from PyPI)
starts in a temporary directory on free localhost ports, with the Python port of
configurable-http-proxy (PyPI) as its proxy, the local spawner (SimpleLocalProcessSpawner: each
single-user server runs as this UNIX user) and one shared password (JupyterHub's shared-password
authenticator, as a course might hand out in its first lecture). Its single-user servers get
the environment the course's configuration gives its containers (DockerSpawner.environment, and
CUDALAB_ADMISSION_DIR, which the image sets), and a Jupyter path holding the cudalab kernelspec of
the binary under test. Through the hub's REST API, with a service's admin token, the test creates a
student and starts their server; through the proxy (/user/NAME/) it starts a cudalab kernel on that
server, runs `%device` and a small `%matmul` over the kernel's websocket, and checks each reply, its
result document and that nothing reached the stderr stream; then it stops the server through the
API and checks that the kernel and its worker left with it. (The DockerSpawner, the GPUs and the
image itself are what this cannot cover: test_deploy.py checks their configuration.)

It skips, saying why, only when JupyterHub or configurable-http-proxy are not installed
(`scripts/setup.sh test` installs them from requirements-hub-test.txt). The hub, the proxy and
everything they started are stopped at the end, and anything of theirs still alive is killed,
found by a marker in its environment (an orphan has no parent left to find it by).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest
import websocket

from conftest import free_tcp_ports, kernel_binary, kill_survivors, serving, write_kernelspec
from test_deploy import DEPLOY, hub_config, pins

HUB_START_TIMEOUT = 90      # seconds for the hub and its proxy to answer (2 busy cores, a cold start)
SERVER_START_TIMEOUT = 90   # seconds for a student's server to be ready behind the proxy
CELL_TIMEOUT = 60           # seconds for a cell's reply and its outputs
STOP_TIMEOUT = 30           # seconds for a stopped server's processes to be gone
STUDENT = "student1"
MIME = "application/vnd.cudalab.result+json"
MARKER = "CUDALAB_HUB_TEST"  # in the environment of every process this test's hub starts

# serial: a live hub, its proxy and a spawned server, each with start-up deadlines
pytestmark = [pytest.mark.timeout(300), pytest.mark.serial]


# ---------------------------------------------------------------- what is needed, or why we skip

def proxy_command() -> str | None:
    return shutil.which("configurable-http-proxy") or \
        shutil.which("configurable-http-proxy", path=str(Path(sys.executable).parent))


def _missing() -> str | None:
    why = []
    if importlib.util.find_spec("jupyterhub") is None:
        why.append("jupyterhub is not importable")
    if importlib.util.find_spec("configurable_http_proxy") is None or proxy_command() is None:
        why.append("configurable-http-proxy is not installed")
    return "; ".join(why) or None


# ---------------------------------------------------------------- the hub

def _http(method: str, url: str, token: str, body: dict | None = None,
          timeout: float = 10) -> tuple[int, dict | str | None]:
    """One request; (status, the JSON or text answered). HTTP errors are answers, not exceptions."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Authorization": f"token {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, text


def _poll(what: str, timeout: float, probe, diagnostics) -> object:
    """probe() until it returns something true; fails with diagnostics() after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}\n{diagnostics()}")
        time.sleep(0.2)


class Hub:
    """JupyterHub with its proxy and local single-user servers, all in root (a temporary folder)."""

    def __init__(self, root: Path):
        self.root = root
        self.public_port, self.hub_port, self.proxy_api_port = free_tcp_ports(3)
        self.url = f"http://127.0.0.1:{self.public_port}"          # the proxy, as students reach it
        self.token = secrets.token_hex(32)                          # the test service's admin token
        self.password = secrets.token_hex(8)                        # the course's one password
        self.marker = uuid.uuid4().hex
        self.admission = root / "admission"
        self.log_path = root / "jupyterhub.log"
        self.proc: subprocess.Popen | None = None

    def _kernelspec(self) -> Path:
        """A Jupyter data path with the cudalab kernelspec of the binary under test, as conftest writes it."""
        data = self.root / "jupyter" / "share" / "jupyter"
        write_kernelspec(data, logos=True)
        return data

    def server_environment(self) -> dict[str, str]:
        """What a student's server gets: the course's container environment, with the admission
        directory the image names, and the Jupyter path of this test."""
        self.admission.mkdir()
        self.admission.chmod(0o1777)                  # as the course's host directory (mkdir's is masked)
        return {**hub_config().Spawner.environment,
                "CUDALAB_ADMISSION_DIR": str(self.admission),
                # no GPU here; a GPU host may run the same test on its GPU
                "CUDALAB_BACKEND": os.environ.get("CUDALAB_BACKEND", "cpu"),
                "JUPYTER_PATH": str(self._kernelspec()),
                "JUPYTER_CONFIG_DIR": str(self.root / "jupyter" / "config"),   # no user config in the way
                "JUPYTER_DATA_DIR": str(self.root / "jupyter" / "data"),
                "JUPYTER_RUNTIME_DIR": str(self.root / "jupyter" / "runtime"),
                "JUPYTER_PLATFORM_DIRS": "1",
                MARKER: self.marker}

    def settings(self) -> dict[str, object]:
        """The hub's configuration, c.NAME = value (a test of more of the course adds to it)."""
        args = ["--ServerApp.log_level=INFO"]
        if os.getuid() == 0:
            args.append("--allow-root")                # jupyter_server refuses root without it
        settings = {
            "JupyterHub.bind_url": self.url,
            "JupyterHub.hub_bind_url": f"http://127.0.0.1:{self.hub_port}",
            "JupyterHub.db_url": f"sqlite:///{self.root / 'jupyterhub.sqlite'}",
            "JupyterHub.cookie_secret_file": str(self.root / "jupyterhub_cookie_secret"),
            "JupyterHub.pid_file": str(self.root / "jupyterhub.pid"),
            # a course's one password, given out in the first lecture: whoever has it may log in
            "JupyterHub.authenticator_class": "shared-password",
            "SharedPasswordAuthenticator.user_password": self.password,
            "Authenticator.allow_all": True,
            "JupyterHub.spawner_class": "jupyterhub.spawner.SimpleLocalProcessSpawner",
            "SimpleLocalProcessSpawner.home_dir_template": str(self.root / "home" / "{username}"),
            # the hub's PATH need not hold the venv's scripts: name this Python
            "Spawner.cmd": [sys.executable, "-m", "jupyterhub.singleuser"],
            "Spawner.args": args,
            "Spawner.environment": self.server_environment(),
            "Spawner.start_timeout": SERVER_START_TIMEOUT,
            "Spawner.http_timeout": SERVER_START_TIMEOUT,
            "ConfigurableHTTPProxy.command": [proxy_command()],
            "ConfigurableHTTPProxy.auth_token": secrets.token_hex(32),
            "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{self.proxy_api_port}",
            "ConfigurableHTTPProxy.pid_file": str(self.root / "proxy.pid"),
            "JupyterHub.services": [{"name": "cudalab-test", "api_token": self.token}],
            "JupyterHub.load_roles": [{
                "name": "cudalab-test",
                "scopes": ["admin:users", "admin:servers", "access:servers"],
                "services": ["cudalab-test"],
            }],
        }
        return settings

    def write_config(self) -> Path:
        settings = self.settings()
        path = self.root / "jupyterhub_config.py"
        path.write_text('"""A test hub for tests/deploy/test_hub_live.py."""\nc = get_config()  # noqa: F821\n' +
                        "".join(f"c.{k} = {v!r}\n" for k, v in settings.items()))
        return path

    def start(self) -> None:
        config = self.write_config()
        env = {**os.environ, MARKER: self.marker}
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)],
                                     cwd=self.root, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

        def answers():
            if self.proc.poll() is not None:
                pytest.fail(f"JupyterHub exited {self.proc.returncode} at start:\n{self.log_text()}")
            try:
                status, body = self.api("GET", "/")
            except OSError:
                return None
            return body if status == 200 else None
        _poll("JupyterHub to answer through its proxy", HUB_START_TIMEOUT, answers, self.log_text)

    def api(self, method: str, path: str, body: dict | None = None,
            timeout: float = 10) -> tuple[int, dict | str | None]:
        """The hub's REST API, through the proxy, with the test service's token."""
        return _http(method, f"{self.url}/hub/api{path}", self.token, body, timeout)

    def log_text(self) -> str:
        return "JupyterHub log (tail):\n" + \
            (self.log_path.read_text(errors="replace")[-8000:] if self.log_path.exists() else "")

    def processes(self) -> list[psutil.Process]:
        """Every live process this hub started (its own, the proxy, servers, kernels, workers)."""
        found = []
        for p in psutil.process_iter(["environ"]):
            if (p.info["environ"] or {}).get(MARKER) == self.marker:
                found.append(p)
        return found

    def stop(self) -> list[str]:
        """Ends the hub (it stops its proxy and servers), then kills whatever of its is left."""
        left = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                left.append(f"JupyterHub pid {self.proc.pid} still running {STOP_TIMEOUT} s after SIGTERM")
                self.proc.kill()
                self.proc.wait(5)
        left += kill_survivors(self.processes(), "JupyterHub", lambda p: " ".join(p.cmdline())[:120])
        if self.proc is not None:
            self.log.close()
        return left


def skip_without_hub() -> None:
    why = _missing()
    if why:
        pytest.skip(f"live hub test skipped: {why} (pip install -r requirements-hub-test.txt)")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    skip_without_hub()
    with serving(Hub(tmp_path_factory.mktemp("hub"))) as server:
        yield server


# ---------------------------------------------------------------- a student's server and kernel

def _message(session: str, msg_type: str, content: dict, channel: str = "shell") -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": session,
                       "username": STUDENT, "version": "5.3",
                       "date": datetime.now(timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": []}


def run_cell(ws, session: str, code: str, diagnostics) -> tuple[dict, list[dict]]:
    """One execute_request over the kernel's websocket: (its reply, its iopub messages up to idle)."""
    request = _message(session, "execute_request",
                       {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True})
    ws.send(json.dumps(request))
    msg_id = request["header"]["msg_id"]
    reply, iopub, idle = None, [], False
    deadline = time.monotonic() + CELL_TIMEOUT
    while reply is None or not idle:
        if time.monotonic() > deadline:
            pytest.fail(f"no reply and idle for {code!r} within {CELL_TIMEOUT} s; got {iopub}\n{diagnostics()}")
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
            reply = msg
        elif msg["channel"] == "iopub":
            iopub.append(msg)
            idle = idle or (msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle")
    return reply, iopub


def kernel_processes(hub: Hub) -> list[psutil.Process]:
    """The cudalab processes (kernels and their workers) under this hub."""
    binary = kernel_binary().resolve()
    found = []
    for p in hub.processes():
        try:
            if Path(p.exe()).resolve() == binary:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_hub_is_the_pinned_jupyterhub_behind_the_python_proxy(hub: Hub):
    status, info = hub.api("GET", "/")
    assert status == 200, info
    assert info["version"] == pins(DEPLOY / "requirements-hub.txt")["jupyterhub"] == \
        importlib.metadata.version("jupyterhub")
    commands = [p.cmdline() for p in hub.processes()]
    proxies = [c for c in commands if len(c) > 1 and Path(c[1]).name == "configurable-http-proxy"]
    assert len(proxies) == 1 and Path(proxies[0][0]).name.startswith("python"), commands


def test_student_runs_cudalab_through_the_hub_and_their_kernel_leaves_with_their_server(hub: Hub):
    status, body = hub.api("POST", f"/users/{STUDENT}")
    assert status == 201, body
    # the hub answers a spawn when the server is up or after its slow_spawn_timeout (10 s), so
    # the request may take a little longer than that
    status, body = hub.api("POST", f"/users/{STUDENT}/server", timeout=SERVER_START_TIMEOUT)
    assert status in (201, 202), body

    def server_ready():
        status, user = hub.api("GET", f"/users/{STUDENT}")
        return status == 200 and user["servers"].get("", {}).get("ready")
    _poll(f"{STUDENT}'s server to be ready", SERVER_START_TIMEOUT, server_ready, hub.log_text)

    server = f"{hub.url}/user/{STUDENT}"
    status, specs = _http("GET", f"{server}/api/kernelspecs", hub.token)
    assert status == 200, specs
    assert "cudalab" in specs["kernelspecs"], specs
    status, kernel = _http("POST", f"{server}/api/kernels", hub.token, {"name": "cudalab"})
    assert status == 201, kernel

    session = uuid.uuid4().hex
    ws_url = server.replace("http://", "ws://") + f"/api/kernels/{kernel['id']}/channels?session_id={session}"
    ws = websocket.create_connection(ws_url, header=[f"Authorization: token {hub.token}"],
                                     timeout=CELL_TIMEOUT)
    results = {}
    try:
        for code, magic in (("%device", "device"), ("%matmul --size 64 --variant naive --reps 2", "matmul")):
            reply, iopub = run_cell(ws, session, code, hub.log_text)
            assert reply["content"]["status"] == "ok", (code, reply["content"])
            docs = [m["content"]["data"][MIME] for m in iopub
                    if m["msg_type"] in ("execute_result", "display_data") and MIME in m["content"]["data"]]
            assert docs and docs[-1]["magic"] == magic, (code, iopub)
            stderr = [m["content"]["text"] for m in iopub
                      if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
            assert not stderr, (code, stderr)
            results[magic] = docs[-1]
        assert results["matmul"]["runs"][0]["check"]["passed"] is True, results["matmul"]
    finally:
        ws.close()

    cudalab = kernel_processes(hub)
    workers = [p for p in cudalab if "--worker" in p.cmdline()]
    kernels = [p for p in cudalab if p not in workers]
    assert len(kernels) == 1 and len(workers) == 1, [p.cmdline() for p in cudalab]
    environ = kernels[0].environ()                  # the course's environment reached the kernel
    assert environ["CUDALAB_ADMISSION_DIR"] == str(hub.admission)
    assert environ["CUDALAB_GPU_IDLE_S"] == hub_config().Spawner.environment["CUDALAB_GPU_IDLE_S"]

    status, body = hub.api("DELETE", f"/users/{STUDENT}/server")
    assert status in (202, 204), body

    def server_stopped():
        status, user = hub.api("GET", f"/users/{STUDENT}")
        return status == 200 and "" not in user["servers"]
    _poll(f"{STUDENT}'s server to stop", STOP_TIMEOUT, server_stopped, hub.log_text)
    _, alive = psutil.wait_procs(cudalab, timeout=STOP_TIMEOUT)
    assert not alive, f"cudalab processes outlived the student's server: {alive}\n{hub.log_text()}"
    assert not kernel_processes(hub)
