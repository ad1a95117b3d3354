#!/usr/bin/env python3
"""bench/matmul.py — %matmul on the GPU: every variant at 1024, 2048 and 4096, against cuBLAS.

Runs `cudalab --run '%matmul ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once per
size with every GPU variant (tiled at TILE_WIDTH 16 and 32), so each ratio compares runs of the
same process, and the host loop (`cpu`) once at 1024 with 2 reps (it takes seconds per product).
Prints one table per size: variant | median ms | GFLOP/s | % of FP32 peak | % of cuBLAS FP32 |
check, and states whether the issue's target holds: the fastest non-library variant reaches at
least 70% of cuBLAS FP32 at 4096.

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (target met or not),
1 when the CLI failed, and 0 with a note when there is no GPU. Uses only the standard library,
so it also runs with the GPU machine's plain python3. Under 2 minutes on an H100.
Usage: python3 bench/matmul.py [--sizes 1024,2048,4096] [--reps N]
"""
from __future__ import annotations

import argparse
import sys

import common
from common import check_text, fmt, print_table
GPU_VARIANTS = "naive,tiled,fast,fast64,cublas,cublas-tf32"
TARGET_SIZE = 4096
TARGET_PCT = 70.0


def run_cell(cell: str, timeout: float = 300) -> dict:
    return common.run_cell("matmul", cell, timeout)


def label(run: dict) -> str:
    return f"{run['variant']} {run['tile']}" if run.get("tile") else run["variant"]


def table(size: int, runs: list[dict]) -> float | None:
    """Prints the table for one size; returns the best non-library % of cuBLAS FP32."""
    ref = next((r for r in runs if r["variant"] == "cublas"), None)
    ref_gflops = ref["gflops"] if ref else None
    rows = [("variant", "precision", "median ms", "GFLOP/s", "% of peak", "% of cuBLAS FP32", "check")]
    best = None
    for r in runs:
        pct = 100.0 * r["gflops"] / ref_gflops if ref_gflops else None
        check = r["check"]
        rows.append((label(r), r["precision"], fmt(r["time_ms"]["median"], 3), fmt(r["gflops"], 0),
                     fmt(r.get("pct_of_peak")), fmt(pct), f"{check_text(check)} ({check['method']})"))
        library = r["variant"].startswith("cublas")
        if not library and r["variant"] != "cpu" and pct is not None:
            best = pct if best is None else max(best, pct)
    print_table(f"m = n = k = {size}", rows, left=(0, 1, 6))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()

    d = common.gpu_device("matmul", "%matmul --size 64 --variant naive --reps 1 --warmup 0")
    if d is None:
        return 0
    print(f"%matmul on {d['name']} ({d.get('arch')}), FP32 peak {fmt(d.get('peak_fp32_gflops'), 0)} GFLOP/s")

    failed = False
    target = None
    for size in [int(s) for s in args.sizes.split(",")]:
        doc = run_cell(f"%matmul --size {size} --variant {GPU_VARIANTS} --tile 16,32 --reps {args.reps}")
        runs = doc["runs"]
        if size == 1024:
            runs = run_cell("%matmul --size 1024 --variant cpu --reps 2 --warmup 0")["runs"] + runs
        failed |= common.any_check_failed(runs)
        best = table(size, runs)
        if size == TARGET_SIZE:
            target = best
    print()
    if target is None:
        print(f"target: not measured (needs size {TARGET_SIZE})")
    else:
        print(f"target: fastest non-library variant at {TARGET_SIZE} "
              + common.target_verdict(target, TARGET_PCT, "cuBLAS FP32"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
