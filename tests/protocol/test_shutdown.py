"""shutdown_request, interrupts and signals: replies, exit codes, and no process left behind."""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from conftest import TIMEOUT, execute, get_reply, kernel_children, request, streams, wait_gone


def worker_of(pid: int, timeout: float = 5.0) -> psutil.Process:
    """The kernel's device worker (`cudalab --worker 3`), waiting for it to appear."""
    deadline = time.monotonic() + timeout
    while True:
        workers = [p for p in kernel_children(pid) if p.cmdline()[1:3] == ["--worker", "3"]]
        if workers or time.monotonic() > deadline:
            assert len(workers) == 1, [p.cmdline() for p in kernel_children(pid)]
            return workers[0]
        time.sleep(0.05)


def wait_exit(km, timeout: float = 5.0) -> int:
    proc = km.provisioner.process
    try:
        return proc.wait(timeout)
    except Exception:
        pytest.fail(f"the kernel (pid {proc.pid}) did not exit within {timeout} s")


@pytest.mark.parametrize("restart", [False, True])
def test_shutdown_request_replies_and_exits_cleanly(kernel, restart):
    km, kc = kernel
    execute(kc, "%device", timeout=30)           # make sure the worker has done work
    kernel_proc = psutil.Process(kernel.pid)
    worker = worker_of(kernel.pid)
    family = [kernel_proc, *kernel_children(kernel.pid)]
    reply, msgs = request(kc, "shutdown_request", {"restart": restart}, channel="control")
    assert reply["msg_type"] == "shutdown_reply"
    assert reply["content"] == {"status": "ok", "restart": restart}
    assert [m["content"]["execution_state"] for m in msgs if m["msg_type"] == "status"] == ["busy", "idle"]
    assert wait_exit(km) == 0, "the kernel's exit code after shutdown_request"
    assert wait_gone(family) == [], "processes left after shutdown"
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    assert kernel.log.lines("dropped") == []


def test_shutdown_via_kernel_manager_leaves_nothing(kernel):
    km, kc = kernel
    execute(kc, "%echo hi")
    family = [psutil.Process(kernel.pid), worker_of(kernel.pid)]
    km.shutdown_kernel()
    assert wait_gone(family) == []
    assert km.provisioner is None or km.provisioner.process is None or \
        km.provisioner.process.poll() == 0


def test_shutdown_right_after_start(start_kernel):
    pair = start_kernel()
    km, kc = pair
    family = [psutil.Process(pair.pid), *kernel_children(pair.pid)]
    reply, _ = request(kc, "shutdown_request", {"restart": False}, channel="control")
    assert reply["content"]["status"] == "ok"
    assert wait_exit(km) == 0
    assert wait_gone(family) == []


def test_sigterm_exits_cleanly_and_takes_the_worker(kernel):
    km, kc = kernel
    worker = worker_of(kernel.pid)
    os.kill(kernel.pid, signal.SIGTERM)
    assert wait_exit(km) == 0
    assert wait_gone([worker]) == []


def test_worker_leaves_when_kernel_is_killed(kernel):
    """SIGKILL gives the kernel no chance to clean up: the worker must notice its pipe closing."""
    km, kc = kernel
    worker = worker_of(kernel.pid)
    os.kill(kernel.pid, signal.SIGKILL)
    km.provisioner.process.wait(5)
    assert wait_gone([worker], timeout=5) == [], "the worker outlived a killed kernel"


# ---- interrupts ----

def test_interrupt_request_while_idle_is_harmless(kernel):
    km, kc = kernel
    execute(kc, "%echo before")
    reply, msgs = request(kc, "interrupt_request", {}, channel="control")
    assert reply["msg_type"] == "interrupt_reply"
    assert reply["content"]["status"] == "ok"
    assert [m["msg_type"] for m in msgs] == ["status", "status"]
    r, m = execute(kc, "%echo after")
    assert r["content"]["status"] == "ok" and streams(m) == ["after\n"]
    assert r["content"]["execution_count"] == 2


def test_sigint_while_idle_is_harmless(kernel):
    km, kc = kernel
    worker = worker_of(kernel.pid)
    km.interrupt_kernel()                          # interrupt_mode "signal": SIGINT to the group
    time.sleep(0.3)
    assert km.is_alive()
    r, m = execute(kc, "%echo after")
    assert r["content"]["status"] == "ok" and streams(m) == ["after\n"]
    r, m = execute(kc, "%device", timeout=30)
    assert r["content"]["status"] == "ok"
    assert worker.is_running() and worker_of(kernel.pid).pid == worker.pid, \
        "an idle interrupt must not restart the worker"


def test_interrupt_then_shutdown(kernel):
    km, kc = kernel
    request(kc, "interrupt_request", {}, channel="control")
    family = [psutil.Process(kernel.pid), worker_of(kernel.pid)]
    reply, _ = request(kc, "shutdown_request", {"restart": False}, channel="control")
    assert reply["content"]["status"] == "ok"
    assert wait_exit(km) == 0
    assert wait_gone(family) == []


def test_interrupt_request_on_shell_is_not_answered(kernel):
    """interrupt_request belongs to control; on shell it is an unknown type: no reply, no crash."""
    km, kc = kernel
    msg = kc.session.msg("interrupt_request", {})
    kc.shell_channel.send(msg)
    info = kc.kernel_info()
    reply = get_reply(kc, info, TIMEOUT)
    assert reply["msg_type"] == "kernel_info_reply"
