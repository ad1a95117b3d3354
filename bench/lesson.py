#!/usr/bin/env python3
"""bench/lesson.py — what the lesson checks add to a student's %%kernel cell on the CPU backend: the
cell's wall time with them (its kernel run once more on the CPU runner at the quick check's size, one
counted launch) against the same cell with --no-cpu-check (none), the build cached either way.

For each family's lesson kernel (tests/lesson_kernels.py): the cell once to build it (NVRTC and the
CPU runner's host build, then cached), then with --no-cpu-check (without), then with the lesson checks
for the first time (their run), then again (from their cache). Prints the times, the ratio and the
time added against the issue's goal (at most 0.5 s added). The kernel is driven through
jupyter_client (a session on the CPU backend); without it, it says so and exits 0. A benchmark, not a
test: it asserts nothing. About a minute on a 2-core host.
"""
from __future__ import annotations

import sys

import common
from common import execute, print_table

sys.path.insert(0, str(common.REPO / "tests"))
import lesson_kernels as K  # noqa: E402  (the tests' kernels: one source of them)

GOAL_S = 0.5
KERNELS = [("matmul", K.matmul_tiled), ("histo", K.histo_private), ("reduce", K.reduce_convergent),
           ("stencil", K.stencil_tiled), ("stencil 2D", K.stencil_tiled_2d), ("coalesce", K.copy_coalesced)]


def timed(kc, cell: str) -> float:
    """The cell's round trip in ms (it must succeed)."""
    reply, _, ms = execute(kc, cell)
    if reply["status"] != "ok":
        sys.exit(f"bench/lesson.py: {cell.splitlines()[0]} failed: {reply.get('ename')}: {reply.get('evalue')}")
    return ms


def without(cell: str) -> str:
    first, rest = cell.split("\n", 1)
    return f"{first} --no-cpu-check\n{rest}"


def main() -> int:
    rows = [("kernel", "without ms", "with ms", "cached ms", "ratio", "added s", "goal")]
    with common.session(env={"CUDALAB_BACKEND": "cpu"}) as kc:
        if kc is None:
            return 0
        for family, kernel in KERNELS:
            cell = kernel()
            timed(kc, without(cell))                # builds it (cold), so that the rest is cached
            off = min(timed(kc, without(cell)) for _ in range(3))
            on = timed(kc, cell)                    # the lesson run, first time
            cached = min(timed(kc, cell) for _ in range(3))
            added = (on - off) / 1e3
            rows.append((family, f"{off:.0f}", f"{on:.0f}", f"{cached:.0f}", f"{on / off:.2f}",
                         f"{added:.2f}", "MET" if added <= GOAL_S else "NOT MET"))
    print_table(f"The lesson checks' cost in a %%kernel cell (CPU backend, builds cached; goal: at most "
                f"{GOAL_S} s added)", rows, left=(0, 6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
