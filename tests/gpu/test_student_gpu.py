"""Students' own kernels (%%kernel) on a GPU, through a real kernel session: a correct tiled
kernel checks, times within a few percent of the built-in `tiled` and sweeps beside it; each
kind of wrong kernel is rejected with the error a student can act on (the first wrong element,
the line a sanitizer names, the launch limit, the fault and what it usually means); printf
reaches the cell's stdout; and after every fault the next cell works with the kernels kept.

The buggy kernels here run with --no-cpu-check: what is tested is what the GPU, its fault handling and
compute-sanitizer report by themselves. By default the CPU runner's run of the same kernel (bug parity)
names these bugs first, as a KernelError: tests/gpu/test_bug_parity_gpu.py tests that.

Skipped without a GPU (the gpu_doc fixture), failing loudly under CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import execute, streams
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

RESULT = "application/vnd.cudalab.result+json"
SIG = "(const float *A, const float *B, float *C, int M, int N, int K)"

TILED = """%%kernel --for matmul --name mytiled
#ifndef TILE
#define TILE 16
#endif
__global__ void mytiled""" + SIG + """ {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {
        As[threadIdx.y][threadIdx.x] = row < M && p * TILE + threadIdx.x < K ? A[row * K + p * TILE + threadIdx.x] : 0;
        Bs[threadIdx.y][threadIdx.x] = col < N && p * TILE + threadIdx.y < K ? B[(p * TILE + threadIdx.y) * N + col] : 0;
        __syncthreads();
        for (int i = 0; i < TILE; i++) sum += As[threadIdx.y][i] * Bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = sum;
}
"""

# the same kernel without its second barrier: passes the check by luck, racecheck finds it
NO_SYNC = TILED.replace("--name mytiled", "--name mytiled --no-cpu-check").replace("mytiled", "nosync").replace(
    "Bs[i][threadIdx.x];\n        __syncthreads();", "Bs[i][threadIdx.x];")

NAIVE_NO_BOUNDS = """%%kernel --for matmul --name nobounds --no-cpu-check
__global__ void nobounds""" + SIG + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0;
    for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
    C[row * N + col] = s;
}
"""

FP16 = """%%kernel --for matmul --name halfacc
#include <cuda_fp16.h>
__global__ void halfacc""" + SIG + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    __half s = __float2half(0.0f);
    for (int p = 0; p < K; p++) s = __hadd(s, __float2half(A[row * K + p] * B[p * N + col]));
    C[row * N + col] = __half2float(s);
}
"""

SKIPS_K = """%%kernel --for matmul --name skipsk
__global__ void skipsk""" + SIG + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float s = 0;
    for (int p = 0; p < K - 1; p++) s += A[row * K + p] * B[p * N + col];
    C[row * N + col] = s;
}
"""

