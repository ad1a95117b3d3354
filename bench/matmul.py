#!/usr/bin/env python3
"""bench/matmul.py — %matmul on the GPU: every variant at 1024³, 2048³, 4096³ and 4096×1024×4096, against cuBLAS.

Runs `cudalab --run '%matmul ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once per
shape with every GPU variant (tiled and tiled-bt at TILE_WIDTH 16 and 32; the wgmma rungs on a
compute capability 9.0 GPU only), so each ratio compares runs of the same process, and the host loop
(`cpu`) once at 1024³ with 2 reps (it takes seconds per product); at 8192³ the tensor-core variants
and their cuBLAS references only. Reps are --reps auto (until each median settles within 1%) unless
--reps N. Prints per shape the FP32 table: variant | precision | median ms | reps ±spread | SM MHz |
GFLOP/s | % of FP32 peak | % of cuBLAS FP32 | check (every run), then the tensor-core table: the runs
in TF32, FP16 or BF16, each against cuBLAS at its own precision (cublas-tf32, cublas-fp16,
cublas-bf16; the FP16 and BF16 sides both convert their FP32 inputs inside the timed launch). Then
the goals (GOALS): the fastest own FP32 variant (not a library, inputs not rounded: precision fp32)
at least 93% of cuBLAS FP32 at 4096³ and 80% at 1024³ and at 4096×1024×4096; the fastest own TF32
variant at least 95% of cuBLAS TF32 at 4096³; the fastest own FP16 and BF16 variants at least 90% of
cuBLAS at the same precision at 4096³ and 8192³ (issues 16 and 37).

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (goals met or not),
1 when the CLI failed, and 0 with a note when there is no GPU. Uses only the standard library,
so it also runs with the GPU machine's plain python3. 28 s on an H200 with --reps 5.
Usage: python3 bench/matmul.py [--reps N|auto]
"""
from __future__ import annotations

import argparse
import sys

import common
from common import check_text, clock_text, fmt, print_goals, print_table, reps_text

TENSOR_CORE_VARIANTS = "wmma-tf32,wmma-fp16,wmma-bf16,cublas-tf32,cublas-fp16,cublas-bf16"
GPU_VARIANTS = ("naive,naive-bt,tiled,tiled-bt,reg1d,reg2d,vec4,warptile,fast,fast64,swizzle,async,async64,wide,"
                "cublas," + TENSOR_CORE_VARIANTS)
HOPPER_VARIANTS = "wgmma-tf32,wgmma-fp16,wgmma-bf16"     # CL_MATMUL_SM90A: named on a 9.0 device only
# (name, flags, which variants: all of them, or the tensor cores' only)
SHAPES = [("1024³", "--size 1024", "all"), ("2048³", "--size 2048", "all"), ("4096³", "--size 4096", "all"),
          ("4096×1024×4096", "--m 4096 --n 1024 --k 4096", "all"), ("8192³", "--size 8192", "tensor")]
# Each precision's reference: cuBLAS at that precision.
REFERENCE = {"fp32": "cublas", "tf32": "cublas-tf32", "fp16": "cublas-fp16", "bf16": "cublas-bf16"}
TENSOR_CORE_PRECISIONS = ("tf32", "fp16", "bf16")
# The goals: (shape, precision, % of REFERENCE[precision] the fastest own variant of that precision reaches)
GOALS = [("1024³", "fp32", 80.0), ("4096³", "fp32", 93.0), ("4096×1024×4096", "fp32", 80.0),
         ("4096³", "tf32", 95.0), ("4096³", "fp16", 90.0), ("8192³", "fp16", 90.0),
         ("4096³", "bf16", 90.0), ("8192³", "bf16", 90.0)]


def run_cell(cell: str, timeout: float = 300) -> dict:
    return common.run_cell("matmul", cell, timeout)


def label(run: dict) -> str:
    return f"{run['variant']} {run['tile']}" if run.get("tile") else run["variant"]


def own(run: dict) -> bool:
    """Our kernel, not a library's nor the host loop."""
    return not run["variant"].startswith("cublas") and run["variant"] != "cpu"


