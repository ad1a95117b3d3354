#!/usr/bin/env python3
"""bench/matmul.py — %matmul on the GPU: every variant at 1024³, 2048³, 4096³ and 4096×1024×4096, against cuBLAS.

Runs `cudalab --run '%matmul ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once per
shape with every GPU variant (tiled and tiled-bt at TILE_WIDTH 16 and 32; wgmma-tf32 on a compute
capability 9.0 GPU only), so each ratio compares runs of the same process, and the host loop (`cpu`)
once at 1024³ with 2 reps (it takes seconds per product). Reps are --reps auto (until each median
settles within 1%) unless --reps N. Prints per shape the FP32 table: variant | precision | median ms
| reps ±spread | SM MHz | GFLOP/s | % of FP32 peak | % of cuBLAS FP32 | check (every run), then the
tensor-core table: the runs in TF32, FP16 or BF16 against cuBLAS TF32. Then issue 16's goals: the
fastest own FP32 variant (not a library, inputs not rounded: precision fp32) at least 90% of cuBLAS
FP32 at 4096³, 80% at 1024³ and at m×n×k = 4096×1024×4096; the fastest own TF32 variant at least 70%
of cuBLAS TF32 at 4096³.

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (goals met or not),
1 when the CLI failed, and 0 with a note when there is no GPU. Uses only the standard library,
so it also runs with the GPU machine's plain python3. About 4 minutes on an H100.
Usage: python3 bench/matmul.py [--reps N|auto]
"""
from __future__ import annotations

import argparse
import sys

import common
from common import check_text, clock_text, fmt, print_goals, print_table, reps_text

GPU_VARIANTS = ("naive,naive-bt,tiled,tiled-bt,reg1d,reg2d,vec4,warptile,fast,fast64,swizzle,async,async64,wide,"
                "wmma-tf32,wmma-fp16,wmma-bf16,cublas,cublas-tf32")
# (name, flags, goal: % of cuBLAS FP32 for the fastest own FP32 variant, or None; the same for the
# fastest own TF32 variant against cuBLAS TF32)
SHAPES = [("1024³", "--size 1024", 80.0, None), ("2048³", "--size 2048", None, None),
          ("4096³", "--size 4096", 90.0, 70.0), ("4096×1024×4096", "--m 4096 --n 1024 --k 4096", 80.0, None)]
TENSOR_CORE_PRECISIONS = ("tf32", "fp16", "bf16")


def run_cell(cell: str, timeout: float = 300) -> dict:
    return common.run_cell("matmul", cell, timeout)


def label(run: dict) -> str:
    return f"{run['variant']} {run['tile']}" if run.get("tile") else run["variant"]


def own(run: dict) -> bool:
    """Our kernel, not a library's nor the host loop."""
    return not run["variant"].startswith("cublas") and run["variant"] != "cpu"


def table(title: str, runs: list[dict]) -> float | None:
    """Prints the FP32 table for one shape; returns the best own FP32 variant's % of cuBLAS FP32."""
    ref = next((r for r in runs if r["variant"] == "cublas"), None)
    ref_gflops = ref["gflops"] if ref else None
    rows = [("variant", "precision", "median ms", "reps", "SM MHz", "GFLOP/s", "% of peak", "% of cuBLAS FP32",
             "check")]
    best = None
    for r in runs:
        pct = 100.0 * r["gflops"] / ref_gflops if ref_gflops else None
        check = r["check"]
        rows.append((label(r), r["precision"], fmt(r["time_ms"]["median"], 3), reps_text(r), clock_text(r),
                     fmt(r["gflops"], 0), fmt(r.get("pct_of_peak")), fmt(pct),
                     f"{check_text(check)} ({check['method']})"))
        if own(r) and r["precision"] == "fp32" and pct is not None:
            best = pct if best is None else max(best, pct)
    print_table(title, rows, left=(0, 1, 8))
    return best


def tensor_core_table(title: str, runs: list[dict]) -> float | None:
    """Prints the runs on tensor cores (TF32, FP16, BF16 inputs) against cuBLAS TF32; returns the best
    own TF32 variant's % of cuBLAS TF32."""
    ref = next((r for r in runs if r["variant"] == "cublas-tf32"), None)
    ref_gflops = ref["gflops"] if ref else None
    rows = [("variant", "precision", "median ms", "GFLOP/s", "% of FP32 peak", "% of cuBLAS TF32", "max rel err",
             "tolerance", "check")]
    best = None
    for r in runs:
        if r["precision"] not in TENSOR_CORE_PRECISIONS and r["variant"] != "cublas-tf32":
            continue
        pct = 100.0 * r["gflops"] / ref_gflops if ref_gflops else None
        check = r["check"]
        err = check.get("max_rel_err")
        rows.append((label(r), r["precision"], fmt(r["time_ms"]["median"], 3), fmt(r["gflops"], 0),
                     fmt(r.get("pct_of_peak")), fmt(pct), "-" if err is None else f"{err:.2e}",
                     f"{check['tolerance']:.0e}" if check.get("tolerance") is not None else "-", check_text(check)))
        if own(r) and r["precision"] == "tf32" and pct is not None:
            best = pct if best is None else max(best, pct)
    print_table(title, rows, left=(0, 1, 8))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", default="auto")
    args = ap.parse_args()

    d = common.gpu_device("matmul", "%matmul --size 64 --variant naive --reps 1 --warmup 0")
    if d is None:
        return 0
    print(f"%matmul on {d['name']} ({d.get('arch')}), FP32 peak {fmt(d.get('peak_fp32_gflops'), 0)} GFLOP/s")

    failed = False
    goals = []
    hopper = d.get("cc") == "9.0"   # wgmma-tf32 runs there only (elsewhere naming it is an error)
    for name, flags, goal, tf32_goal in SHAPES:
        variants = GPU_VARIANTS + (",wgmma-tf32" if hopper else "")
        doc = run_cell(f"%matmul {flags} --variant {variants} --tile 16,32 --reps {args.reps}")
        runs = doc["runs"]
        if name == "1024³":
            runs = run_cell("%matmul --size 1024 --variant cpu --reps 2 --warmup 0")["runs"] + runs
        failed |= common.any_check_failed(runs)
        best = table(f"m×n×k = {name}", runs)
        best_tf32 = tensor_core_table(f"m×n×k = {name}, tensor cores", runs)
        if goal is not None:
            goals.append((f"fastest own FP32 variant at {name}", best, goal, "cuBLAS FP32"))
        if tf32_goal is not None:
            goals.append((f"fastest own TF32 variant at {name}", best_tf32, tf32_goal, "cuBLAS TF32"))
    print_goals("issue 16's matmul goals (SM MHz: NVML's reading between reps; * the GPU slowed itself)", goals)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
