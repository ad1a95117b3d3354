#!/usr/bin/env python3
"""bench/cell.py — what a cell costs beyond its GPU work, through jupyter_client as a notebook meets it
(issue 16's cell-overhead goals).

1. The first cell after the kernel starts: a fresh kernel for each start; once ready (its first
   kernel_info_reply) the client waits READ_S, as a student reads the notebook's first cell while
   the worker starts and initialises CUDA, then runs `%device` and times its round trip (request to
   idle). Goal: under 150 ms. Beside it, the same cell sent at once (nothing to read: the worker's
   start and CUDA's initialisation are waited for) and the same cell warm, the reference.
2. A warm cell: `%matmul --size 1024 --variant tiled --reps 10` after one warm-up cell, RUNS times. Its
   GPU time is the run's (warm-up + timed reps) x mean rep; its overhead is the round trip minus that:
   inputs made and copied, the check, the result rendered and sent. Goal: under 10 ms. Beside it, the
   round trip of `%echo hi` (the protocol alone) in the same session.

A benchmark, not a test: it asserts nothing; exits 0 when it could measure (goal met or not) or when
there is no GPU (saying so), 1 when a cell fails.
Usage: .venv/bin/python bench/cell.py [--starts N] [--runs N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import common
from common import doc_of, execute, fmt, print_table

READ_S = 2.0
FIRST_GOAL_MS = 150.0
OVERHEAD_GOAL_MS = 10.0
WARM_CELL = "%matmul --size 1024 --variant tiled --reps 10"


def ok(reply: dict, cell: str) -> None:
    if reply.get("status") != "ok":
        sys.exit(f"bench/cell.py: `{cell}` failed: {reply.get('ename')}: {reply.get('evalue')}")


def first_cells(starts: int) -> tuple[list[float], list[float], list[float]]:
    """(first cell after reading, first cell at once, the same cell warm) round trips in ms."""
    read, at_once, warm = [], [], []
    for i in range(starts):
        for wait, into in ((READ_S, read), (0.0, at_once)):
            with common.session() as kc:
                if kc is None:
                    sys.exit(0)
                time.sleep(wait)
                reply, _, ms = execute(kc, "%device")
                ok(reply, "%device")
                into.append(ms)
                if wait:
                    reply, _, ms = execute(kc, "%device")
                    warm.append(ms)
    return read, at_once, warm


def gpu_ms(doc: dict) -> float:
    """The GPU time of a run: every rep it launched, warm-up included, at the timed reps' mean."""
    return sum((r["time_ms"]["reps"] + doc["params"]["warmup"]) * r["time_ms"]["mean"] for r in doc["runs"])


def warm_cells(runs: int) -> tuple[list[float], list[float], list[float], list[float]] | None:
    """(round trips, GPU times, overheads, %echo round trips) in ms; None without a GPU."""
    with common.session() as kc:
        if kc is None:
            sys.exit(0)
        reply, msgs, _ = execute(kc, WARM_CELL)
        ok(reply, WARM_CELL)
        doc = doc_of(msgs, "matmul")
        if doc["backend"] != "cuda":
            print(f"bench/cell.py: no GPU ({doc.get('backend_note')}): skipped")
            return None
        walls, gpus, overheads, echoes = [], [], [], []
        for _ in range(runs):
            reply, msgs, ms = execute(kc, WARM_CELL)
            ok(reply, WARM_CELL)
            g = gpu_ms(doc_of(msgs, "matmul"))
            walls.append(ms)
            gpus.append(g)
            overheads.append(ms - g)
            reply, _, ms = execute(kc, "%echo hi")
            echoes.append(ms)
        return walls, gpus, overheads, echoes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3, help="kernel starts per first-cell measurement")
    ap.add_argument("--runs", type=int, default=15, help="warm cells")
    a = ap.parse_args()
    if common.gpu_device("matmul", "%matmul --size 64 --variant tiled --reps 1") is None:
        return 0
    warm = warm_cells(a.runs)
    if warm is None:
        return 0
    walls, gpus, overheads, echoes = warm
    read, at_once, warm_device = first_cells(a.starts)
    med = statistics.median
    rows = [("cell", "round trip ms (median)", "max ms", "reference", "reference ms", "ratio")]
    rows.append((f"%device, first, after {READ_S:g} s reading", fmt(med(read)), fmt(max(read)),
                 "%device warm", fmt(med(warm_device)), fmt(med(read) / med(warm_device), 1)))
    rows.append(("%device, first, sent at once", fmt(med(at_once)), fmt(max(at_once)),
                 "%device warm", fmt(med(warm_device)), fmt(med(at_once) / med(warm_device), 1)))
    rows.append((WARM_CELL, fmt(med(walls)), fmt(max(walls)), "its GPU time", fmt(med(gpus)),
                 fmt(med(walls) / med(gpus), 2)))
    rows.append(("  overhead: round trip - GPU time", fmt(med(overheads)), fmt(max(overheads)),
                 "%echo hi", fmt(med(echoes)), fmt(med(overheads) / med(echoes), 1)))
    print_table(f"A cell's cost beyond its GPU work, through jupyter_client ({a.starts} kernel starts, "
                f"{a.runs} warm cells)", rows, left=(0, 3))
    goals = [("first cell after the kernel starts (after reading)", med(read), FIRST_GOAL_MS),
             ("warm cell's overhead beyond its GPU time", med(overheads), OVERHEAD_GOAL_MS)]
    print("\ngoals:")
    for what, ms, goal in goals:
        print(f"  {what}: {ms:.1f} ms, goal under {goal:.0f} ms: {'MET' if ms < goal else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
