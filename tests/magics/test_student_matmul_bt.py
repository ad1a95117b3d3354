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
from test_cpu_runner_matmul import TILED

CPU = {"CUDALAB_BACKEND": "cpu"}
SIZES = "--m 67 --n 33 --k 129"


@pytest.fixture
def kernel(start_kernel):
    return start_kernel(env=CPU)


# the lecture's tiled kernel (the CPU runner's tests'), with B's tile loaded from Bt by corner turning:
# thread (ty, tx) reads element tx of row blockIdx.x·TILE + ty of Bt (consecutive addresses across a
# warp) and stores it transposed, so the multiply-adds read Bs as before
TILED_B_LOAD = ("Bs[threadIdx.y][threadIdx.x] = (col < N && p * TILE + threadIdx.y < K) ? "
                "B[(p * TILE + threadIdx.y) * N + col] : 0.0f;")
CORNER_B_LOAD = ("Bs[threadIdx.x][threadIdx.y] = ({guard}p * TILE + threadIdx.x < K) ? "
                 "Bt[(blockIdx.x * TILE + threadIdx.y) * K + p * TILE + threadIdx.x] : 0.0f;")


def corner(name: str, flags: str = "--bt", bt_guard: str = "blockIdx.x * TILE + threadIdx.y < N && ") -> str:
    """TILED corner-turned, as the %%kernel cell NAME with FLAGS; BT_GUARD bounds the row of Bt read."""
    assert TILED.count(TILED_B_LOAD) == 1 and TILED.count("mytiled") == 2
    return (TILED.replace(TILED_B_LOAD, CORNER_B_LOAD.format(guard=bt_guard))
            .replace("--for matmul --name mytiled", f"--for matmul {flags} --name {name}")
            .replace("mytiled(", f"{name}(").replace("const float *B,", "const float *Bt,"))


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


NAIVE_BT = """%%kernel --for matmul --bt --name naivebt
__global__ void naivebt(const float *A, const float *Bt, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; row < M && col < N && k < K; k++)
        sum += A[row * K + k] * Bt[col * K + k];
    if (row < M && col < N)
        C[row * N + col] = sum;
}
"""


def test_lesson_checks_read_bt(kernel):
    """The lesson checks count Bᵀ as B: the corner-turned kernel loads each element once per tile in
    sectors of consecutive floats; the naive Bᵀ kernel's loads of Bt, K floats apart across a warp, fail
    load_sectors_per_request naming Bt and its line."""
    _, kc = kernel
    _, text, doc = compiled(kc, corner("mycorner"))
    lesson = doc["check"]["lesson"]
    assert all(lesson[k]["passed"] for k in ("global_loads_per_fma", "load_sectors_per_request",
                                             "shared_bytes_used")), lesson
    _, text, doc = compiled(kc, NAIVE_BT)
    lesson = doc["check"]["lesson"]
    assert doc["check"]["passed"] is True, text
    assert lesson["global_loads_per_fma"]["value"] == pytest.approx(2.0) and not lesson["global_loads_per_fma"]["passed"]
    sectors = lesson["load_sectors_per_request"]
    assert not sectors["passed"] and sectors["value"] > 8 and sectors["line"] == 7, sectors   # the %%kernel line is 1
    assert sectors["why"].startswith("line 7 reads Bt "), sectors
