"""Never crash, always interruptible: interrupts in both modes, the grace period and the kill,
crashed and killed workers, the per-cell time limit, impossible sizes, output floods, and
shutdown while busy. Each case ends the cell with a clear error and the next cell works.

%selftest misbehaves on purpose and exists only with CUDALAB_TESTING=1."""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from conftest import collect_iopub, execute, get_reply, kernel_children, outputs, streams, wait_gone, wait_lines

RESULT = "application/vnd.cudalab.result+json"

TESTING = {"CUDALAB_TESTING": "1"}


def workers(km) -> list[psutil.Process]:
    return kernel_children(km.provisioner.process.pid)


def start_long(kc, code: str, settle: float = 0.4) -> str:
    """Sends a long cell and waits until it is surely running in the worker."""
    msg_id = kc.execute(code)
    time.sleep(settle)
    return msg_id


def finish(kc, msg_id: str) -> tuple[dict, list[dict], float]:
    t0 = time.monotonic()
    msgs = collect_iopub(kc, msg_id, timeout=10)
    reply = get_reply(kc, msg_id, timeout=10)
    return reply, msgs, time.monotonic() - t0


def assert_next_cell_works(kc) -> None:
    reply, msgs = execute(kc, "%echo still here")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs, "stdout") == ["still here\n"]


