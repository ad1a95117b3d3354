"""On a GPU: a student's %reduce kernel (one partial per block, added on the host) runs through the
same input, timing and check as the built-in variants and appears with "source": "student"; the
known-wrong kernels are rejected with a CheckError naming the first wrong partial: one that skips
half of its section, one that accumulates in half precision, and one without its __syncthreads()
(at a block of 1024, where 32 warps race: it could pass by luck at small blocks; a pass here would
be luck too, so the test says which it saw). The next cell works after each."""
from __future__ import annotations

import pytest

from kernels import reduce_convergent, reduce_grid_stride
from student_session import cell, gpu_doc, kc, kernel_cell  # noqa: F401  (gpu_doc, kc: fixtures)

CONVERGENT = reduce_convergent("conv", 1024)
NO_SYNC = reduce_convergent("nosync", 1024, sync="")
DIVERGENT = """__global__ void div(const float *input, float *partial, int n) {
    __shared__ float s[2048];
    unsigned t = threadIdx.x, base = blockIdx.x * 2 * blockDim.x;
    s[2 * t] = base + 2 * t < n ? input[base + 2 * t] : 0.0f;
    s[2 * t + 1] = base + 2 * t + 1 < n ? input[base + 2 * t + 1] : 0.0f;
    for (unsigned stride = 1; stride <= blockDim.x; stride *= 2) {
        __syncthreads();
        if (t % stride == 0) s[2 * t] += s[2 * t + stride];
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""
ONE_EACH = """__global__ void oneeach(const float *input, float *partial, int n) {
    __shared__ float s[1024];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    s[t] = i < n ? input[i] : 0.0f;
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride) s[t] += s[t + stride];
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""
HALF = """#include <cuda_fp16.h>
__global__ void halfsum(const float *input, float *partial, int n) {
    __shared__ __half s[1024];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    __half x = __float2half(i < n ? input[i] : 0.0f);
    if (i + blockDim.x < n) x = __hadd(x, __float2half(input[i + blockDim.x]));
    s[t] = x;
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride) s[t] = __hadd(s[t], s[t + stride]);
    }
    if (t == 0) partial[blockIdx.x] = __half2float(s[0]);
}
"""


@pytest.mark.parametrize("name, body", [("conv", CONVERGENT), ("div", DIVERGENT)])
def test_correct_kernels_pass_beside_builtins(kc, name, body):
    c, text, doc = cell(kc, kernel_cell("reduce", name, body))
    assert c["status"] == "ok", c
    assert doc["check"]["passed"] is True, doc["check"]
    c, _, doc = cell(kc, f"%reduce --size 1000003 --variant convergent,{name} --block 128,256,1024 "
                         "--reps 3 --warmup 1")
    assert c["status"] == "ok", c
    mine = [r for r in doc["runs"] if r["variant"] == name]
    assert [r["block"] for r in mine] == [128, 256, 1024]
    for r in mine:
        b = r["block"]
        assert r["source"] == "student" and r["check"]["passed"] is True
        assert r["check"]["partials"] == (1000003 + 2 * b - 1) // (2 * b) == r["launch"]["grid"][0]
        assert r["check"]["out_of_bounds"] is None and r["gbs"] > 0 and r["launch_final"] is None
    assert len([r for r in doc["runs"] if r["variant"] == "convergent"]) == 3


def test_refused_for_other_ops(kc):
    assert cell(kc, kernel_cell("reduce", "conv", CONVERGENT))[0]["status"] == "ok"
    for extra, needle in (("--op sum,max", "--op max"), ("--dtype int", "--dtype int")):
        c, _, _ = cell(kc, f"%reduce --size 1000 --variant conv {extra}")
        assert c["status"] == "error" and c["ename"] == "UsageError", c
        assert needle in c["evalue"] and "float sum only" in c["evalue"]


def wrong(kc, name: str, body: str, line: str = "") -> str:
    """The evalue of the kernel's CheckError, after checking that the next cell works."""
    c, _, doc = cell(kc, kernel_cell("reduce", name, body, line))
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    c2, _, doc2 = cell(kc, "%reduce --size 100003 --variant convergent --reps 1 --warmup 0")
    assert c2["status"] == "ok" and doc2["runs"][0]["check"]["passed"] is True, c2
    return c["evalue"]


def test_skipping_half_the_input_names_the_first_partial(kc):
    assert "partial[0] = " in wrong(kc, "oneeach", ONE_EACH)


def test_half_precision_accumulation_fails(kc):
    assert "partial[" in wrong(kc, "halfsum", HALF)


def test_missing_syncthreads_at_1024(kc):
    # the GPU's partials may come out right by luck; the CPU runner's run of the kernel (bug parity)
    # finds the race every time
    c, _, doc = cell(kc, kernel_cell("reduce", "nosync", NO_SYNC, "--block 1024"))
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert "data race on shared memory" in c["evalue"], c


def test_second_pass_on_the_device(kc):
    """%reduce --second: one grid-stride kernel as both passes is checked right, its second launch one
    block; the lecture's one-section tree as the second pass misses partials past its 2B; a second pass
    writing past its result is named by the guard."""
    assert cell(kc, kernel_cell("reduce", "both", reduce_grid_stride("both")))[0]["status"] == "ok"
    c, _, doc = cell(kc, "%reduce --size 1000003 --block 64 --variant both --second both --reps 3 --warmup 1")
    assert c["status"] == "ok", c
    r = doc["runs"][0]
    assert r["check"]["passed"] is True and r["check"]["partials"] == 7813 and r["second"] == "both", r
    assert r["launch_final"]["grid"] == [1, 1, 1] and r["launch_final"]["block"] == [256, 1, 1], r
    assert cell(kc, kernel_cell("reduce", "conv", CONVERGENT))[0]["status"] == "ok"
    c, _, doc = cell(kc, "%reduce --size 1000003 --block 64 --variant both --second conv --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert "your second pass conv over the 7813 partials" in doc["runs"][0]["check"]["first_wrong"], doc["runs"][0]
    past = ("__global__ void past(const float *input, float *partial, int n) {\n"
            "    if (threadIdx.x < 2) partial[threadIdx.x] = 1.0f;\n}\n")
    assert cell(kc, kernel_cell("reduce", "past", past, "--no-check"))[0]["status"] == "ok"
    c, _, doc = cell(kc, "%reduce --size 1000003 --variant both --second past --reps 1 --warmup 0")
    assert c["status"] == "error", c
    assert "your second pass past wrote partial[1]" in doc["runs"][0]["check"]["first_wrong"], doc["runs"][0]
