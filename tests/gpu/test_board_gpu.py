"""The board's runner on a GPU (issue 35): the sample course's ps2.matmul at its real hidden sizes and seeds,
timed with --reps auto and every timed rep checked (--check-reps all), against the references naive, tiled,
fast and cuBLAS in the same run; an honest tiled kernel is ranked below the FP32 roof with the GPU's name and
clock, and a kernel that keeps its answer in __device__ memory across launches (a result cached from an
earlier call) is failed at a rep. Skipped without a GPU (the gpu_doc fixture), failing loudly under
CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import kernel_binary
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "board"))
from board_runs import REPO, TILED_MATMUL, MemoryStore  # noqa: E402
from cudalab_board.problems import load_problems  # noqa: E402
from cudalab_board.runner import TIMING_FLAGS, Runner  # noqa: E402

COURSE = load_problems(REPO / "notebooks" / "assignments" / "board-problems.json")

# Honest on its first launch at a size; every later launch at that size returns the answer it kept.
MEMO = """__device__ float kept[4096 * 4096];
__device__ int seen_m;
__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    if (seen_m == M) { C[row * N + col] = kept[row * N + col]; return; }
    float acc = 0;
    for (int k = 0; k < K; k++) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = kept[row * N + col] = acc;
    if (row == M - 1 && col == N - 1) seen_m = M;
}
"""


@pytest.fixture
def gpu_board(gpu_doc, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CUDALAB_BACKEND"}
    store = MemoryStore()
    runner = Runner(store, COURSE, kernel_binary(), env=env, cache_dir=tmp_path / "cache")
    yield store, runner
    runner.close()                                  # the warm kernels


@pytest.mark.timeout(900)
def test_ps2_matmul_on_the_gpu_ranks_honest_and_fails_a_cached_answer(gpu_board, monkeypatch):
    store, runner = gpu_board
    monkeypatch.setitem(sys.modules["board_runs"].PROBLEMS, "ps2.matmul", COURSE["ps2.matmul"])
    honest = store.submit("ps2.matmul", TILED_MATMUL, name="tiled")
    memo = store.submit("ps2.matmul", MEMO, name="memo")
    after = store.submit("ps2.matmul", TILED_MATMUL, name="tiled2")
    while runner.run_next():
        pass
    sub = store.subs[honest]
    assert sub["status"] == "ranked", sub
    res = sub["result"]
    assert res["backend"] == "cuda" and res["gpu"] and res["timing"] == TIMING_FLAGS
    assert {r["variant"] for r in res["references"]} == {"naive", "tiled", "fast", "cublas"}
    for row in res["sizes"]:
        assert row["bound"]["unit"] == "GFLOP/s" and row["bound"]["bound_ms"] < row["median_ms"]
    assert res["score"] > 1.0                          # slower than cuBLAS, the fastest reference
    bad = store.subs[memo]
    assert bad["status"] == "failed" and "rep" in bad["finding"], bad
    # the memo ran in the honest one's warm kernel; failed, it retired it: the next one had a fresh kernel
    assert store.subs[after]["status"] == "ranked", store.subs[after]
    assert [store.subs[i]["result"]["kernel_turn"] for i in (honest, memo, after)] == [1, 2, 1]
