"""Students' %matmul kernels on the CPU runner (no GPU: the CPU backend), through a real client: the
lecture's tiled kernel passes beside ours, and each classic bug is explained, exactly: which thread of
which block, at which cell line, touched which element. The runner's own behaviour (faults, the time
limit, printf, the sandbox's compilers) is tested here too, since %matmul is its first family.
Needs NVRTC (the gate) and g++ (the runner's compiler): without NVRTC the tests skip, saying so."""
from __future__ import annotations

import pytest

from conftest import cell, compiled, runner_error

CPU = {"CUDALAB_BACKEND": "cpu"}


@pytest.fixture
def kernel(start_kernel):
    """On the CPU backend, even where a GPU is: these are the CPU runner's tests."""
    return start_kernel(env=CPU)

TILED = """%%kernel --for matmul --name mytiled
#ifndef TILE
#define TILE 16
#endif
__global__ void mytiled(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {
        As[threadIdx.y][threadIdx.x] = (row < M && p * TILE + threadIdx.x < K) ? A[row * K + p * TILE + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && p * TILE + threadIdx.y < K) ? B[(p * TILE + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}
"""
# the cell's lines, as the messages number them (the %%kernel line is line 1)
LINE_LOAD_A, LINE_READ, LINE_WRITE_C = 12, 16, 19

NAIVE = """%%kernel --for matmul --name mynaive
__global__ void mynaive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0;
    for (int k = 0; row < M && col < N && k < K; k++)
        acc += A[row * K + k] * B[k * N + col];
    BODY
}
"""


def naive(body: str) -> str:
    """The naive kernel with body in place of its last statement (line 8)."""
    return NAIVE.replace("BODY", body)


def test_tiled_passes_beside_ours(kernel):
    _, kc = kernel
    c, text, doc = compiled(kc, TILED)
    assert c["status"] == "ok", text
    assert doc["check"]["passed"] is True
    c, text, doc = cell(kc, "%matmul --m 67 --n 33 --k 129 --variant naive,mytiled --reps 5")
    assert c["status"] == "ok", text
    runs = {r["variant"]: r for r in doc["runs"]}
    mine = runs["mytiled"]
    assert mine["source"] == "student" and mine["backend"] == "cpu"
    assert mine["check"]["passed"] is True
    assert "CPU runner" in mine["launch"]["config"] and "CPU times" in mine["launch"]["config"]
    assert mine["impl"] == "your kernel mytiled on the CPU runner"
    assert mine["time_ms"]["reps"] == 3          # at most 3 launches on the runner, whatever --reps says
    assert runs["naive"]["check"]["passed"] is True
    assert "stderr" not in text


def test_tile_sweep_recompiles_with_each_tile(kernel):
    _, kc = kernel
    assert compiled(kc, TILED)[0]["status"] == "ok"
    c, text, doc = cell(kc, "%matmul --m 40 --n 70 --k 33 --variant mytiled --tile 8,16,32 --reps 1")
    assert c["status"] == "ok", text
    assert [r["tile"] for r in doc["runs"]] == [8, 16, 32]
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert [r["launch"]["block"][:2] for r in doc["runs"]] == [[8, 8], [16, 16], [32, 32]]


def test_missing_second_barrier_is_a_shared_race(kernel):
    _, kc = kernel
    ename, evalue, tb = runner_error(kc, TILED.replace("        __syncthreads();\n    }", "    }"))
    assert ename == "KernelError"
    assert ("data race on shared memory: thread (1,0) of block (0,0) read As[0][0] at line %d while thread "
            "(0,0) of block (0,0) had written it at line %d, with no __syncthreads() between them"
            % (LINE_READ, LINE_LOAD_A)) in evalue


def test_missing_bound_check_is_out_of_bounds_and_two_writers(kernel):
    _, kc = kernel
    ename, evalue, tb = runner_error(kc, TILED.replace("    if (row < M && col < N)\n", ""))
    assert ename == "KernelError"
    assert ("out-of-bounds access: thread (0,3) of block (0,4) wrote C[67][0] at line %d, past the end of C "
            "(67×33)" % LINE_WRITE_C) in evalue
    found = tb
    assert ("two writers: thread (0,1) of block (0,0) and thread (1,0) of block (2,0) both wrote C[1][0] at "
            "line %d" % LINE_WRITE_C) in found
    assert "a thread past the last column writes into the next row" in found


def test_tile_left_unwritten_is_uninitialised_shared(kernel):
    _, kc = kernel
    bug = TILED.replace(
        "        As[threadIdx.y][threadIdx.x] = (row < M && p * TILE + threadIdx.x < K) ? A[row * K + p * TILE + threadIdx.x] : 0.0f;",
        "        if (row < M && p * TILE + threadIdx.x < K) As[threadIdx.y][threadIdx.x] = A[row * K + p * TILE + threadIdx.x];")
    ename, evalue, tb = runner_error(kc, bug)
    assert ename == "KernelError"
    assert "uninitialised shared memory: thread" in evalue
    assert "read As[" in evalue and "at line %d before any thread of the block wrote it" % LINE_READ in evalue


def test_divergent_barrier(kernel):
    _, kc = kernel
    ename, evalue, _ = runner_error(kc, naive("if (threadIdx.x < 8) __syncthreads();\n    if (row < M && col < N) C[row * N + col] = acc;"))
    assert ename == "KernelError"
    assert ("divergent barrier in block (0,0): __syncthreads() at line 8 was reached by 128 of the block's 256 "
            "threads: 128 had returned without reaching it") in evalue


