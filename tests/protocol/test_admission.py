"""Admission to a GPU (kernel/exec/admission.c): at most N CUDA contexts per GPU on a host, whatever the
number of kernels. Tested on a simulated GPU (CUDALAB_TESTING=1 CUDALAB_TEST_FAKE_GPU=1: the worker
takes a slot as for a GPU, then the CPU computes) with one slot, in a private admission directory:
a second kernel waits, saying so, until the first lets its slot go (idle while it is wanted, or
dead); an idle worker that nobody waits for keeps its slot; an interrupt ends a wait."""
from __future__ import annotations

import os
import signal
import time

import psutil

from conftest import execute, kernel_children, streams, wait_gone

CELL = "%matmul --size 16 --variant naive --reps 1"


def env(tmp_path, idle_s: float = 1.0, wait_s: float = 60.0) -> dict[str, str]:
    return {"CUDALAB_TESTING": "1", "CUDALAB_TEST_FAKE_GPU": "1", "CUDALAB_GPU_CONTEXTS": "1",
            "CUDALAB_ADMISSION_DIR": str(tmp_path / "admission"), "CUDALAB_GPU_IDLE_S": str(idle_s),
            "CUDALAB_GPU_WAIT": str(wait_s)}


def run(kc, code: str = CELL, timeout: float = 60) -> tuple[dict, str]:
    reply, msgs = execute(kc, code, timeout=timeout)
    return reply["content"], "".join(streams(msgs, "stdout"))


def test_second_kernel_waits_for_the_first_to_let_go(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path))
    c, out = run(a.kc)
    assert c["status"] == "ok" and "waiting" not in out       # the one slot is a's
    b = start_kernel(env=env(tmp_path))
    t0 = time.monotonic()
    c, out = run(b.kc)
    assert c["status"] == "ok", c
    assert "waiting for the GPU (the GPU is busy: all 1 of its CUDA contexts are held by other kernels" in out
    assert "... the GPU after" in out
    assert time.monotonic() - t0 >= 0.9                         # a let go only after its idle second
    assert "letting it go" in a.log.text()
    # a's next command waits in turn, until b has been idle for a second
    c, out = run(a.kc)
    assert c["status"] == "ok" and "waiting for the GPU" in out, out


def test_idle_worker_keeps_its_slot_when_nobody_waits(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path))
    assert run(a.kc)[0]["status"] == "ok"
    workers = kernel_children(a.pid)
    time.sleep(2.5)                                              # idle past CUDALAB_GPU_IDLE_S
    assert [p.pid for p in kernel_children(a.pid)] == [p.pid for p in workers]
    c, out = run(a.kc)
    assert c["status"] == "ok" and "waiting" not in out


def test_a_dead_kernel_frees_its_slot(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=600))
    assert run(a.kc)[0]["status"] == "ok"
    procs = [psutil.Process(a.pid), *kernel_children(a.pid)]
    b = start_kernel(env=env(tmp_path, idle_s=600))
    msg_id = b.kc.execute(CELL)
    time.sleep(1.0)
    os.kill(a.pid, signal.SIGKILL)                               # its worker dies with it
    assert wait_gone(procs, 5) == []
    reply = b.kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "ok", reply["content"]


def test_interrupt_ends_a_wait_for_a_slot(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=3))
    assert run(a.kc)[0]["status"] == "ok"
    b = start_kernel(env=env(tmp_path, idle_s=600))
    msg_id = b.kc.execute(CELL)
    time.sleep(1.0)
    t0 = time.monotonic()
    b.km.interrupt_kernel()
    reply = b.kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - t0 < 1.0
    # b no longer waits: a, idle past its 3 s, keeps its slot (b's interrupted wait left the queue)
    time.sleep(3.5)
    assert "letting it go" not in a.log.text()
    c, out = run(a.kc)
    assert c["status"] == "ok" and "waiting" not in out


# ---------------------------------------------------------------- fair timing

RESULT = "application/vnd.cudalab.result+json"


def doc_of(msgs: list[dict]) -> dict:
    return next(m["content"]["data"][RESULT] for m in msgs
                if RESULT in m.get("content", {}).get("data", {}))


def two_slots(tmp_path) -> dict[str, str]:
    return {**env(tmp_path, idle_s=600), "CUDALAB_GPU_CONTEXTS": "2"}


def test_timed_runs_take_turns(start_kernel, tmp_path):
    a = start_kernel(env=two_slots(tmp_path))
    b = start_kernel(env=two_slots(tmp_path))
    assert run(a.kc)[0]["status"] == "ok" and run(b.kc)[0]["status"] == "ok"     # each holds a slot
    # the host loop: about a second on one thread, however many cores the host has
    long_id = a.kc.execute("%matmul --size 1024 --variant cpu --reps 1 --warmup 0 --no-check")
    time.sleep(0.4)                                              # a's point is timing now
    reply, msgs = execute(b.kc, CELL, timeout=60)
    assert reply["content"]["status"] == "ok"
    timing = doc_of(msgs)["timing"]
    assert timing["gpu_alone"] is True and timing["waited_ms"] > 100, timing
    assert "for other kernels' timed runs (fair timing" in "".join(streams(msgs, "stdout"))
    assert a.kc.get_shell_msg(timeout=60)["parent_header"]["msg_id"] == long_id
    # --shared-timing: no turn taken, nothing waited
    long_id = a.kc.execute("%matmul --size 1024 --variant cpu --reps 1 --warmup 0 --no-check")
    time.sleep(0.4)
    reply, msgs = execute(b.kc, CELL + " --shared-timing", timeout=60)
    timing = doc_of(msgs)["timing"]
    assert timing == {"gpu_alone": False, "waited_ms": 0.0}, timing
    assert a.kc.get_shell_msg(timeout=60)["parent_header"]["msg_id"] == long_id
