"""%%kernel --for matmul --bt: a student's kernel that receives B stored transposed (Bᵀ, N×K row-major),
as naive-bt and tiled-bt do, for the lecture's corner turning (notebook 03's exercise). Run through the
same harness as the built-in -bt variants, on the CPU runner here: a corner-turned kernel passes beside
tiled-bt at sizes that fit no tile; the flag really changes what the kernel is given (a kernel reading
B row-major fails under --bt, a Bᵀ kernel fails without it, so neither layout passes by accident);
the runner names the buffer Bt; families without a transposed input refuse the flag; %help kernel
gives the signature. Needs NVRTC (the gate) and g++ (the runner), else skips."""
from __future__ import annotations

import pytest

from conftest import cell, compiled, runner_error

CPU = {"CUDALAB_BACKEND": "cpu"}
SIZES = "--m 67 --n 33 --k 129"


@pytest.fixture
def kernel(start_kernel):
    return start_kernel(env=CPU)


def corner(name: str, flags: str = "--bt", bt_guard: str = "bt_row < N && ") -> str:
    """The tiled kernel with B's tile loaded by corner turning from Bt (tiled-bt's), as a %%kernel cell."""
    return f"""%%kernel --for matmul {flags} --name {name}
#ifndef TILE
#define TILE 16
#endif
__global__ void {name}(const float *A, const float *Bt, float *C, int M, int N, int K)
{{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int bt_row = blockIdx.x * TILE + ty;       // the row of Bt (column of B) this thread loads
    float sum = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {{
        int kk = p * TILE + tx;
        As[ty][tx] = row < M && kk < K ? A[row * K + kk] : 0.0f;
        Bs[tx][ty] = {bt_guard}kk < K ? Bt[bt_row * K + kk] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }}
    if (row < M && col < N)
        C[row * N + col] = sum;
}}
"""


ROW_MAJOR_B = """%%kernel --for matmul --bt --name rowmajor
__global__ void rowmajor(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; row < M && col < N && k < K; k++)
        sum += A[row * K + k] * Bt[k * N + col];   // B read as if it were not transposed
    if (row < M && col < N)
        C[row * N + col] = sum;
}
"""


def test_corner_turned_kernel_passes_beside_tiled_bt(kernel):
    _, kc = kernel
    c, text, doc = compiled(kc, corner("mycorner"))
    assert c["status"] == "ok", text
    assert doc["bt"] is True and doc["check"]["passed"] is True
    c, text, doc = cell(kc, f"%matmul {SIZES} --variant tiled-bt,mycorner --tile 8,16 --reps 1 --warmup 0")
    assert c["status"] == "ok", text
    runs = [r for r in doc["runs"] if r["variant"] == "mycorner"]
    assert [r["tile"] for r in runs] == [8, 16] and all(r["check"]["passed"] for r in runs)
    assert all(r["check"]["passed"] for r in doc["runs"])


def test_the_flag_changes_what_the_kernel_is_given(kernel):
    _, kc = kernel
    ename, evalue, _ = runner_error(kc, ROW_MAJOR_B)
    assert ename == "CheckError" and "C[" in evalue, evalue
    ename, evalue, _ = runner_error(kc, corner("nobt", flags=""))
    assert ename == "CheckError" and "C[" in evalue, evalue
    # the same name redefined with --bt takes Bᵀ again
    c, text, doc = compiled(kc, corner("nobt"))
    assert c["status"] == "ok" and doc["bt"] is True, text
    c, text, doc = compiled(kc, corner("nobt", flags="--no-check"))
    assert c["status"] == "ok" and doc["bt"] is False, text


def test_runner_names_bt_in_an_out_of_bounds_read(kernel):
    _, kc = kernel
    ename, evalue, tb = runner_error(kc, corner("unguarded", bt_guard=""))
    assert ename == "KernelError", evalue
    assert "Bt[" in evalue + tb, evalue + tb


def test_bt_is_matmuls_alone_and_documented(kernel):
    _, kc = kernel
    c, _, _ = cell(kc, "%%kernel --for histo --bt --name h\n"
                       "__global__ void h(const unsigned char *data, long long n, unsigned int *histo) {}\n")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "--bt" in c["evalue"], c
    c, text, _ = cell(kc, "%help kernel")
    assert "%%kernel --for matmul --bt --name NAME" in text
    assert "NAME(const float *A, const float *Bt, float *C, int M, int N, int K)" in text