def error_of(msgs: list[dict]) -> dict:
    errors = [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert len(errors) == 1, [m["msg_type"] for m in msgs]
    return errors[0]


@pytest.fixture
def tkernel(start_kernel):
    return start_kernel(env=TESTING)


def test_selftest_is_unreachable_without_the_testing_switch(kernel):
    _, kc = kernel
    reply, _ = execute(kc, "%selftest --segfault")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UsageError"
    assert "unknown magic %selftest" in reply["content"]["evalue"]


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_interrupt_stops_a_cooperative_command_and_keeps_its_worker(tkernel, mode):
    km, kc = tkernel
    execute(kc, "%device --brief")                    # the worker is up
    before = {p.pid for p in workers(km)}
    msg_id = start_long(kc, "%selftest --spin 30000\n%echo never")
    t0 = time.monotonic()
    if mode == "signal":
        os.kill(km.provisioner.process.pid, signal.SIGINT)
    else:
        req = kc.session.msg("interrupt_request", {})
        kc.control_channel.send(req)
        assert get_reply(kc, req["header"]["msg_id"], channel="control")["content"]["status"] == "ok"
    reply, msgs, _ = finish(kc, msg_id)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"the interrupt took {elapsed:.2f} s"
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "KeyboardInterrupt", c
    assert "%selftest" in c["evalue"] and "stopped when asked" in c["evalue"], c["evalue"]
    assert error_of(msgs)["ename"] == "KeyboardInterrupt"
    assert "never" not in "".join(streams(msgs)), "the cell went on after the interrupt"
    assert {p.pid for p in workers(km)} == before, "a cooperative stop should keep the worker"
    assert_next_cell_works(kc)


def test_interrupt_kills_a_command_that_ignores_it(tkernel):
    km, kc = tkernel
    execute(kc, "%device --brief")
    before = {p.pid for p in workers(km)}
    msg_id = start_long(kc, "%selftest --sleep 30000")
    t0 = time.monotonic()
    km.interrupt_kernel()                               # interrupt_mode signal: SIGINT
    reply, msgs, _ = finish(kc, msg_id)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0, f"the interrupt took {elapsed:.2f} s"
    c = reply["content"]
    assert c["ename"] == "KeyboardInterrupt"
    assert "was killed" in c["evalue"] and "fresh one" in c["evalue"], c["evalue"]
    assert not wait_gone([psutil.Process(p) for p in before if psutil.pid_exists(p)], timeout=2)
    assert_next_cell_works(kc)
    assert {p.pid for p in workers(km)} - before, "no fresh worker after the kill"


def test_second_interrupt_kills_at_once(start_kernel):
    km, kc = start_kernel(env={**TESTING, "CUDALAB_INTERRUPT_GRACE_MS": "5000"})
    msg_id = start_long(kc, "%selftest --sleep 30000")
    t0 = time.monotonic()
    km.interrupt_kernel()
    time.sleep(0.2)
    km.interrupt_kernel()
    reply, _, _ = finish(kc, msg_id)
    assert time.monotonic() - t0 < 1.5
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert_next_cell_works(kc)


def test_worker_killed_by_hand(tkernel):
    km, kc = tkernel
    msg_id = start_long(kc, "%selftest --sleep 30000")
    victims = workers(km)
    assert victims, "no worker process"
    for p in victims:
        p.send_signal(signal.SIGKILL)
    reply, msgs, elapsed = finish(kc, msg_id)
    c = reply["content"]
    assert c["ename"] == "WorkerDied", c
    assert "signal 9" in c["evalue"] and "fresh worker" in c["evalue"], c["evalue"]
    assert elapsed < 2
    assert_next_cell_works(kc)


@pytest.mark.parametrize("how, signame", [("--segfault", "signal 11"), ("--abort", "signal 6"),
                                          ("--exit 3", "status 3")])
def test_worker_crash_is_a_cell_error(start_kernel, how, signame):
    # under `make test`'s ASan build the sanitizer would catch the deliberate crash and
    # exit 1 with a report; let the signal through as it would be in a release build
    km, kc = start_kernel(env={**TESTING, "ASAN_OPTIONS": "handle_segv=0:handle_abort=0"})
    reply, msgs = execute(kc, f"%selftest {how}\n%echo never")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "WorkerDied", c
    assert signame in c["evalue"], c["evalue"]
    assert c["traceback"][0].startswith("WorkerDied: ")
    assert "never" not in "".join(streams(msgs))
    assert_next_cell_works(kc)
    # and the kernel itself did not move
    assert km.provisioner.process.poll() is None


def test_per_cell_time_limit(start_kernel):
    km, kc = start_kernel(env={**TESTING, "CUDALAB_CELL_TIMEOUT": "1"})
    t0 = time.monotonic()
    reply, msgs = execute(kc, "%selftest --sleep 30000")
    elapsed = time.monotonic() - t0
    c = reply["content"]
    assert c["ename"] == "TimeoutError", c
    assert "limit of 1 s" in c["evalue"] and "CUDALAB_CELL_TIMEOUT" in c["evalue"], c["evalue"]
    assert 1.0 <= elapsed < 2.5, elapsed
    # a cooperative command stops within the limit too, and quick cells are untouched
    reply, _ = execute(kc, "%selftest --spin 30000")
    assert reply["content"]["ename"] == "TimeoutError"
    assert_next_cell_works(kc)


def test_time_limit_from_the_command_line(spawn_kernel):
    kc = spawn_kernel(args=["--cell-timeout", "1"], env=TESTING).client()
    reply, _ = execute(kc, "%selftest --sleep 30000")
    assert reply["content"]["ename"] == "TimeoutError"
    assert "limit of 1 s" in reply["content"]["evalue"]


@pytest.mark.serial    # refused within 5 s of wall-clock time: run alone
@pytest.mark.parametrize("cell, words", [
    ("%reduce --size 2^40", ["--size", "largest"]),
    ("%histo --size 2^40", ["--size"]),
    ("%matmul --size 2^20", ["--size"]),
    ("%matmul --m 2^31 --n 2 --k 2", []),
])
def test_impossible_sizes_are_refused_before_allocation(kernel, cell, words):
    km, kc = kernel
    t0 = time.monotonic()
    reply, msgs = execute(kc, cell)
    c = reply["content"]
    assert c["status"] == "error", c
    assert time.monotonic() - t0 < 5, "the refusal came after work was done"
    for w in words:
        assert w in c["evalue"], c["evalue"]
    proc = psutil.Process(km.provisioner.process.pid)
    assert proc.is_running()
    assert_next_cell_works(kc)


def test_output_flood_is_capped(tkernel):
    _, kc = tkernel
    reply, msgs = execute(kc, "%selftest --flood 5000000", timeout=30)
    assert reply["content"]["status"] == "ok"
    text = "".join(streams(msgs, "stdout"))
    assert len(text) <= (1 << 20) + 300, len(text)
    assert "output truncated" in text
    # coalesced: a megabyte of lines arrives in a handful of messages
    assert len([m for m in msgs if m["msg_type"] == "stream"]) < 40
    assert_next_cell_works(kc)


def test_large_table_is_truncated_in_display_but_whole_in_the_document(tkernel):
    _, kc = tkernel
    reply, msgs = execute(kc, "%selftest --rows 1000")
    assert reply["content"]["status"] == "ok"
    data = [m for m in outputs(msgs) if m["msg_type"] == "execute_result"][0]["content"]["data"]
    assert "rows not shown" in data["text/plain"]
    assert "rows not shown" in data["text/html"]
    assert len(data["text/plain"].splitlines()) < 200
    assert data["application/vnd.cudalab.result+json"]["rows"] == list(range(1000))


def test_shutdown_while_busy_leaves_no_process(tkernel):
    km, kc = tkernel
    start_long(kc, "%selftest --sleep 30000")
    procs = [psutil.Process(km.provisioner.process.pid)] + workers(km)
    assert len(procs) >= 2, "the worker should be running"
    req = kc.session.msg("shutdown_request", {"restart": False})
    kc.control_channel.send(req)
    reply = get_reply(kc, req["header"]["msg_id"], channel="control")
    assert reply["content"] == {"status": "ok", "restart": False}
    assert km.provisioner.process.wait(5) == 0
    assert not wait_gone(procs, timeout=5), "a process outlived shutdown"


def test_restart_leaves_no_old_worker(tkernel):
    km, kc = tkernel
    execute(kc, "%device --brief")
    old = [psutil.Process(km.provisioner.process.pid)] + workers(km)
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=10)
    assert not wait_gone(old, timeout=5)
    assert_next_cell_works(kc)


