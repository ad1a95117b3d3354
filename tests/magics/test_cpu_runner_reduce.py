"""Students' %reduce kernels on the CPU runner (no GPU: the CPU backend), through a real client: the
lecture's convergent and divergent shared-memory reductions and a warp-shuffle one pass their quick
check and run beside ours; each classic bug of a block reduction is explained exactly: the return before
__syncthreads() (a divergent barrier), the missing barrier in the tree loop and the last-warp unroll with
no __syncwarp() (shared races), the slot left unwritten past n (uninitialised shared memory), the stride
that starts past the array (shared out-of-bounds), every thread writing the partial (two writers). The
quick check runs --size 100003 with blocks of 256 (sections of 512): the last block, 195, holds 163
elements, so its threads 163..255 have none. Needs NVRTC and g++: without NVRTC the tests skip."""
from __future__ import annotations

import re

import pytest

from conftest import cell, compiled, edited, host_work_runs_s, runner_error, runner_host_work_s
from kernels import reduce_convergent

CPU = {"CUDALAB_BACKEND": "cpu"}

# the lecture's convergent kernel (stride halving, active threads packed); the %%kernel line is line 1
CONVERGENT = "%%kernel --for reduce --name NAME\n" + reduce_convergent("NAME", 256)
LINE_TREE = 10          # if (t < stride) s[t] += s[t + stride];
LINE_PARTIAL = 12

# the lecture's divergent kernel: stride doubling, if (t % stride == 0)
DIVERGENT = """%%kernel --for reduce --name mydiv
__global__ void mydiv(const float *input, float *partial, int n) {
    __shared__ float s[512];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + 2 * t;
    s[2 * t] = i < n ? input[i] : 0.0f;
    s[2 * t + 1] = i + 1 < n ? input[i + 1] : 0.0f;
    for (unsigned stride = 1; stride <= blockDim.x; stride *= 2) {
        __syncthreads();
        if (t % stride == 0) s[2 * t] += s[2 * t + stride];
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""

SHUFFLE = """%%kernel --for reduce --name myshfl
__global__ void myshfl(const float *input, float *partial, int n) {
    __shared__ float warps[32];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    float x = i < n ? input[i] : 0.0f;
    if (i + blockDim.x < n) x += input[i + blockDim.x];
    for (int off = 16; off > 0; off /= 2)
        x += __shfl_down_sync(0xffffffffu, x, off);
    if (t % 32 == 0) warps[t / 32] = x;
    __syncthreads();
    if (t < 32) {
        x = t < blockDim.x / 32 ? warps[t] : 0.0f;
        for (int off = 16; off > 0; off /= 2)
            x += __shfl_down_sync(0xffffffffu, x, off);
        if (t == 0) partial[blockIdx.x] = x;
    }
}
"""

# the tree down to 64, then the last warp unrolled through volatile shared memory
UNROLLED = "%%kernel --for reduce --name NAME\n" + reduce_convergent("NAME", 256, down_to=32, tail="""\
    __syncthreads();
    if (t < 32) {
        LAST_WARP
    }
    if (t == 0) partial[blockIdx.x] = s[0];
