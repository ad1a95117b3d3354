#!/usr/bin/env python3
"""bench/histo.py — %histo on the GPU: every variant at 2^28 bytes, uniform, text and skewed input, against CUB.

Runs `cudalab --run '%histo ...' --json` (argv[0] = $CUDALAB_BIN or build/bin/cudalab) once with
every variant and every input distribution, so each ratio compares runs of the same process (CUB
included); reps are --reps auto unless --reps N. Prints one table per distribution: variant |
block | grid | median ms | reps ±spread | SM MHz | GB/s | % of peak BW | % of copy BW | % of CUB |
check, then issue 16's goals: on uniform, text and skewed input the fastest non-library variant
(not cpu, not cub) reads at least 85% of the device's theoretical memory bandwidth.

A benchmark, not a test: it asserts nothing; it exits 0 when it could measure (target met or not),
1 when the CLI failed or a check failed, and 0 with a note when there is no GPU. Uses only the
standard library, so it also runs with the GPU machine's plain python3. About a minute on an H100,
most of it the sequential cpu variant on 256 MiB.
Usage: python3 bench/histo.py [--size 2^28] [--reps N] [--block B] [--bins bytes|letters]
(--block: every variant at B; by default each its own: 256, fast 1024)
"""
from __future__ import annotations

import sys

import common
from common import check_text, clock_text, fmt, print_goals, print_table, reps_text

GOAL_PCT_OF_PEAK = 85.0
DISTS = ("uniform", "text", "skewed")
LIBRARY = ("cpu", "cub")


def run_cell(cell: str, timeout: float = 600) -> dict:
    return common.run_cell("histo", cell, timeout, strict=False)


def table(title: str, runs: list[dict], peak_gbs: float | None) -> float | None:
    """Prints one table; returns the best non-library variant's % of the theoretical peak bandwidth."""
    ref = next((r for r in runs if r["variant"] == "cub"), None)
    ref_gbs = ref["gbs"] if ref else None
    rows = [("variant", "block", "grid", "median ms", "reps", "SM MHz", "GB/s", "% of peak BW", "% of copy BW",
             "% of CUB", "check")]
    best = None
    for r in runs:
        pct = 100.0 * r["gbs"] / ref_gbs if ref_gbs else None
        of_peak = 100.0 * r["gbs"] / peak_gbs if peak_gbs else None
        rows.append((r["variant"], str(r["block"] or "-"), str(r["grid"] or "-"),
                     fmt(r["time_ms"]["median"], 4), reps_text(r), clock_text(r), fmt(r["gbs"], 0), fmt(of_peak),
                     fmt(r.get("pct_of_bandwidth")), fmt(pct), check_text(r["check"])))
        if r["variant"] not in LIBRARY and of_peak is not None:
            best = of_peak if best is None else max(best, of_peak)
    print_table(title, rows, left=(0, 10))
    return best


def main() -> int:
    ap = common.sweep_arguments(__doc__, "2^28")
    ap.add_argument("--bins", default="bytes", choices=("bytes", "letters"))
    args = ap.parse_args()

    d = common.bandwidth_device("histo", "%histo --size 4096 --variant fast --reps 1 --warmup 0", peak=True)
    if d is None:
        return 0

    doc = run_cell(f"%histo --size {args.size} --variant all --dist {','.join(DISTS)} "
                   f"--bins {args.bins}{f' --block {args.block}' if args.block else ''} --reps {args.reps} --warmup 3")
    size = doc["runs"][0]["size"]
    failed = common.any_check_failed(doc["runs"])
    goals = []
    for dist in DISTS:
        runs = [r for r in doc["runs"] if r["dist"] == dist]
        best = table(f"{dist} input, {args.bins} bins, N = {size:,} bytes ({size / 2**20:,.0f} MiB)", runs,
                     d.get("peak_bandwidth_gbs"))
        goals.append((f"{dist} {args.bins}", best, GOAL_PCT_OF_PEAK,
                      f"the peak {fmt(d.get('peak_bandwidth_gbs'), 0)} GB/s"))
    print_goals("issue 16's histogram goals: the fastest non-library variant", goals)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
