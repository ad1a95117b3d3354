"""No orphans: a kernel whose launcher dies leaves, and its device worker with it, however it is
killed. The kernel compares its parent with the one it started with (so it also notices being
reparented to a subreaper, where waiting for pid 1 would wait for ever) and watches the process
JPY_PARENT_PID names, as ipykernel does; the worker dies with its kernel (PR_SET_PDEATHSIG and a
recheck of its parent)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil

from conftest import free_tcp_ports, kernel_binary, wait_gone

GONE_WITHIN = 6.0       # the kernel checks every second; the worker dies with it at once


def connection_file(tmp_path: Path) -> Path:
    ports = free_tcp_ports(5)
    conn = {"shell_port": ports[0], "iopub_port": ports[1], "stdin_port": ports[2], "control_port": ports[3],
            "hb_port": ports[4], "ip": "127.0.0.1", "transport": "tcp", "key": uuid.uuid4().hex,
            "signature_scheme": "hmac-sha256", "kernel_name": "cudalab"}
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(conn))
    path.chmod(0o600)
    return path


# A launcher that starts the kernel and waits; with SUBREAPER it first makes itself a child
# subreaper and starts the launcher below it, so that the kernel is reparented to it, not to pid 1.
LAUNCHER = textwrap.dedent("""
    import ctypes, os, subprocess, sys, time
    binary, conn, log, subreaper = sys.argv[1:5]
    if subreaper == "1":
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER
        mid = subprocess.Popen([sys.executable, __file__, binary, conn, log, "0"], stdout=sys.stdout)
        time.sleep(600)
    with open(log, "ab") as fh:
        kernel = subprocess.Popen([binary, "-f", conn], stdin=subprocess.DEVNULL, stdout=fh, stderr=fh)
    print(os.getpid(), kernel.pid, flush=True)
    time.sleep(600)
""")


def start(tmp_path: Path, subreaper: bool = False, env: dict | None = None) -> tuple[subprocess.Popen, int, int]:
    """(the top launcher, the pid of the launcher that started the kernel, the kernel's pid)."""
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER)
    top = subprocess.Popen([sys.executable, str(script), str(kernel_binary()), str(connection_file(tmp_path)),
                            str(tmp_path / "kernel.stderr"), "1" if subreaper else "0"],
                           stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                           start_new_session=True)
    launcher, kernel = (int(x) for x in top.stdout.readline().split())
    return top, launcher, kernel


def worker_of(kernel: int, timeout: float = 10.0) -> psutil.Process:
    """The kernel's device worker (started with the kernel)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = psutil.Process(kernel).children()
        if kids:
            return kids[0]
        time.sleep(0.05)
    raise AssertionError("the kernel started no worker")


def stop(top: subprocess.Popen) -> None:
    try:
        os.killpg(top.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    top.wait(5)


def test_kernel_and_worker_leave_when_the_launcher_is_killed(tmp_path):
    top, launcher, kernel = start(tmp_path)
    try:
        procs = [psutil.Process(kernel), worker_of(kernel)]
        os.kill(launcher, signal.SIGKILL)
        assert wait_gone(procs, GONE_WITHIN) == [], "left behind after its launcher was killed"
        assert "its parent" in (tmp_path / "kernel.stderr").read_text()
    finally:
        stop(top)


def test_reparented_to_a_subreaper_still_counts_as_orphaned(tmp_path):
    top, launcher, kernel = start(tmp_path, subreaper=True)
    try:
        procs = [psutil.Process(kernel), worker_of(kernel)]
        os.kill(launcher, signal.SIGKILL)
        # the kernel's new parent is the subreaper (alive), not pid 1
        assert wait_gone(procs, GONE_WITHIN) == [], "left behind under a subreaper"
    finally:
        stop(top)


def test_kernel_leaves_when_jpy_parent_pid_exits(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    top, launcher, kernel = start(tmp_path, env={"JPY_PARENT_PID": str(owner.pid)})
    try:
        procs = [psutil.Process(kernel), worker_of(kernel)]
        time.sleep(1.5)
        assert all(p.is_running() for p in procs), "left while its JPY_PARENT_PID was alive"
        owner.kill()
        owner.wait(5)
        assert wait_gone(procs, GONE_WITHIN) == [], "left behind after JPY_PARENT_PID exited"
        assert "JPY_PARENT_PID" in (tmp_path / "kernel.stderr").read_text()
    finally:
        owner.kill()
        stop(top)
