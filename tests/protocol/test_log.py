"""The kernel's own log (kernel/base/log.c): a healthy session writes nothing to the kernel's stderr, so
that nothing prints over a jupyter console prompt or into an nbconvert or papermill run; warnings
(a dropped message) always appear, and CUDALAB_DEBUG=1 adds every event (the worker's backend, an
interrupt while idle, a shutdown request) and every message."""
from __future__ import annotations

import time

from conftest import execute

EVENTS = ["worker: backend", "while idle: nothing to stop", "shutdown requested"]


def session(start_kernel, env: dict[str, str] | None = None):
    """A cell, an interrupt while idle, a shutdown: returns the kernel's log once it has exited."""
    k = start_kernel(env=env)
    reply, _ = execute(k.kc, "%matmul --size 16 --variant naive --reps 1")      # runs in the worker
    assert reply["content"]["status"] == "ok"
    k.km.interrupt_kernel()
    k.log.wait_for("while idle", timeout=1.0 if env else 0.5)
    proc = k.km.provisioner.process
    k.kc.control_channel.send(k.kc.session.msg("shutdown_request", {"restart": False}))
    proc.wait(5)
    return k.log


def test_a_healthy_session_logs_nothing(start_kernel):
    log = session(start_kernel)
    assert log.text() == ""


def test_debug_logs_every_event_and_message(start_kernel):
    log = session(start_kernel, {"CUDALAB_DEBUG": "1"})
    for needle in EVENTS + ["shell: execute_request"]:
        assert log.wait_for(needle), (needle, log.text())


def test_a_dropped_message_is_a_warning_without_debug(start_kernel):
    k = start_kernel()
    key, k.kc.session.key = k.kc.session.key, b"not the kernel's key"
    k.kc.execute("%echo unsigned")
    assert k.log.wait_for("dropped shell message"), k.log.text()
    k.kc.session.key = key
    time.sleep(0.1)
    assert not any(e in k.log.text() for e in EVENTS)