def table(title: str, runs: list[dict]) -> None:
    """Prints the FP32 table for one shape: every run against cuBLAS FP32."""
    ref = next((r for r in runs if r["variant"] == "cublas"), None)
    ref_gflops = ref["gflops"] if ref else None
    rows = [("variant", "precision", "median ms", "reps", "SM MHz", "GFLOP/s", "% of peak", "% of cuBLAS FP32",
             "check")]
    for r in runs:
        pct = 100.0 * r["gflops"] / ref_gflops if ref_gflops else None
        check = r["check"]
        rows.append((label(r), r["precision"], fmt(r["time_ms"]["median"], 3), reps_text(r), clock_text(r),
                     fmt(r["gflops"], 0), fmt(r.get("pct_of_peak")), fmt(pct),
                     f"{check_text(check)} ({check['method']})"))
    print_table(title, rows, left=(0, 1, 8))


def of_reference(run: dict, runs: list[dict]) -> float | None:
    """run's GFLOP/s as a % of cuBLAS's at run's precision, in the same process; None without it."""
    ref = next((r for r in runs if r["variant"] == REFERENCE.get(run["precision"])), None)
    return 100.0 * run["gflops"] / ref["gflops"] if ref and ref["gflops"] else None


def best_own(runs: list[dict], precision: str) -> float | None:
    """The fastest own variant of that precision as a % of its cuBLAS reference."""
    pcts = [p for r in runs if own(r) and r["precision"] == precision
            for p in [of_reference(r, runs)] if p is not None]
    return max(pcts) if pcts else None


def tensor_core_table(title: str, runs: list[dict]) -> None:
    """Prints the runs on tensor cores (TF32, FP16, BF16 inputs), each against cuBLAS at its precision."""
    rows = [("variant", "precision", "median ms", "GFLOP/s", "% of FP32 peak", "% of cuBLAS same precision",
             "max rel err", "tolerance", "check")]
    for r in sorted((r for r in runs if r["precision"] in TENSOR_CORE_PRECISIONS),
                    key=lambda r: TENSOR_CORE_PRECISIONS.index(r["precision"])):
        check = r["check"]
        err = check.get("max_rel_err")
        rows.append((label(r), r["precision"], fmt(r["time_ms"]["median"], 3), fmt(r["gflops"], 0),
                     fmt(r.get("pct_of_peak")), fmt(of_reference(r, runs)), "-" if err is None else f"{err:.2e}",
                     f"{check['tolerance']:.0e}" if check.get("tolerance") is not None else "-", check_text(check)))
    print_table(title, rows, left=(0, 1, 8))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", default="auto")
    args = ap.parse_args()

    d = common.gpu_device("matmul", "%matmul --size 64 --variant naive --reps 1 --warmup 0")
    if d is None:
        return 0
    print(f"%matmul on {d['name']} ({d.get('arch')}), FP32 peak {fmt(d.get('peak_fp32_gflops'), 0)} GFLOP/s")

    failed = False
    measured = {}
    hopper = d.get("cc") == "9.0"   # the wgmma rungs run there only (elsewhere naming one is an error)
    for name, flags, which in SHAPES:
        variants = (GPU_VARIANTS if which == "all" else TENSOR_CORE_VARIANTS) + ("," + HOPPER_VARIANTS if hopper else "")
        tiles = " --tile 16,32" if which == "all" else ""
        doc = run_cell(f"%matmul {flags} --variant {variants}{tiles} --reps {args.reps}")
        runs = doc["runs"]
        if name == "1024³":
            runs = run_cell("%matmul --size 1024 --variant cpu --reps 2 --warmup 0")["runs"] + runs
        failed |= common.any_check_failed(runs)
        if which == "all":
            table(f"m×n×k = {name}", runs)
        tensor_core_table(f"m×n×k = {name}, tensor cores", runs)
        for precision in REFERENCE:
            measured[name, precision] = best_own(runs, precision)
    goals = [(f"fastest own {precision.upper()} variant at {shape}", measured.get((shape, precision)), goal,
              f"cuBLAS {precision.upper()}") for shape, precision, goal in GOALS]
    print_goals("issues 16 and 37's matmul goals (SM MHz: NVML's reading between reps; * the GPU slowed itself)",
                goals)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
