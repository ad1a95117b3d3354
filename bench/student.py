#!/usr/bin/env python3
"""bench/student.py — students' kernels (%%kernel): compile times, the cell overhead of running one,
and a student kernel identical to the built-in `tiled` timed against it.

1. NVRTC compile of a 50-line kernel straight to a cubin for this GPU: cold (a source never seen:
   a comment with a counter changes its hash) and cached (the same cell again: our cache of
   cubins), median and max of the document's compile.ms over 10 cells each.
2. A warm `%matmul --size 1024 --variant mytiled --reps 10`: wall time of the execute round trip
   minus the GPU time of its runs (10 timed reps and 3 warm-ups at the median).
3. `tiled` and `mytiled` (the same kernel as a %%kernel cell) at 1024, 2048 and 4096, 20 reps
   each, in one sweep: the student kernel's time as a share of the built-in's.

The kernel is driven through jupyter_client (a session: a %%kernel cell, then the family's magic),
so it needs jupyter_client; without it, or without a GPU, it says so and exits 0. A benchmark,
not a test: it asserts nothing. Under a minute on an H100.
"""
from __future__ import annotations

import statistics
import sys
import time

import common
from common import docs_of, execute, fmt, print_table

TILED = """%%kernel --for matmul --name mytiled{tag}
#ifndef TILE
#define TILE 16
#endif
// The lecture's tiled matrix multiplication, with bounds checks so that any size works.
// Each block computes one TILE x TILE tile of C; each phase loads one tile of A and one of B
// into shared memory, waits, multiplies them, and waits again before the next phase overwrites.
__device__ float load_a(const float *A, int M, int K, int row, int col)
{{
    return row < M && col < K ? A[row * K + col] : 0.0f;
}}

__device__ float load_b(const float *B, int K, int N, int row, int col)
{{
    return row < K && col < N ? B[row * N + col] : 0.0f;
}}

__global__ void mytiled{tag}(const float *A, const float *B, float *C, int M, int N, int K)
{{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    int phases = (K + TILE - 1) / TILE;
    for (int p = 0; p < phases; p++) {{
        As[ty][tx] = load_a(A, M, K, row, p * TILE + tx);
        Bs[ty][tx] = load_b(B, K, N, p * TILE + ty, col);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }}
    if (row < M && col < N)
        C[row * N + col] = sum;
}}
// {counter}
"""


def ms_stats(values: list[float]) -> tuple[str, str]:
    return fmt(statistics.median(values), 2), fmt(max(values), 2)


def main() -> int:
    if common.gpu_device("matmul", "%matmul --size 64 --variant naive --reps 1") is None:
        return 0
    with common.session() as kc:
        if kc is None:
            return 0
        cold, cached = [], []
        for i in range(10):
            c, msgs, _ = execute(kc, TILED.format(tag=f"_c{i}", counter=f"cold {i} {time.time()}") + "")
            cold.append(next(d for d in docs_of(msgs) if d["magic"] == "kernel")["compile"]["ms"])
        for i in range(10):
            c, msgs, _ = execute(kc, TILED.format(tag="", counter="cached"))
            doc = next(d for d in docs_of(msgs) if d["magic"] == "kernel")
            if i > 0:
                cached.append(doc["compile"]["ms"])
        print_table("NVRTC compile of a 50-line tiled kernel to a cubin (ms)",
                    [("", "median", "max"), ("cold (new source)", *ms_stats(cold)),
                     ("cell re-run (cubin cache)", *ms_stats(cached))], left=(0,))
        over = []
        for _ in range(10):
            c, msgs, wall = execute(kc, "%matmul --size 1024 --variant mytiled --reps 10")
            run = next(d for d in docs_of(msgs) if d["magic"] == "matmul")["runs"][0]
            over.append(wall - run["time_ms"]["median"] * 13)
        print_table("Warm %matmul --size 1024 --variant mytiled --reps 10 (ms)",
                    [("", "median", "max"), ("wall minus GPU time", *ms_stats(over))], left=(0,))
        c, msgs, _ = execute(kc, "%matmul --size 1024,2048,4096 --variant tiled,mytiled --reps 20")
        runs = next(d for d in docs_of(msgs) if d["magic"] == "matmul")["runs"]
        rows = [("size", "tiled ms", "mytiled ms", "mytiled / tiled")]
        for size in (1024, 2048, 4096):
            t = {r["variant"]: r["time_ms"]["median"] for r in runs if r["m"] == size}
            rows.append((str(size), fmt(t["tiled"], 3), fmt(t["mytiled"], 3), fmt(t["mytiled"] / t["tiled"], 3)))
        print_table("A student kernel identical to `tiled` (TILE 16), timed beside it", rows, left=())
    return 0


if __name__ == "__main__":
    sys.exit(main())
