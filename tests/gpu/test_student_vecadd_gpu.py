"""On a GPU: a student's %vecadd kernel runs through the same copies, timing and exact check as the
built-in one, and appears in the table with "source": "student"; a kernel without its bounds check,
at a size that is not a multiple of the block, is rejected (its writes past n hit the guard after C:
a CheckError naming C[n + k], or a fault, a CudaError; first of all the CPU runner's run of it, bug
parity's KernelError) and the next cell works."""
from __future__ import annotations

from kernels import vecadd
from student_session import cell, gpu_doc, kc, kernel_cell  # noqa: F401  (gpu_doc, kc: fixtures)

GOOD = vecadd("myadd")
NO_BOUNDS = vecadd("nobounds", "C[i] = A[i] + B[i];")
HALF = vecadd("halfadd", "if (i < n / 2) C[i] = A[i] + B[i];")


def test_correct_kernel_passes_beside_builtin(kc):
    c, text, doc = cell(kc, kernel_cell("vecadd", "myadd", GOOD))
    assert c["status"] == "ok", c
    assert doc["check"]["passed"] is True and "quick check (%vecadd --size 100003" in text
    c, _, doc = cell(kc, "%vecadd --size 1000003 --variant builtin,myadd --block 128,256 --reps 3 --warmup 1")
    assert c["status"] == "ok", c
    runs = {(r["variant"], r["block"]): r for r in doc["runs"]}
    assert set(runs) == {("builtin", 128), ("builtin", 256), ("myadd", 128), ("myadd", 256)}
    for (v, b), r in runs.items():
        assert r["check"]["passed"] is True and r["check"]["out_of_bounds"] is None
        assert r["launch"]["block"] == [b, 1, 1] and r["launch"]["grid"][0] == (1000003 + b - 1) // b
        assert r["kernel_ms"]["median"] > 0 and r["h2d_ms"]["median"] > 0
        assert ("source" in r) == (v == "myadd")
    assert runs[("myadd", 256)]["source"] == "student" and len(runs[("myadd", 256)]["source_hash"]) == 64
    # a 2D block is a student's choice: the run says so with its dimensions
    # (myadd ignores threadIdx.y: the grid of ⌈n/128⌉ blocks covers a quarter of C, the rest is named;
    # first, the CPU runner's run sees the four threads of a column write one element: a KernelError)
    c, _, doc = cell(kc, "%vecadd --size 100003 --variant myadd --block 32x4 --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    c, _, doc = cell(kc, "%vecadd --size 100003 --variant myadd --block 32x4 --reps 1 --warmup 0 --no-cpu-check")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert doc["runs"][0]["block"] == [32, 4, 1] and doc["runs"][0]["check"]["passed"] is False


def test_student_kernel_refused_for_daxpy(kc):
    assert cell(kc, kernel_cell("vecadd", "myadd", GOOD))[0]["status"] == "ok"
    c, _, _ = cell(kc, "%vecadd --size 1000 --variant builtin,myadd --op add,daxpy")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert "--op daxpy" in c["evalue"] and "--op add only" in c["evalue"]


def test_missing_bounds_check_is_caught(kc):
    # 100003 = 390 · 256 + 163: the last block's 93 extra threads write past the end of C
    c, text, doc = cell(kc, kernel_cell("vecadd", "nobounds", NO_BOUNDS))      # the CPU runner's run (bug parity)
    assert c["status"] == "error" and c["ename"] == "KernelError" and "out-of-bounds access" in c["evalue"], c
    c, text, doc = cell(kc, kernel_cell("vecadd", "nobounds", NO_BOUNDS, "--no-cpu-check"))    # the GPU's guard
    assert c["status"] == "error" and c["ename"] in ("CheckError", "CudaError"), c
    if c["ename"] == "CheckError":
        assert "C[100003] was written, past the end of C" in c["evalue"], c["evalue"]
        assert doc["check"]["first_wrong"].startswith("C[100003]")
    c, _, doc = cell(kc, "%vecadd --size 100003 --variant nobounds --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] in ("CheckError", "CudaError"), c
    # the next cell works
    c, _, doc = cell(kc, "%vecadd --size 100003 --reps 1 --warmup 0")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, c


def test_elements_never_written_are_named(kc):
    c, _, doc = cell(kc, kernel_cell("vecadd", "halfadd", HALF))
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    # C holds the sentinel where the kernel never wrote: the first such element is named
    assert "C[50001] = nan (never written?)" in c["evalue"], c["evalue"]
