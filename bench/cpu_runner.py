#!/usr/bin/env python3
"""bench/cpu_runner.py — students' kernels on the CPU runner of the CUDA model (no GPU needed: the
session forces the CPU backend), against the CPU analogues of ours in the same run.

1. The runner's build of a %%kernel cell by the host compiler (after NVRTC's): cold and cached.
2. The lecture's tiled matmul at 256×256×256 as a student's kernel: the grid's wall time on the
   runner (every access checked, 256 threads per block as fibers), and the whole cell, beside the
   CPU analogue of `tiled`. The goal: under 2 s on a 2-core machine.
3. A convergent shared-memory reduction of 2^20 floats as a student's kernel, likewise beside the
   CPU analogue of `convergent`. The goal: under 2 s.

With $CUDALAB_BENCH_BEFORE naming another build's binary (the build before a change), the same
figures are measured with it in the same run, and each row gets its ratio (the goal for a change
that contains students' code: a cold build at most 10% slower).

A benchmark, not a test: it asserts nothing, and prints what the goal verdicts are.
"""
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import common
from common import doc_of, execute, fmt, print_table

TILED = """%%kernel --for matmul --name mytiled
#ifndef TILE
#define TILE 16
#endif
__global__ void mytiled(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {
        As[ty][tx] = row < M && p * TILE + tx < K ? A[row * K + p * TILE + tx] : 0.0f;
        Bs[ty][tx] = p * TILE + ty < K && col < N ? B[(p * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}
// COUNTER
"""


def ms_stats(values: list[float]) -> tuple[str, str]:
    return fmt(statistics.median(values), 1), fmt(max(values), 1)


def verdict(ms: float, goal_ms: float) -> str:
    return f"{'yes' if ms < goal_ms else 'NO'} ({ms / 1e3:.2f} s against {goal_ms / 1e3:.0f} s)"


def measure(program: Path | None = None) -> dict | None:
    """One fresh kernel's figures (program, else the build under test): the runner's build of a cell,
    cold and cached (ms), and the two kernels' grid times and cell walls; None when it cannot run."""
    out: dict = {}
    with common.session(env={"CUDALAB_BACKEND": "cpu"}, program=program) as kc:
        if kc is None:
            return None
        cold, cached = [], []
        for i in range(3):
            c, msgs, _ = execute(kc, TILED.replace("COUNTER", f"cold {i} {os.getpid()} {program}"))
            if c["status"] != "ok":
                print(f"bench/cpu_runner.py: the tiled kernel failed: {c.get('evalue')}: skipped")
                return None
            cold.append(doc_of(msgs, "kernel")["runner"]["ms"])
        for i in range(3):
            c, msgs, _ = execute(kc, TILED.replace("COUNTER", "cached"))
            if i:
                cached.append(doc_of(msgs, "kernel")["runner"]["ms"])
        out["cold"], out["cached"] = cold, cached

        c, msgs, wall = execute(kc, "%matmul --size 256 --variant tiled,mytiled --reps 3")
        runs = {r["variant"]: r for r in doc_of(msgs, "matmul")["runs"]}
        out["matmul tiled 256³"] = (runs["mytiled"]["time_ms"]["median"], wall, runs["tiled"]["time_ms"]["median"])

        c, msgs, _ = execute(kc, "%reduce --show-source convergent --as-kernel")
        cell = next((m["content"]["text"] for m in [{"content": p} for p in c.get("payload", [])]
                     if m["content"].get("source") == "set_next_input"), None)
        if cell:
            c, msgs, _ = execute(kc, cell)
        name = cell.split("--name", 1)[1].split()[0] if cell else None
        if cell and c["status"] == "ok":
            c, msgs, wall = execute(kc, f"%reduce --size 2^20 --variant convergent,{name} --reps 3")
            if c["status"] == "ok":
                runs = {r["variant"]: r for r in doc_of(msgs, "reduce")["runs"]}
                out["reduce convergent 2^20"] = (runs[name]["time_ms"]["median"], wall,
                                                 runs["convergent"]["time_ms"]["median"])
            else:
                out["reduce convergent 2^20"] = "failed: " + c.get("evalue", "")[:60]
        else:
            out["reduce convergent 2^20"] = "no --as-kernel cell: " + str(c.get("evalue", ""))[:60]
    return out


def main() -> int:
    """$CUDALAB_BENCH_BEFORE: another build's binary (the one before a change), measured in the same
    run, with the ratios of this build's figures to its."""
    now = measure()
    if now is None:
        return 0
    before_bin = os.environ.get("CUDALAB_BENCH_BEFORE")
    before = measure(Path(before_bin).resolve()) if before_bin else None
    rows = [("", "median", "max") + (("before (median)", "now / before") if before else ())]
    for key, label in (("cold", "cold (new source)"), ("cached", "cell re-run (cached)")):
        row = (label, *ms_stats(now[key]))
        if before:
            b = statistics.median(before[key])
            row += (fmt(b, 1), fmt(statistics.median(now[key]) / b, 2))
        rows.append(row)
    print_table("The CPU runner's build of a %%kernel cell by the host compiler (ms)", rows, left=(0,))

    rows = [("kernel", "grid ms (median of 3)", "cell wall ms", "CPU analogue ms", "runner / analogue",
             "under 2 s") + (("grid ms before", "now / before") if before else ())]
    for key in ("matmul tiled 256³", "reduce convergent 2^20"):
        v = now[key]
        if isinstance(v, str):
            rows.append((key, v, "", "", "", ""))
            continue
        mine, wall, ours = v
        row = (key, fmt(mine, 1), fmt(wall, 0), fmt(ours, 2), fmt(mine / ours, 1), verdict(mine, 2000))
        if before and not isinstance(before.get(key), str):
            row += (fmt(before[key][0], 1), fmt(mine / before[key][0], 2))
        rows.append(row)
    print_table(f"Students' kernels on the CPU runner, {os.cpu_count()} cores (CPU times)", rows, left=(0,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
