#!/usr/bin/env python3
"""bench/stencil.py — %stencil on the GPU: naive, tiled and fast, 1D at 2^26 elements over radii 1..64
and 2D at 4096x4096 over the lecture's filters, plus fast's 2D goal point (gauss5 at 8192x8192).

Runs `cudalab --run '%stencil ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once per
experiment. Prints one table per size: variant | R or filter | block | median ms | GB/s | % of copy
BW | reads/output (model) | tiled speedup | check. The reference is the device's measured copy
bandwidth, measured in the same run (a stencil reads and writes each element once at best; there
is no library stencil). The verdict lines: whether tiled beats naive where the model says it should
(R >= 8 in 1D, the 5x5 filter in 2D), how close the best run gets to the copy, and issue 37's goals
for fast (>= 85% of the copy at R = 1, 3, 8 with 2^26 floats; >= 80% for 5x5 at 8192x8192).

A benchmark, not a test: exits 0 when it could measure, 1 when the CLI or a check failed, 0 with a
note without a GPU. Standard library only. About half a minute on an H100.
Usage: python3 bench/stencil.py [--reps N]
"""
from __future__ import annotations

import argparse
import sys

import common
from common import check_text, fmt, print_goals, print_table


RADII = (1, 3, 8, 16, 64)       # the 1D sweep
GOAL_RADII = (1, 3, 8)          # issue 37: fast >= GOAL_1D % of the copy bandwidth at these radii
GOAL_1D = 85
GOAL_2D = 80                    # issue 37: fast, 5x5 at 8192x8192


def run_cell(cell: str) -> dict:
    return common.run_cell("stencil", cell, 600)


def block_text(block) -> str:
    """A run's block: threads per block (1D), or BXxBY."""
    return "x".join(str(b) for b in block[:2]) if isinstance(block, list) else str(block)


def table(title: str, runs: list[dict], key: str) -> list[tuple[str, float]]:
    rows = [("variant", key, "block", "median ms", "GB/s", "% of copy BW", "reads/output", "tiled/naive", "check")]
    naive = {(r[key], block_text(r["block"])): r for r in runs if r["variant"] == "naive"}
    speedups = []
    for r in runs:
        n = naive.get((r[key], block_text(r["block"])))
        sp = r["gbs"] / n["gbs"] if r["variant"] == "tiled" and n and n["gbs"] else None
        if sp is not None:
            speedups.append((str(r[key]), sp))
        rows.append((r["variant"], str(r[key]), block_text(r["block"]), fmt(r["time_ms"]["median"], 4), fmt(r["gbs"], 0),
                     fmt(r.get("pct_of_bandwidth")), fmt(r["model"]["global_reads_per_output"], 3),
                     fmt(sp, 2) if sp else "-", check_text(r["check"])))
    print_table(title, rows, left=(0, 1, 8))
    return speedups


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    d = common.bandwidth_device("stencil", "%stencil --size 1024 --reps 1 --warmup 0")
    if d is None:
        return 0
    one = run_cell(f"%stencil --size 2^26 --radius {','.join(map(str, RADII))} --block 256 "
                   f"--variant naive,tiled,fast --reps {args.reps} --warmup 3")
    two = run_cell(f"%stencil --dim 2 --size 4096x4096 --filter box,gauss3,gauss5,laplace4,laplace8 "
                   f"--block 16,32,32x8 --variant naive,tiled,fast --reps {args.reps} --warmup 3")
    big = run_cell(f"%stencil --dim 2 --size 8192x8192 --filter gauss5 --variant naive,tiled,fast "
                   f"--reps {args.reps} --warmup 3")
    failed = common.any_check_failed(one["runs"] + two["runs"] + big["runs"])
    s1 = table("1D, N = 2^26 (256 MiB in, 256 MiB out), box weights", one["runs"], "radius")
    s2 = table("2D, 4096x4096 (64 MiB in, 64 MiB out)", two["runs"], "filter")
    table("2D, 8192x8192 (256 MiB in, 256 MiB out), block 16x16", big["runs"], "filter")
    best = max(r.get("pct_of_bandwidth") or 0 for r in one["runs"] + two["runs"] + big["runs"])
    big1 = [sp for R, sp in s1 if int(R) >= 8]
    big2 = [sp for f, sp in s2 if f == "gauss5"]
    met = all(sp > 1 for sp in big1 + big2)
    print(f"\ntiled/naive at R >= 8 (1D): {', '.join(f'{sp:.2f}x' for sp in big1)}; gauss5 (2D): "
          f"{', '.join(f'{sp:.2f}x' for sp in big2)} -> tiled faster where the model says: {'YES' if met else 'NO'}")
    print(f"best run: {best:.1f}% of the measured copy bandwidth")
    fast1 = {r["radius"]: r.get("pct_of_bandwidth") for r in one["runs"] if r["variant"] == "fast"}
    fast2 = next((r.get("pct_of_bandwidth") for r in big["runs"] if r["variant"] == "fast"), None)
    print_goals("issue 37's stencil goals: fast against the copy bandwidth measured in this run",
                [(f"1D fast, R = {R}, 2^26 floats", fast1.get(R), GOAL_1D, "copy BW") for R in GOAL_RADII]
                + [("2D fast, gauss5 (5x5), 8192x8192", fast2, GOAL_2D, "copy BW")])
    if failed:
        print("a check FAILED", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
