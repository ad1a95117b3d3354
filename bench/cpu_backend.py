#!/usr/bin/env python3
"""bench/cpu_backend.py — the CPU backend, as a student without a GPU meets it: every magic's default
cell against the 2 s goal, and %matmul's CPU analogues against the system's BLAS (the CPU's cuBLAS).

Runs `cudalab --run CELL --json` with CUDALAB_BACKEND=cpu (argv[0] = $CUDALAB_BIN or
build/bin/cudalab), so it measures the same thing on a laptop, in CI and on a GPU host.

1. Each magic's bare cell (its defaults; on the CPU backend --reps 5 and --warmup 1, and a family's
   CPU size where it declares one): the wall time of the whole command, process start to exit, the
   median of 3, and whether it is under 2 s (issue 16's goal, on a 2-core machine).
2. %matmul at 1024³ (and 2048³): every analogue's GFLOP/s as a share of `cublas`, which on the CPU
   backend is the system's BLAS (cblas_sgemm in FP32), measured in the same process: the ratio
   printed the way bench/matmul.py prints the GPU's against cuBLAS.

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (goal met or not),
1 when the CLI failed. Standard library only. About a minute on 2 cores.
Usage: python3 bench/cpu_backend.py [--runs N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import common
from common import check_text, fmt, print_table

GOAL_S = 2.0
DEFAULT_CELLS = ["%matmul", "%reduce", "%histo", "%stencil", "%coalesce", "%vecadd",
                 "%grid --data 76x62 --block 16x16 --run", "%occupancy", "%device"]
MATMUL = "naive,tiled,fast,fast64,cublas"
ENV = {**os.environ, "CUDALAB_BACKEND": "cpu"}


def cli(cell: str, timeout: float = 300) -> tuple[float, list[dict]]:
    """(wall seconds, documents) of one cell; exits when the CLI fails."""
    t0 = time.monotonic()
    r = subprocess.run([str(common.binary()), "--run", cell, "--json"], capture_output=True, text=True,
                       timeout=timeout, env=ENV)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"bench/cpu_backend.py: `{cell}` exited {r.returncode}: {r.stderr.strip()}")
    return wall, [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


def default_cells(runs: int) -> bool:
    rows = [("cell", "wall s (median)", "max s", "what ran", "under 2 s")]
    met = True
    for cell in DEFAULT_CELLS:
        walls, docs = [], []
        for _ in range(runs):
            wall, docs = cli(cell)
            walls.append(wall)
        doc = next((d for d in docs if isinstance(d, dict) and d.get("params")), {})
        p = doc.get("params", {})
        size = p.get("size")
        what = ", ".join(x for x in (f"size {size}" if size is not None else "",
                                     f"{p['reps']} reps" if "reps" in p else "") if x) or "-"
        median = statistics.median(walls)
        met &= median < GOAL_S
        rows.append((cell, fmt(median, 2), fmt(max(walls), 2), what, "yes" if median < GOAL_S else "NO"))
    print_table(f"Each magic's default cell on the CPU backend ({os.cpu_count()} cores), {runs} runs each",
                rows, left=(0, 3, 4))
    return met


def matmul_table(size: int) -> float | None:
    """The analogues against the BLAS at size³; returns the best analogue's % of it."""
    _, docs = cli(f"%matmul --size {size} --variant {MATMUL} --tile 16,32 --reps 5 --warmup 1")
    runs = next(d for d in docs if d.get("magic") == "matmul")["runs"]
    blas = next(r for r in runs if r["variant"] == "cublas")
    rows = [("variant", "precision", "median ms", "GFLOP/s", "% of BLAS FP32", "check")]
    best = None
    for r in runs:
        pct = 100.0 * r["gflops"] / blas["gflops"]
        name = f"{r['variant']} {r['tile']}" if r.get("tile") else r["variant"]
        rows.append((name, r["precision"], fmt(r["time_ms"]["median"], 2), fmt(r["gflops"], 1), fmt(pct),
                     check_text(r["check"])))
        if r["variant"] != "cublas":
            best = pct if best is None else max(best, pct)
    print_table(f"%matmul m = n = k = {size} on the CPU; cublas here is {blas['impl']}", rows, left=(0, 1, 5))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each default cell")
    args = ap.parse_args()
    met = default_cells(args.runs)
    print(f"\ngoal (every default cell under {GOAL_S:.0f} s): {'MET' if met else 'NOT MET'}")
    for size in (1024, 2048):
        best = matmul_table(size)
        print(f"best analogue at {size}: {fmt(best)}% of the BLAS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