def test_null_pointer_and_write_to_input(kernel):
    _, kc = kernel
    ename, evalue, _ = runner_error(kc, naive("float *p = 0; if (row < M && col < N) p[row] = acc;"))
    assert ename == "KernelError"
    assert "invalid address: thread (0,0) of block (0,0) wrote address 0 at line 8" in evalue
    assert "(a null pointer)" in evalue
    ename, evalue, _ = runner_error(kc, naive("if (row < M && col < N) { C[row * N + col] = acc; ((float *)A)[row] = 0; }"))
    assert "write to an input: thread (0,0) of block (0,0) wrote A[0][0] at line 8, but A is an input" in evalue


def test_assert_and_trap_name_thread_and_line(kernel):
    _, kc = kernel
    ename, evalue, _ = runner_error(kc, naive("assert(row < 50);\n    if (row < M && col < N) C[row * N + col] = acc;"))
    assert ename == "KernelError"
    assert "assertion `row < 50` failed in thread (0,2) of block (0,3) at line 8" in evalue
    ename, evalue, _ = runner_error(kc, naive("if (col == 5) __trap();\n    if (row < M && col < N) C[row * N + col] = acc;"))
    assert "thread (5,0) of block (0,0) called __trap() at line 8" in evalue


def test_endless_loop_is_stopped_at_the_limit(start_kernel):
    _, kc = start_kernel(env={**CPU, "CUDALAB_KERNEL_TIMEOUT": "1"})
    c, _, _ = compiled(kc, naive("while (acc == acc) acc += 1.0f;\n    if (row < M && col < N) C[row * N + col] = acc;"))
    assert c["status"] == "error"
    assert c["ename"] == "TimeoutError"
    assert "launch limit: the kernel ran past 1000 ms on the CPU runner; thread" in c["evalue"]
    assert "at line 8" in c["evalue"]
    c, text, _ = cell(kc, "%matmul --size 32 --variant naive --reps 1")
    assert c["status"] == "ok", text       # the next cell works


def test_device_printf_reaches_stdout(kernel):
    _, kc = kernel
    from conftest import execute, streams
    code = naive('if (row == 0 && col == 0) printf("hello from %d\\n", 42);\n    if (row < M && col < N) C[row * N + col] = acc;')
    reply, msgs = execute(kc, code, timeout=120)
    if reply["content"]["status"] == "error" and "NVRTC" in reply["content"].get("evalue", ""):
        pytest.skip("no NVRTC here")
    assert reply["content"]["status"] == "ok"
    assert "hello from 42" in "".join(streams(msgs, "stdout"))
    assert streams(msgs, "stderr") == []


def test_shared_in_a_macro_is_a_cpu_compile_error(kernel):
    _, kc = kernel
    code = TILED.replace("    __shared__ float As[TILE][TILE];", "#define DECL(n) __shared__ float n[TILE][TILE]\n    DECL(As);")
    c, text, _ = compiled(kc, code)
    assert c["status"] == "error" and c["ename"] == "CompileError"
    assert "compiles with NVRTC but not for the CPU runner" in c["evalue"]
    assert "line 8: the CPU runner needs each __shared__ declaration written out in the kernel, not made by a " \
           "macro" in c["traceback"]


def test_missing_host_compiler_says_what_to_install(start_kernel):
    _, kc = start_kernel(env={**CPU, "CUDALAB_HOST_CXX": "/nonexistent/g++",
                                 "CUDALAB_CACHE_DIR": "/nonexistent-cache"})
    c, _, _ = compiled(kc, naive("if (row < M && col < N) C[row * N + col] = acc;"))
    assert c["status"] == "error" and c["ename"] == "RuntimeError"
    assert "/nonexistent/g++ was not found (install g++: apt-get install g++" in c["evalue"]


def test_too_big_for_the_runner_is_refused_with_the_estimate(kernel):
    _, kc = kernel
    assert compiled(kc, TILED)[0]["status"] == "ok"
    c, text, _ = cell(kc, "%matmul --size 4096 --variant mytiled")
    assert c["status"] == "error" and c["ename"] == "UsageError"
    assert "--force" in c["evalue"]


def test_backend_flag(kernel):
    _, kc = kernel
    c, text, doc = cell(kc, "%matmul --size 64 --variant naive --reps 1 --backend cpu")
    assert c["status"] == "ok" and doc["runs"][0]["backend"] == "cpu"
    c, _, _ = cell(kc, "%matmul --size 64 --variant naive --reps 1 --backend cuda")
    assert c["status"] == "error" and c["ename"] == "UsageError"
    assert "--backend cuda: no GPU backend in this worker" in c["evalue"]


def test_grid_list_sweeps_the_launch(kernel):
    _, kc = kernel
    assert compiled(kc, naive("if (row < M && col < N) C[row * N + col] = acc;"))[0]["status"] == "ok"
    c, text, doc = cell(kc, "%matmul --m 40 --n 40 --k 8 --variant mynaive --grid 3x3,4x4 --reps 1")
    assert c["status"] == "ok", text
    assert [r["launch"]["grid"] for r in doc["runs"]] == [[3, 3, 1], [4, 4, 1]]
    assert all(r["check"]["passed"] for r in doc["runs"])