""")
# no __syncwarp(): on Volta and later the lanes of a warp are not in lockstep
RACY_WARP = """volatile float *v = s;
        v[t] += v[t + 32];
        v[t] += v[t + 16];
        v[t] += v[t + 8];
        v[t] += v[t + 4];
        v[t] += v[t + 2];
        v[t] += v[t + 1];"""
LINE_RACY_32 = 15       # v[t] += v[t + 32];
# the same steps with __syncwarp() between each read and each write
SYNCED_WARP = """float v = s[t] + s[t + 32];
        for (int off = 16; off > 0; off /= 2) {
            __syncwarp();
            s[t] = v;
            __syncwarp();
            v += s[t + off];
        }
        if (t == 0) s[0] = v;"""


def convergent(name: str, old: str | None = None, new: str = "") -> str:
    return edited(CONVERGENT.replace("NAME", name), old, new)


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def test_lecture_reductions_pass_beside_ours(kc):
    for code in (convergent("myconv"), DIVERGENT, SHUFFLE, UNROLLED.replace("NAME", "mywarp").replace("LAST_WARP", SYNCED_WARP)):
        c, text, doc = compiled(kc, code)
        assert c["status"] == "ok", text
        assert doc["check"]["passed"] is True and doc["check"]["tools"]["cpu-runner"]["status"] == "passed"
    # an awkward size: 9999 = 19 · 512 + 271, the last block half empty
    c, text, doc = cell(kc, "%reduce --size 9999 --variant convergent,myconv,mydiv,myshfl,mywarp --reps 4")
    assert c["status"] == "ok", text
    runs = {r["variant"]: r for r in doc["runs"]}
    assert all(r["check"]["passed"] is True for r in runs.values()), runs
    mine = runs["myconv"]
    assert mine["source"] == "student" and mine["backend"] == "cpu"
    assert mine["impl"].startswith("your kernel myconv on the CPU runner")
    assert mine["launch"]["grid"][0] == 20 and mine["check"]["partials"] == 20
    assert mine["check"]["out_of_bounds"] is None
    assert mine["time_ms"]["reps"] == 3          # at most 3 launches on the runner, whatever --reps says
    assert "convergent" in runs and runs["convergent"]["backend"] == "cpu" and "source" not in runs["convergent"]


def test_return_before_the_barrier_is_a_divergent_barrier(kc):
    ename, evalue, _ = runner_error(kc, convergent(
        "early", "    float x = i < n ? input[i] : 0.0f;\n", "    if (i >= n) return;\n    float x = input[i];\n"))
    assert ename == "KernelError"
    assert "your kernel early failed on the CPU runner (%reduce --size 100003)" in evalue
    assert ("divergent barrier in block 195: __syncthreads() at line 10 was reached by 163 of the block's 256 "
            "threads: 93 had returned without reaching it") in evalue


def test_missing_barrier_in_the_tree_is_a_shared_race(kc):
    ename, evalue, _ = runner_error(kc, convergent(
        "nosync", "    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {\n        __syncthreads();\n",
        "    __syncthreads();\n    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"))
    assert ename == "KernelError"
    assert "data race on shared memory: thread 1 of block 0 wrote s[1] at line %d while " % LINE_TREE in evalue
    assert "with no __syncthreads() between them: a barrier is missing" in evalue


def test_missing_barrier_names_the_reads(kc):
    _, evalue, _ = runner_error(kc, convergent(
        "nosync", "    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {\n        __syncthreads();\n",
        "    __syncthreads();\n    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {\n"))
    assert "update it atomically" not in evalue
    assert re.search(r"while (other threads|thread \d+ of block 0) had read it at line %d" % LINE_TREE, evalue), evalue


def test_slot_left_unwritten_past_n_is_uninitialised_shared(kc):
    ename, evalue, _ = runner_error(kc, convergent(
        "uninit", "    float x = i < n ? input[i] : 0.0f;\n    if (i + blockDim.x < n) x += input[i + blockDim.x];\n    s[t] = x;\n",
        "    if (i < n) {\n        float x = input[i];\n        if (i + blockDim.x < n) x += input[i + blockDim.x];\n"
        "        s[t] = x;\n    }\n"))
    assert ename == "KernelError"
    # thread 35 adds s[35 + 128]: thread 163, past n, never wrote it
    assert ("uninitialised shared memory: thread 35 of block 195 read s[163] at line 12 before any thread of the "
            "block wrote it") in evalue
    assert "(93 in all)" in evalue


def test_stride_past_the_array_is_shared_out_of_bounds(kc):
    ename, evalue, _ = runner_error(kc, convergent(
        "sharedoob", "stride = blockDim.x / 2; stride > 0", "stride = blockDim.x; stride > 0"))
    assert ename == "KernelError"
    assert ("out-of-bounds shared memory: thread 0 of block 0 read s[256] at line %d, outside __shared__ s[256]"
            % LINE_TREE) in evalue


def test_last_warp_without_syncwarp_is_a_shared_race(kc):
    ename, evalue, _ = runner_error(kc, UNROLLED.replace("NAME", "racywarp").replace("LAST_WARP", RACY_WARP))
    assert ename == "KernelError"
    assert "data race on shared memory: thread 1 of block 0 wrote s[1] at line %d while " % LINE_RACY_32 in evalue
    assert "with no __syncthreads() between them" in evalue


def test_every_thread_writing_the_partial_is_two_writers(kc):
    ename, evalue, tb = runner_error(kc, convergent(
        "allwrite", "    if (t == 0) partial[blockIdx.x] = s[0];", "    partial[blockIdx.x] = s[0];"))
    assert ename == "KernelError"
    # the first finding: the threads past the tree read s[0] while thread 0 still adds into it
    assert "data race on shared memory: thread 0 of block 0 wrote s[0] at line %d" % LINE_TREE in evalue
    assert re.search(r"two writers: thread \d+ of block 0 and thread \d+ of block 0 both wrote partial\[0\] at "
                     r"line %d" % LINE_PARTIAL, tb), tb


def test_a_size_the_quick_check_misses(kc):
    # with blocks of 128 (sections of 256), 100003 leaves no thread past n: the quick check passes ...
    code = convergent("early128", "    float x = i < n ? input[i] : 0.0f;\n",
                      "    if (i >= n) return;\n    float x = input[i];\n").replace(
        "--name early128", "--name early128 --block 128")
    c, text, _ = compiled(kc, code)
    assert c["status"] == "ok", text
    # ... and 9999 = 39 · 256 + 15 does not: block 39 has 15 threads with an element
    c, _, _ = cell(kc, "%reduce --size 9999 --variant early128 --reps 1")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert ("divergent barrier in block 39: __syncthreads() at line 10 was reached by 15 of the block's 128 threads: "
            "113 had returned without reaching it") in c["evalue"]
    c, text, doc = cell(kc, "%reduce --size 9999 --variant convergent --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, text   # the next cell works


def test_host_work_counts_three_launches_at_the_runner_rate(start_kernel):
    _, kc = start_kernel(env={**CPU, "CUDALAB_HOST_WORK_LIMIT": "0.05"})
    assert compiled(kc, convergent("myconv"))[0]["status"] == "ok"      # the quick check is under the limit
    three = runner_host_work_s(kc, "%reduce --size 2^25 --variant myconv")
    c, _, _ = cell(kc, "%reduce --size 2^25 --variant convergent --reps 3 --warmup 0")
    ours = host_work_runs_s(c["evalue"]) if c["status"] == "error" else 0.0
    assert three > 10 * ours, (three, ours)
