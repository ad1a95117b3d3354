#!/usr/bin/env python3
"""bench/vecadd.py — %vecadd on the GPU: add and daxpy, pageable and pinned host memory, at 2^20,
2^24 and 2^26 elements: where the time goes (copy in, kernel, copy back).

Prints one table per size: op | memory | H2D ms | kernel ms | D2H ms | H2D GB/s | kernel GB/s |
kernel % of copy BW | D2H GB/s | % moving data | check, and states whether the lecture's claim
holds: moving data takes most (> 90%) of the time of a vector addition with host data.

A benchmark, not a test: it exits 0 when it could measure, 1 when the CLI or a check failed, and 0
with a note when there is no GPU. Standard library only. About 20 seconds on an H100.
"""
from __future__ import annotations

import sys

import common
from common import check_text, fmt, print_table

SIZES = ("2^20", "2^24", "2^26")
TARGET_PCT = 90.0


def main() -> int:
    d = common.gpu_device("vecadd", "%vecadd --size 1024 --reps 1 --warmup 0")
    if d is None:
        return 0
    bw = d.get("measured_bandwidth_gbs")
    print(f"%vecadd on {d['name']} ({d.get('arch')}): measured device copy bandwidth {fmt(bw, 0)} GB/s")
    failed, verdicts = False, []
    for size in SIZES:
        doc = common.run_cell("vecadd", f"%vecadd --size {size} --op add,daxpy --memory pageable,pinned "
                              f"--reps 10 --warmup 2", strict=False)
        n = doc["runs"][0]["size"]
        rows = [("op", "memory", "H2D ms", "kernel ms", "D2H ms", "H2D GB/s", "kernel GB/s", "% of copy BW",
                 "D2H GB/s", "% moving data", "check")]
        for r in doc["runs"]:
            failed |= r["check"].get("passed") is False
            rows.append((r["op"], r["memory"], fmt(r["h2d_ms"]["median"], 3), fmt(r["kernel_ms"]["median"], 4),
                         fmt(r["d2h_ms"]["median"], 3), fmt(r["h2d_gbs"]), fmt(r["kernel_gbs"], 0),
                         fmt(100 * r["kernel_gbs"] / bw if bw else None), fmt(r["d2h_gbs"]),
                         fmt(r["transfer_pct"]), check_text(r["check"])))
            verdicts.append((f"{r['op']} {r['memory']} N={n}", r["transfer_pct"]))
        print_table(f"N = {n} ({size})", rows, left=(0, 1, 10))
    print()
    worst = min(verdicts, key=lambda v: v[1])
    met = all(p > TARGET_PCT for _, p in verdicts)
    print(f"target (moving data > {TARGET_PCT:.0f}% of the time at every point): {'MET' if met else 'NOT MET'}; "
          f"lowest share {worst[1]:.1f}% ({worst[0]})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
