"""How the kernels of one host share its GPUs (kernel/exec/admission.c): at most N CUDA contexts per GPU
whatever the number of kernels, a queue per GPU served in order and shown live on the waiting cell,
timed runs that take turns (round robin by GPU time), commands that need no GPU never waiting, and
several GPUs. Tested on simulated GPUs (CUDALAB_TESTING=1 CUDALAB_TEST_FAKE_GPU=N: a worker takes a
slot as for a GPU, then the CPU computes) in a private admission directory."""
from __future__ import annotations

import fcntl
import os
import re
import signal
import time
from queue import Empty

import psutil
import pytest

from conftest import execute, kernel_children, sanitized_kernel, streams, wait_gone, wait_lines

pytestmark = pytest.mark.serial    # waits and turns bounded in wall-clock time: run alone (conftest.py)

CELL = "%matmul --size 16 --variant naive --reps 1"
# the host loop: about two seconds on one thread, however many cores the host has, in either build
# (ASan's runs it four to nine times slower; a size of 1024 falls off a cache cliff, 5 s in a release build)
LONG_SIZE = 760 if sanitized_kernel() else 1150
LONG = f"%matmul --size {LONG_SIZE} --variant cpu --reps 1 --warmup 0 --no-check"
RESULT = "application/vnd.cudalab.result+json"


def env(tmp_path, idle_s: float = 1.0, wait_s: float = 60.0, gpus: int = 1, contexts: int = 1) -> dict[str, str]:
    """CUDALAB_DEBUG=1: the tests read when a worker let its GPU go in the kernel's log."""
    return {"CUDALAB_DEBUG": "1", "CUDALAB_TESTING": "1", "CUDALAB_TEST_FAKE_GPU": str(gpus), "CUDALAB_GPU_CONTEXTS": str(contexts),
            "CUDALAB_ADMISSION_DIR": str(tmp_path / "admission"), "CUDALAB_GPU_IDLE_S": str(idle_s),
            "CUDALAB_GPU_WAIT": str(wait_s)}


def run(kc, code: str = CELL, timeout: float = 60) -> tuple[dict, list[str], dict | None]:
    """(execute_reply content, the cell's wait lines, its result document)."""
    reply, msgs = execute(kc, code, timeout=timeout)
    return reply["content"], wait_lines(msgs), doc_of(msgs)


def doc_of(msgs: list[dict]) -> dict | None:
    return next((m["content"]["data"][RESULT] for m in msgs if RESULT in m.get("content", {}).get("data", {})),
                None)


def said_while_running(kc, msg_id: str, needle: str, timeout: float = 30) -> list[dict]:
    """The iopub messages of msg_id until one of its wait lines says needle (the cell still runs)."""
    msgs: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            m = kc.get_iopub_msg(timeout=0.5)
        except Empty:
            continue
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(m)
        if any(needle in line for line in wait_lines([m])):
            return msgs
        assert m["msg_type"] != "status" or m["content"]["execution_state"] != "idle", wait_lines(msgs)
    raise AssertionError(f"no wait line said {needle!r}: {wait_lines(msgs)}")


def held_turn(admission, timeout: float = 30) -> None:
    """Waits until some kernel holds the timed-run turn (a KEY.turn file locked, admission.h), so that
    what runs next must wait for it, however slowly the holder started on a loaded machine."""
    end = time.time() + timeout
    while time.time() < end:
        for name in os.listdir(admission) if admission.is_dir() else []:
            if name.endswith(".turn"):
                with open(admission / name, "rb") as f:
                    try:
                        fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        fcntl.flock(f, fcntl.LOCK_UN)
                    except BlockingIOError:
                        return
        time.sleep(0.02)
    raise AssertionError("no kernel took the timed-run turn")


def queue_files(tmp_path) -> list[str]:
    """The tickets in the admission directory (KEY.Q.PLACE…, admission.h): none once every wait has ended."""
    return sorted(f for f in os.listdir(tmp_path / "admission") if re.match(r"[^.]+\.[ctm]\.", f))


# ---------------------------------------------------------------- contexts and their queue

def test_second_kernel_waits_for_the_first_to_let_go(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path))
    c, said, _ = run(a.kc)
    a_done = time.monotonic()                                   # a's idle second began before its reply
    assert c["status"] == "ok" and said == []                   # the one slot is a's
    b = start_kernel(env=env(tmp_path))
    c, said, doc = run(b.kc)
    assert c["status"] == "ok", c
    assert said[0].startswith("waiting for the GPU: next (the GPU is busy: all 1 of its CUDA contexts are held by "
                              "other kernels"), said
    assert said[-1].startswith("waited ") and "for the GPU" in said[-1], said
    # a let go only after its idle second, counted from its cell's end (b's start, slow under load, is within it)
    assert time.monotonic() - a_done >= 0.9
    assert "letting it go" in a.log.text()
    # b's worker opened the GPU for this command: the start-up is reported, apart from every time
    assert doc["timing"]["startup_ms"] >= 0, doc["timing"]
    # a's next command waits in turn, until b has been idle for a second, and pays the start-up again
    c, said, doc = run(a.kc)
    assert c["status"] == "ok" and said and said[-1].startswith("waited "), said
    assert "startup_ms" in doc["timing"]
    assert queue_files(tmp_path) == []