# computes C on its first launch only (the harness's warm-up, on other inputs) and never again:
# the sentinel written before every timed rep catches it
ONCE = """%%kernel --for matmul --name once
__device__ int done;
__global__ void once""" + SIG + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N || done > 0) return;
    float s = 0;
    for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
    C[row * N + col] = s;
    __syncthreads();
    if (row == 0 && col == 0) atomicAdd(&done, 1);
}
"""


def faulting(name: str, body: str) -> str:
    return f"%%kernel --for matmul --name {name} --no-cpu-check\n__global__ void {name}{SIG} {{\n{body}\n}}\n"


def doc_of(msgs: list[dict], magic: str) -> dict:
    docs = [m["content"]["data"][RESULT] for m in msgs
            if m["msg_type"] in ("execute_result", "display_data", "update_display_data")
            and RESULT in m["content"].get("data", {})]
    return [d for d in docs if d.get("magic") == magic][-1]


def run(kc, code: str, timeout: float = 180):
    reply, msgs = execute(kc, code, timeout=timeout)
    return reply["content"], msgs


def ok(kc, code: str) -> list[dict]:
    c, msgs = run(kc, code)
    assert c["status"] == "ok", (c.get("ename"), c.get("evalue"), c.get("traceback"))
    assert streams(msgs, "stderr") == []
    return msgs


def error(kc, code: str, enames: tuple[str, ...]) -> dict:
    c, _ = run(kc, code)
    assert c["status"] == "error" and c["ename"] in enames, (c.get("ename"), c.get("evalue"))
    return c


@pytest.fixture
def session(gpu_doc, start_kernel, tmp_path):
    pair = start_kernel(env={"CUDALAB_CACHE_DIR": str(tmp_path / "cache"), "CUDALAB_KERNEL_TIMEOUT": "2"})
    return pair.kc


def test_a_correct_kernel_checks_times_and_sweeps_beside_the_builtin(session):
    kc = session
    msgs = ok(kc, TILED)
    doc = doc_of(msgs, "kernel")
    assert doc["check"]["passed"] is True and doc["modelled"] is False
    assert doc["resources"]["registers"] > 0 and doc["resources"]["static_smem"] == 2 * 16 * 16 * 4
    assert doc["check"]["tools"]["racecheck"]["status"] in ("passed", "unavailable")
    doc = doc_of(ok(kc, "%matmul --m 129 --n 65 --k 257 --variant tiled,mytiled --tile 8,16,32 --reps 3"), "matmul")
    mine = [r for r in doc["runs"] if r["variant"] == "mytiled"]
    assert [r["tile"] for r in mine] == [8, 16, 32]
    assert all(r["check"]["passed"] and r["source"] == "student" and len(r["source_hash"]) == 64 for r in mine)
    assert [r["launch"]["block"][:2] for r in mine] == [[8, 8], [16, 16], [32, 32]]
    # --block sweeps a student's kernel only (one that uses blockDim); the built-in runs once
    ok(kc, NAIVE_NO_BOUNDS.replace("nobounds", "mynaive").replace("    C[row * N + col] = s;",
                                                                   "    if (row < M && col < N) C[row * N + col] = s;")
                          .replace("    for (int p", "    if (row < M && col < N) for (int p"))
    doc = doc_of(ok(kc, "%matmul --size 100 --variant naive,mynaive --block 8x8,16x16,32x4 --reps 2"), "matmul")
    assert [r["variant"] for r in doc["runs"]].count("naive") == 1
    assert [r["launch"]["block"][:2] for r in doc["runs"] if r["variant"] == "mynaive"] == [[8, 8], [16, 16], [32, 4]]


def test_wrong_results_are_named(session):
    kc = session
    ok(kc, TILED)
    for cell, want in ((SKIPS_K, "C[0][0] = "), (FP16, "expected")):
        c = error(kc, cell, ("CheckError",))
        assert want in c["evalue"], c["evalue"]
    c = error(kc, NAIVE_NO_BOUNDS, ("CheckError", "CudaError"))
    assert "wrote outside C" in c["evalue"] or "C[" in c["evalue"], c["evalue"]
    c = error(kc, ONCE, ("CheckError",))
    assert "never written" in c["evalue"] or "nan" in c["evalue"].lower(), c["evalue"]
    ok(kc, "%matmul --size 64 --variant mytiled --reps 1")


def test_a_missing_barrier_is_found_by_racecheck(session):
    if not shutil.which("compute-sanitizer") and not os.path.exists("/usr/local/cuda/bin/compute-sanitizer"):
        pytest.skip("compute-sanitizer is not installed here")
    error(session, NAIVE_NO_BOUNDS, ("CheckError", "CudaError"))
    c, msgs = run(session, NO_SYNC)
    doc = doc_of(msgs, "kernel")
    race = doc["check"]["tools"]["racecheck"]
    assert race["status"] == "failed", race
    text = "\n".join(race["findings"])
    # the reads of the inner loop race with the next phase's writes of the tiles
    assert "at line 13" in text and ("at line 10" in text or "at line 11" in text), text
    assert c["status"] == "error" and c["ename"] == "CheckError"
    c, msgs = run(session, "%matmul --variant nobounds,nosync --sanitize")
    assert c["status"] == "error" and c["ename"] == "SanitizerError", c
    sani = doc_of(msgs, "matmul")["sanitize"]
    status = {(k, r["tool"]): r["status"] for k, rs in sani.items() for r in rs}
    assert status[("nobounds", "memcheck")] == "failed" and status[("nosync", "racecheck")] == "failed", status


@pytest.mark.parametrize("name,body,enames,says", [
    ("boom", "    C[(long long)blockIdx.x * 100000000000LL] = 1;", ("CudaError",), "illegal memory access"),
    ("trapk", "    if (threadIdx.x == 3) __trap();", ("CudaError",), "launch"),
    ("assk", "    assert(blockIdx.y * blockDim.y + threadIdx.y < M);", ("CudaError",), "assert"),
    ("mis", "    *(float4 *)((char *)C + 4) = make_float4(1, 2, 3, 4);", ("CudaError",), "misaligned"),
    ("spin", "    while (A[0] < 10) { }", ("TimeoutError",), "launch limit"),
])
def test_faults_are_lessons_and_the_next_cell_works(session, name, body, enames, says):
    kc = session
    ok(kc, TILED)
    c = error(kc, faulting(name, body), enames)
    assert name in c["evalue"] and says in c["evalue"].lower() + " ".join(c["traceback"]).lower(), c
    # a fresh worker, the kernels kept
    doc = doc_of(ok(kc, "%matmul --m 67 --n 33 --k 129 --variant mytiled --reps 1"), "matmul")
    assert doc["runs"][0]["check"]["passed"] is True


def test_launch_limits_are_explained(session):
    kc = session
    ok(kc, TILED)
    c = error(kc, "%matmul --size 64 --variant mytiled --block 64x32 --no-cpu-check", ("CudaError",))
    assert "2048 threads" in c["evalue"] and "1024" in c["evalue"], c["evalue"]
    c = error(kc, "%matmul --size 64 --variant mytiled --smem 1000000 --no-cpu-check", ("CudaError",))
    assert "shared memory" in c["evalue"], c["evalue"]


def test_printf_reaches_stdout(session):
    cell = faulting("hello", "    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (r == 0 && c == 0) printf(\"hello from thread %d\\n\", c);\n"
                             "    if (r < M && c < N) { float s = 0; for (int p = 0; p < K; p++) s += A[r*K+p] * B[p*N+c];"
                             " C[r*N+c] = s; }")
    msgs = ok(session, cell)
    assert "hello from thread 0" in "".join(streams(msgs, "stdout"))


def test_a_failed_recompile_removes_the_old_version(session):
    kc = session
    ok(kc, TILED)
    error(kc, TILED.replace("float sum = 0;", "float sum = undefined_thing;"), ("CompileError",))
    c = error(kc, "%matmul --size 64 --variant mytiled", ("UsageError",))
    assert "mytiled" in c["evalue"]


def test_a_rerun_compiles_nothing(session):
    kc = session
    ok(kc, TILED)
    doc = doc_of(ok(kc, TILED), "kernel")
    assert doc["compile"]["cached"] is True


@pytest.mark.parametrize("family,variant", [
    ("matmul", "naive"), ("matmul", "tiled"), ("vecadd", "add"), ("reduce", "divergent"),
    ("reduce", "convergent"), ("histo", "sectioned"), ("histo", "interleaved"), ("histo", "privatized"),
    ("stencil", "naive"), ("stencil", "tiled"), ("coalesce", "stride"),
])
def test_as_kernel_cells_compile_and_pass(session, family, variant):
    """--as-kernel's cell of a lecture variant, run as it is: it compiles and passes its quick check."""
    c, msgs = run(session, f"%{family} --show-source {variant} --as-kernel")
    assert c["status"] == "ok", c
    payload = [p for p in c.get("payload", []) if p.get("source") == "set_next_input"]
    assert payload, c
    doc = doc_of(ok(session, payload[0]["text"]), "kernel")
    assert doc["check"]["passed"] is True, doc["check"]