# ---------------------------------------------------------------- a GPU that is there but busy
# (CUDALAB_TEST_GPU_BUSY_S: the worker's first seconds, a GPU is said to be there and full)

def test_busy_gpu_is_waited_for_not_replaced_by_the_cpu(start_kernel):
    km, kc = start_kernel(env={**TESTING, "CUDALAB_TEST_GPU_BUSY_S": "2", "CUDALAB_GPU_WAIT": "60"})
    reply, msgs = execute(kc, "%matmul --size 16 --variant naive --reps 1", timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    said = wait_lines(msgs)
    assert said and "waiting for the GPU (the GPU is busy: out of memory" in said[0], said
    assert said[-1].startswith("waited "), said
    assert streams(msgs, "stderr") == []


def test_busy_gpu_past_the_wait_is_an_error_not_cpu_numbers(start_kernel):
    km, kc = start_kernel(env={**TESTING, "CUDALAB_TEST_GPU_BUSY_S": "600", "CUDALAB_GPU_WAIT": "1"})
    reply, msgs = execute(kc, "%matmul --size 16 --variant naive --reps 1", timeout=60)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "GPUBusyError", c
    assert "the GPU gave this kernel no room in 1 s" in c["evalue"]
    assert "not on the CPU either" in c["evalue"]
    assert not [m for m in outputs(msgs) if RESULT in m["content"].get("data", {})]
    assert "gave up waiting for the GPU" in wait_lines(msgs)[-1]


def test_interrupt_while_waiting_for_the_gpu(start_kernel):
    km, kc = start_kernel(env={**TESTING, "CUDALAB_TEST_GPU_BUSY_S": "600", "CUDALAB_GPU_WAIT": "600"})
    msg_id = start_long(kc, "%matmul --size 16 --variant naive --reps 1")
    t0 = time.monotonic()
    km.interrupt_kernel()
    reply, msgs, _ = finish(kc, msg_id)
    assert time.monotonic() - t0 < 1.0
    c = reply["content"]
    assert c["ename"] == "KeyboardInterrupt", c
    assert "the command stopped when asked" in c["evalue"], c["evalue"]
    assert "waiting for the GPU" in wait_lines(msgs)[0]
    assert_next_cell_works(kc)