def test_the_queue_is_served_in_order_and_each_cell_says_its_place(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=2))
    assert run(a.kc)[0]["status"] == "ok"
    b = start_kernel(env=env(tmp_path, idle_s=2))
    c = start_kernel(env=env(tmp_path, idle_s=2))
    b_id = b.kc.execute(CELL)
    said_while_running(b.kc, b_id, "waiting for the GPU: next")
    c_id = c.kc.execute(CELL)
    said_while_running(c.kc, c_id, "waiting for the GPU: 1 command ahead")
    # a lets go after its idle seconds: b, first in line, gets the slot; c moves up and waits for b
    said_while_running(c.kc, c_id, "waiting for the GPU: next")
    b_reply = b.kc.get_shell_msg(timeout=30)
    assert b_reply["parent_header"]["msg_id"] == b_id and b_reply["content"]["status"] == "ok"
    c_reply = c.kc.get_shell_msg(timeout=30)
    assert c_reply["parent_header"]["msg_id"] == c_id and c_reply["content"]["status"] == "ok"
    assert "letting it go" in b.log.text()                      # c's turn came from b's idle release


def test_idle_worker_keeps_its_slot_when_nobody_waits(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path))
    assert run(a.kc)[0]["status"] == "ok"
    workers = kernel_children(a.pid)
    time.sleep(2.5)                                              # idle past CUDALAB_GPU_IDLE_S
    assert [p.pid for p in kernel_children(a.pid)] == [p.pid for p in workers]
    c, said, doc = run(a.kc)
    assert c["status"] == "ok" and said == [] and "startup_ms" not in doc["timing"]


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


def test_a_dead_waiter_leaves_the_queue(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=600))
    assert run(a.kc)[0]["status"] == "ok"                        # the one slot is a's until it dies
    b = start_kernel(env=env(tmp_path, idle_s=600))
    b_id = b.kc.execute(CELL)
    said_while_running(b.kc, b_id, "waiting for the GPU: next")
    c = start_kernel(env=env(tmp_path, idle_s=600))
    c_id = c.kc.execute(CELL)
    said_while_running(c.kc, c_id, "waiting for the GPU: 1 command ahead")
    for k in (b, a):                                             # b dies in the queue, ahead of c; then a
        procs = [psutil.Process(k.pid), *kernel_children(k.pid)]
        os.kill(k.pid, signal.SIGKILL)
        assert wait_gone(procs, 5) == []
        if k is b:
            said_while_running(c.kc, c_id, "waiting for the GPU: next")
    reply = c.kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == c_id and reply["content"]["status"] == "ok"
    assert queue_files(tmp_path) == []


def test_interrupt_ends_a_wait_for_a_slot(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=3))
    assert run(a.kc)[0]["status"] == "ok"
    b = start_kernel(env=env(tmp_path, idle_s=600))
    msg_id = b.kc.execute(CELL)
    said_while_running(b.kc, msg_id, "waiting for the GPU")
    t0 = time.monotonic()
    b.km.interrupt_kernel()
    reply = b.kc.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - t0 < 1.0
    assert queue_files(tmp_path) == []                           # b's interrupted wait left the queue
    # a, idle past its 3 s, keeps its slot: nobody waits any more
    time.sleep(3.5)
    assert "letting it go" not in a.log.text()
    c, said, _ = run(a.kc)
    assert c["status"] == "ok" and said == []


def test_commands_that_need_no_gpu_never_wait(start_kernel, tmp_path):
    a = start_kernel(env=env(tmp_path, idle_s=600))
    assert run(a.kc)[0]["status"] == "ok"                        # the one slot is a's, for good
    b = start_kernel(env=env(tmp_path, idle_s=600, wait_s=5))
    for cell in ("%grid --data 1000 --block 256", "%occupancy --threads 256 --regs 32", "%device", "%help grid"):
        t0 = time.monotonic()
        reply, msgs = execute(b.kc, cell, timeout=30)
        assert reply["content"]["status"] == "ok", (cell, reply["content"])
        assert wait_lines(msgs) == [] and time.monotonic() - t0 < 3, cell
    # %device shows the GPU's sharing: a holds its one context
    doc = doc_of(execute(b.kc, "%device", timeout=30)[1])
    assert doc["sharing"] == [{"device": 0, "key": "fake0", "contexts": 1, "held": 1, "waiting_for_context": 0,
                               "waiting_for_turn": 0, "this_kernel": False}], doc["sharing"]
    # a command that runs on the GPU waits, and fails past CUDALAB_GPU_WAIT
    c, said, _ = run(b.kc, "%grid --data 1000 --block 256 --run")
    assert c["ename"] == "GPUBusyError" and said, c


# ---------------------------------------------------------------- several GPUs

