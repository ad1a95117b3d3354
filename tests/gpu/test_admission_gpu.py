"""On a GPU: admission bounds the CUDA contexts (a kernel without a slot has no context on the GPU, as
nvidia-smi sees it), commands that need no GPU answer without one, and a worker that takes the GPU
back pays a start-up that the result reports. The simulated-GPU tests (tests/protocol/test_admission.py)
cover the queue; this checks what only a real driver can tell."""
from __future__ import annotations

import shutil
import subprocess
import time

from conftest import execute, kernel_children, wait_lines
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

RESULT = "application/vnd.cudalab.result+json"
CELL = "%matmul --size 256 --variant tiled --reps 3"


def env(tmp_path, idle_s: float) -> dict[str, str]:
    return {"CUDALAB_GPU_CONTEXTS": "1", "CUDALAB_ADMISSION_DIR": str(tmp_path / "admission"),
            "CUDALAB_GPU_IDLE_S": str(idle_s), "CUDALAB_GPU_WAIT": "60"}


def doc_of(msgs: list[dict]) -> dict:
    return next(m["content"]["data"][RESULT] for m in msgs if RESULT in m.get("content", {}).get("data", {}))


def gpu_pids() -> set[int]:
    """The processes with a CUDA context on any GPU, as the driver reports them."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                         text=True, timeout=30).stdout
    return {int(x) for x in out.split() if x.strip().isdigit()}


def worker_pids(k) -> set[int]:
    return {p.pid for p in kernel_children(k.pid)}


def test_a_kernel_without_a_slot_has_no_context_and_still_answers(gpu_doc, start_kernel, tmp_path):
    assert shutil.which("nvidia-smi"), "nvidia-smi is needed to see the contexts"
    a = start_kernel(env=env(tmp_path, idle_s=2))
    reply, msgs = execute(a.kc, CELL, timeout=120)
    assert reply["content"]["status"] == "ok" and doc_of(msgs)["backend"] == "cuda"
    b = start_kernel(env=env(tmp_path, idle_s=600))
    for cell in ("%device", "%grid --data 76x62 --block 16x16", "%occupancy --threads 256 --regs 32"):
        reply, msgs = execute(b.kc, cell, timeout=60)
        assert reply["content"]["status"] == "ok" and wait_lines(msgs) == [], (cell, reply["content"])
    doc = doc_of(execute(b.kc, "%device", timeout=60)[1])
    assert doc["backend"] == "cuda" and doc["sharing"][0]["held"] == 1 and not doc["sharing"][0]["this_kernel"]
    on_gpu = gpu_pids()
    assert worker_pids(a) & on_gpu, (worker_pids(a), on_gpu)
    assert not worker_pids(b) & on_gpu, "a kernel without a slot made a CUDA context"
    # b's command waits for a's idle release, then pays the worker's start on the GPU, reported apart
    t0 = time.monotonic()
    reply, msgs = execute(b.kc, CELL, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    said, doc = wait_lines(msgs), doc_of(msgs)
    assert said and said[-1].startswith("waited "), said
    assert doc["backend"] == "cuda" and doc["timing"]["startup_ms"] > 0, doc["timing"]
    print(f"\n[timing] b waited {time.monotonic() - t0:.2f} s in all; start-up on the GPU "
          f"{doc['timing']['startup_ms']:.0f} ms; {said[-1]}")
    assert worker_pids(b) & gpu_pids()


def test_a_command_that_does_not_fit_now_waits_for_memory(gpu_doc, start_kernel, tmp_path):
    """Device memory is reserved before a command allocates (CUDALAB_GPU_MEMORY_GIB caps what the
    commands hold at once): one that fits beside the others later waits, one that never fits is refused."""
    cap = {**env(tmp_path, idle_s=600), "CUDALAB_GPU_CONTEXTS": "2", "CUDALAB_GPU_MEMORY_GIB": "1.5"}
    a = start_kernel(env=cap)
    b = start_kernel(env=cap)
    for k in (a, b):
        assert execute(k.kc, CELL, timeout=120)[0]["content"]["status"] == "ok"      # each holds a slot
    # A, B and C of 8192² floats: 0.75 GiB and the L2 flush buffer each; two do not fit in 1.5 GiB
    long_id = a.kc.execute("%matmul --size 8192 --variant naive --reps 20 --no-check")
    time.sleep(1.0)
    reply, msgs = execute(b.kc, "%matmul --size 8192 --variant tiled --reps 1 --no-check", timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    said = wait_lines(msgs)
    assert said and said[0].startswith("waiting for GPU memory: 1 command ahead holding or waiting for it"), said
    assert said[-1].startswith("waited ") and "GPU memory" in said[-1], said
    assert a.kc.get_shell_msg(timeout=120)["parent_header"]["msg_id"] == long_id
    reply, msgs = execute(b.kc, "%matmul --size 16384 --variant naive --reps 1", timeout=60)
    c = reply["content"]
    assert c["ename"] == "MemoryError" and "this device has 1.5 GiB for one command" in c["evalue"], c
