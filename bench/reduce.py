#!/usr/bin/env python3
"""bench/reduce.py — %reduce on the GPU: every variant at 2^16, 2^20 and 2^26 elements, float and int, sum and max, against CUB.

Runs `cudalab --run '%reduce ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once with
every variant, size, dtype and op, so each ratio compares runs of the same process (CUB included);
reps are --reps auto unless --reps N. Prints one table per (size, dtype, op): variant | block |
median ms | reps ±spread | SM MHz | GB/s | % of copy BW | % of CUB | check, then issue 16's goals
for float sum and int sum: the fastest non-library variant at 100% of CUB's GB/s at 2^26, 90% at
2^20 and 2^16 (where a launch's fixed cost is most of the time: the µs column says so).

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (target met or not),
1 when the CLI failed or a check failed, and 0 with a note when there is no GPU. Uses only the
standard library, so it also runs with the GPU machine's plain python3. About half a minute on an H100.
Usage: python3 bench/reduce.py [--size 2^26] [--reps N] [--block B]
"""
from __future__ import annotations

import sys

import common
from common import check_text, clock_text, fmt, print_goals, print_table, reps_text

GOALS = {2**26: 100.0, 2**20: 90.0, 2**16: 90.0}   # % of CUB for float sum and int sum
GOAL_OPS = ("sum",)


def run_cell(cell: str, timeout: float = 300) -> dict:
    return common.run_cell("reduce", cell, timeout)


def table(title: str, runs: list[dict]) -> float | None:
    """Prints one table; returns the best non-library variant's % of CUB."""
    ref = next((r for r in runs if r["variant"] == "cub"), None)
    ref_gbs = ref["gbs"] if ref else None
    rows = [("variant", "block", "median µs", "reps", "SM MHz", "GB/s", "% of copy BW", "% of CUB", "value",
             "check")]
    best = None
    for r in runs:
        pct = 100.0 * r["gbs"] / ref_gbs if ref_gbs else None
        rows.append((r["variant"], str(r["block"] or "-"), fmt(r["time_ms"]["median"] * 1e3, 1), reps_text(r),
                     clock_text(r), fmt(r["gbs"], 0), fmt(r.get("pct_of_bandwidth")), fmt(pct), str(r["value"]),
                     check_text(r["check"])))
        if r["variant"] != "cub" and pct is not None:
            best = pct if best is None else max(best, pct)
    print_table(title, rows, left=(0, 9))
    return best


def main() -> int:
    args = common.sweep_arguments(__doc__, "2^16,2^20,2^26",
                                  "every variant's threads per block (default: each its own)").parse_args()

    d = common.bandwidth_device("reduce", "%reduce --size 1024 --variant fast --reps 1 --warmup 0", peak=True)
    if d is None:
        return 0

    doc = run_cell(f"%reduce --size {args.size} --variant all --dtype float,int --op sum,max "
                   + (f"--block {args.block} " if args.block else "") + f"--reps {args.reps} --warmup 3")
    failed = common.any_check_failed(doc["runs"])
    goals = []
    for size in sorted({r["size"] for r in doc["runs"]}):
        for dtype in ("float", "int"):
            for op in ("sum", "max"):
                runs = [r for r in doc["runs"] if r["size"] == size and r["dtype"] == dtype and r["op"] == op]
                best = table(f"{dtype} {op}, N = {size:,} ({size * 4 / 2**20:,.2f} MiB)", runs)
                if op in GOAL_OPS and size in GOALS:
                    goals.append((f"{dtype} {op} at N = 2^{size.bit_length() - 1}", best, GOALS[size], "CUB's GB/s"))
    print_goals("issue 16's reduce goals: the fastest non-library variant", goals)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
