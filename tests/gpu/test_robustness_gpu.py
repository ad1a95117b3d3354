"""On a GPU: an interrupt stops a long GPU kernel, and a faulting launch (a sticky CUDA error)
costs one worker, not the session. Timings are printed (run with -s) for the closing notes."""
from __future__ import annotations

import time

import psutil

from conftest import execute, get_reply, collect_iopub, kernel_children
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

TESTING = {"CUDALAB_TESTING": "1"}


def workers(km) -> set[int]:
    return {p.pid for p in kernel_children(km.provisioner.process.pid)}


def timed(kc, code: str) -> tuple[dict, list[dict], float]:
    t0 = time.monotonic()
    reply, msgs = execute(kc, code, timeout=60)
    return reply, msgs, time.monotonic() - t0


RESULT = "application/vnd.cudalab.result+json"


def result_doc(msgs: list[dict]) -> dict:
    """The command's result document (a sweep's is in its final update_display_data)."""
    for m in reversed(msgs):
        if m["msg_type"] in ("execute_result", "display_data", "update_display_data") \
                and RESULT in m["content"]["data"]:
            return m["content"]["data"][RESULT]
    raise AssertionError("no result document")


def device_backend(msgs: list[dict]) -> str:
    return result_doc(msgs)["backend"]


def test_interrupt_stops_a_long_gpu_kernel(gpu_doc, start_kernel):
    km, kc = start_kernel(env=TESTING)
    _, msgs, first = timed(kc, "%device --brief")
    assert device_backend(msgs) == "cuda"
    before = workers(km)
    msg_id = kc.execute("%selftest --spin 20000")
    time.sleep(1.0)                                     # the kernel is on the GPU now
    t0 = time.monotonic()
    km.interrupt_kernel()
    collect_iopub(kc, msg_id, timeout=10)
    reply = get_reply(kc, msg_id, timeout=10)
    stop = time.monotonic() - t0
    c = reply["content"]
    assert c["ename"] == "KeyboardInterrupt", c
    assert stop < 1.0, f"interrupt took {stop:.3f} s"
    _, msgs, recover = timed(kc, "%device --brief")
    assert device_backend(msgs) == "cuda"
    assert workers(km) != before
    print(f"\n[timing] first %device (worker + CUDA context): {first:.3f} s; "
          f"interrupt of a 20 s GPU kernel answered in {stop:.3f} s ({c['evalue']}); "
          f"next %device on a fresh worker: {recover:.3f} s")


def test_sticky_cuda_error_restarts_the_worker(gpu_doc, start_kernel):
    km, kc = start_kernel(env=TESTING)
    timed(kc, "%device --brief")
    before = workers(km)
    reply, msgs, fault = timed(kc, "%selftest --fault")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "CudaError", c
    assert "illegal" in c["evalue"].lower(), c["evalue"]
    assert any("fresh device worker" in line for line in c["traceback"]), c["traceback"]
    assert psutil.Process(km.provisioner.process.pid).is_running()
    reply, msgs, recover = timed(kc, "%reduce --size 2^20 --variant fast,cub --reps 5")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert result_doc(msgs)["backend"] == "cuda"
    assert workers(km) and workers(km) != before, "the poisoned worker should have been replaced"
    print(f"\n[timing] faulting launch reported in {fault:.3f} s ({c['evalue']}); "
          f"next %reduce on a fresh worker: {recover:.3f} s")


def test_a_host_stall_inside_a_rep_stays_out_of_its_figure(gpu_doc, start_kernel):
    """A timed rep is queued behind the timing hold, so a host descheduled between starting the clock and
    launching (a class sharing the server's cores) adds nothing to the figure: a one-thread kernel timed
    with the host asleep 30 ms reads microseconds, not 30 ms, and the hold did not run out."""
    _, kc = start_kernel(env=TESTING)
    for _ in range(3):
        reply, msgs = execute(kc, "%selftest --stall-host 30", timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        doc = result_doc(msgs)
        assert doc["stall_ms"] == 30 and doc["holds_lapsed"] == 0, doc
        assert 0 < doc["timed_ms"] < 3, doc
    print(f"\n[timing] one-thread kernel timed with the host stalled 30 ms: {doc['timed_ms']:.4f} ms")


def test_a_long_gpu_run_says_which_rep_it_is_on(gpu_doc, start_kernel):
    """The CUDA backend counts its timed reps for the progress line (cl_backend.set_rep_hook): a run of
    several seconds on the GPU says `rep k of n` and the time left while it runs, and ends saying how
    long it ran (a display emptied would be saved in the notebook as an empty output)."""
    km, kc = start_kernel()
    # naive at 4096³ takes about 25 ms a rep on an H100: 300 reps are several seconds
    reply, msgs, took = timed(kc, "%matmul --size 4096 --variant naive --reps 300 --warmup 1 --no-check")
    assert reply["content"]["status"] == "ok", reply["content"]
    lines = [m for m in msgs if m["msg_type"] in ("display_data", "update_display_data")
             and m["content"].get("transient", {}).get("display_id", "").startswith("cudalab-run-")]
    said = [m["content"]["data"]["text/plain"].strip() for m in lines if m["content"]["data"]]
    assert any(" of 300; " in t and " left " in t for t in said), said
    assert "%matmul ran for" in lines[-1]["content"]["data"]["text/plain"], lines[-1]     # its last state
    print(f"\n[progress] {took:.1f} s run; the line said: {said}")
