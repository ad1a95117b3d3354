#!/usr/bin/env python3
"""bench/coalesce.py — %coalesce on the GPU: the strided copy at strides 1..32 on 2^26 floats, and
row-wise vs column-wise traversal of an 8192 x 8192 matrix.

Prints one table per experiment: traversal | stride | median ms | GB/s (useful bytes) | % of copy
BW | % of stride 1 | sectors per warp | check, and states whether the lecture's effect shows: from
stride 8 on (one 32-byte sector per thread) the useful bandwidth falls to at most a quarter of
stride 1's, and issue 37's goal: stride 1 (the plain copy, each warp access 32 neighbours) at >= 90%
of the copy bandwidth measured in the same run.

A benchmark, not a test: it exits 0 when it could measure, 1 when the CLI or a check failed, and 0
with a note when there is no GPU. Standard library only. About 15 seconds on an H100.
"""
from __future__ import annotations

import sys

import common
from common import check_text, fmt, print_goals, print_table


GOAL_STRIDE1 = 90               # issue 37: stride 1 against the measured copy bandwidth, in %


def table(title: str, runs: list[dict]) -> None:
    ref = runs[0]["gbs"]
    rows = [("traversal", "stride", "median ms", "GB/s", "% of copy BW", "% of stride 1", "sectors/warp", "check")]
    for r in runs:
        rows.append((r["variant"], str(r["stride"]), fmt(r["time_ms"]["median"], 4), fmt(r["gbs"], 0),
                     fmt(r.get("pct_of_bandwidth")), fmt(100 * r["gbs"] / ref), str(r["model"]["sectors_per_warp"]),
                     check_text(r["check"])))
    print_table(title, rows, left=(0, 7))


def main() -> int:
    d = common.bandwidth_device("coalesce", "%coalesce --size 1024 --stride 1 --reps 1 --warmup 0")
    if d is None:
        return 0
    s = common.run_cell("coalesce", "%coalesce --size 2^26 --stride 1,2,4,8,16,32 --reps 20 --warmup 3", strict=False)
    table("stride sweep, N = 2^26 floats (256 MiB each way)", s["runs"])
    m = common.run_cell("coalesce", "%coalesce --layout row,col --rows 8192 --cols 8192 --reps 20 --warmup 3",
                        strict=False)
    table("8192 x 8192 matrix: row-wise vs column-wise", m["runs"])
    runs = s["runs"]
    failed = common.any_check_failed(runs + m["runs"])
    pct1 = runs[0].get("pct_of_bandwidth") or 0
    worst_ratio = max(r["gbs"] / runs[0]["gbs"] for r in runs if r["stride"] >= 8)
    met = worst_ratio <= 0.25
    print(f"\nlecture effect (strides >= 8 at most 25% of stride 1): {'SHOWN' if met else 'NOT SHOWN'}; "
          f"stride 1 at {pct1:.1f}% of copy BW, strides >= 8 at most {100 * worst_ratio:.1f}% of stride 1; "
          f"column-wise at {100 * m['runs'][1]['gbs'] / m['runs'][0]['gbs']:.1f}% of row-wise")
    print_goals("issue 37's coalescing goal", [("stride 1, 2^26 floats", runs[0].get("pct_of_bandwidth"),
                                                 GOAL_STRIDE1, "copy BW")])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