def test_kernels_spread_over_the_gpus_and_device_shows_each_queue(start_kernel, tmp_path):
    kernels = [start_kernel(env=env(tmp_path, idle_s=600, gpus=2)) for _ in range(3)]
    a, b, c = kernels
    notes = []
    for k in (a, b):
        reply, said, doc = run(k.kc)
        assert reply["status"] == "ok" and said == []
        notes.append(doc["backend_note"])
    assert sorted(notes) == ["simulated GPU 0 of 2 (CUDALAB_TEST_FAKE_GPU): the CPU computes",
                             "simulated GPU 1 of 2 (CUDALAB_TEST_FAKE_GPU): the CPU computes"], notes
    c_id = c.kc.execute(CELL)                                    # both GPUs full: c queues on each
    said_while_running(c.kc, c_id, "waiting for the GPU: next (the GPUs are busy: all 2 CUDA contexts of the 2 GPUs")
    sharing = doc_of(execute(a.kc, "%device", timeout=30)[1])["sharing"]
    assert [(g["device"], g["held"], g["contexts"], g["waiting_for_context"]) for g in sharing] == \
        [(0, 1, 1, 1), (1, 1, 1, 1)], sharing
    assert sum(g["this_kernel"] for g in sharing) == 1
    # a dies: c takes its GPU
    procs = [psutil.Process(a.pid), *kernel_children(a.pid)]
    os.kill(a.pid, signal.SIGKILL)
    assert wait_gone(procs, 5) == []
    reply = c.kc.get_shell_msg(timeout=30)
    assert reply["parent_header"]["msg_id"] == c_id and reply["content"]["status"] == "ok", reply["content"]
    assert queue_files(tmp_path) == []


# ---------------------------------------------------------------- fair timing

def two_slots(tmp_path) -> dict[str, str]:
    return env(tmp_path, idle_s=600, contexts=2)


def test_timed_runs_take_turns(start_kernel, tmp_path):
    a = start_kernel(env=two_slots(tmp_path))
    b = start_kernel(env=two_slots(tmp_path))
    assert run(a.kc)[0]["status"] == "ok" and run(b.kc)[0]["status"] == "ok"     # each holds a slot
    long_id = a.kc.execute(LONG)
    time.sleep(0.4)                                              # a's run is timing now
    reply, msgs = execute(b.kc, CELL, timeout=60)
    assert reply["content"]["status"] == "ok"
    timing = doc_of(msgs)["timing"]
    assert timing["gpu_alone"] is True and timing["waited_ms"] > 100, timing
    said = wait_lines(msgs)
    assert said[-1].startswith("waited ") and "for other kernels' timed runs on the GPU (fair timing" in said[-1]
    assert a.kc.get_shell_msg(timeout=60)["parent_header"]["msg_id"] == long_id
    # --shared-timing: no turn taken, nothing waited
    long_id = a.kc.execute(LONG)
    time.sleep(0.4)
    reply, msgs = execute(b.kc, CELL + " --shared-timing", timeout=60)
    timing = doc_of(msgs)["timing"]
    assert timing == {"gpu_alone": False, "waited_ms": 0.0}, timing
    assert a.kc.get_shell_msg(timeout=60)["parent_header"]["msg_id"] == long_id


def test_a_sweep_does_not_starve_a_single_run(start_kernel, tmp_path):
    """Round robin by GPU time: a kernel that has just had a timed turn queues behind one that has not,
    so a single run waits for one of a long sweep's points, not for the whole sweep."""
    a = start_kernel(env=two_slots(tmp_path))
    b = start_kernel(env=two_slots(tmp_path))
    assert run(a.kc)[0]["status"] == "ok" and run(b.kc)[0]["status"] == "ok"
    sizes = ",".join(str(LONG_SIZE + i) for i in range(6))
    sweep_id = a.kc.execute(LONG.replace(f"--size {LONG_SIZE}", f"--size {sizes}"))
    time.sleep(0.4)
    t0 = time.monotonic()
    reply, msgs = execute(b.kc, CELL, timeout=60)
    b_done = time.monotonic() - t0
    assert reply["content"]["status"] == "ok"
    sweep = a.kc.get_shell_msg(timeout=120)
    sweep_s = time.monotonic() - t0
    assert sweep["parent_header"]["msg_id"] == sweep_id and sweep["content"]["status"] == "ok"
    assert b_done < sweep_s / 2, (b_done, sweep_s)               # served between the sweep's points


def test_the_cpu_backend_takes_turns_too(start_kernel, tmp_path):
    """Without a GPU, timed runs take turns on the host's CPU, so a CPU lab server's timings do not
    disturb each other either."""
    cpu = {"CUDALAB_BACKEND": "cpu", "CUDALAB_ADMISSION_DIR": str(tmp_path / "admission")}
    a = start_kernel(env=cpu)
    b = start_kernel(env=cpu)
    long_id = a.kc.execute(LONG)
    held_turn(tmp_path / "admission")
    reply, msgs = execute(b.kc, CELL, timeout=60)
    timing = doc_of(msgs)["timing"]
    assert timing["gpu_alone"] is True and timing["waited_ms"] > 100, timing
    assert "timed runs on the CPU" in wait_lines(msgs)[-1]
    assert streams(msgs, "stderr") == []
    assert a.kc.get_shell_msg(timeout=60)["parent_header"]["msg_id"] == long_id
