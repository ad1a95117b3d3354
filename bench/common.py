"""bench/common.py — what the benchmarks share: running one cell through the CLI and printing
an aligned table. Not a benchmark itself (`make bench` skips it). Standard library only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def binary() -> Path:
    """$CUDALAB_BIN (relative to the repository) or build/bin/cudalab."""
    p = Path(os.environ.get("CUDALAB_BIN", "build/bin/cudalab"))
    return p if p.is_absolute() else REPO / p


def run_cell(magic: str, cell: str, timeout: float = 300, strict: bool = True) -> dict:
    """Runs `cudalab --run CELL --json` and returns the document of MAGIC. Exits with a message
    when the CLI fails; with strict=False, a failing CLI that still printed the document only
    warns on stderr."""
    r = subprocess.run([str(binary()), "--run", cell, "--json"], capture_output=True, text=True,
                       timeout=timeout)
    failed = f"bench/{magic}.py: `{cell}` exited {r.returncode}: {r.stderr.strip()}"
    if strict and r.returncode != 0:
        sys.exit(failed)
    docs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    if strict:
        return next(d for d in docs if d.get("magic") == magic)
    doc = next((d for d in docs if d.get("magic") == magic), None)
    if doc is None:
        sys.exit(failed)
    if r.returncode != 0:
        print(failed, file=sys.stderr)
    return doc


def gpu_device(magic: str, cell: str) -> dict | None:
    """The device of a quick CELL of MAGIC when it ran on the GPU; otherwise None, after printing
    why the benchmark is skipped (a benchmark without a GPU succeeds, saying so)."""
    probe = run_cell(magic, cell)
    if probe["backend"] != "cuda":
        print(f"bench/{magic}.py: no GPU ({probe.get('backend_note')}): skipped")
        return None
    return probe["device"]


def fmt(v: float | None, nd: int = 1) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


def check_text(check: dict) -> str:
    passed = check.get("passed")
    return "skipped" if passed is None else "ok" if passed else "FAILED"


def print_table(title: str, rows: list[tuple[str, ...]], left: tuple[int, ...]) -> None:
    """Prints a blank line, the title, then rows (the first is the header, underlined) with the
    columns in LEFT left-aligned and the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(f"\n{title}")
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) if j in left else c.rjust(w)
                        for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def print_bandwidth(magic: str, device: dict, peak: bool = False) -> None:
    """The benchmark's first line: the GPU and its measured copy bandwidth (and its peak)."""
    line = (f"%{magic} on {device['name']} ({device.get('arch')}): measured copy bandwidth "
            f"{fmt(device.get('measured_bandwidth_gbs'), 0)} GB/s (read + write)")
    if peak:
        line += f", peak {fmt(device.get('peak_bandwidth_gbs'), 0)} GB/s"
    print(line)


def any_check_failed(runs: list[dict]) -> bool:
    """Whether a run's check failed (a skipped check is not a failure)."""
    return any(r["check"].get("passed") is False for r in runs)


def target_verdict(best: float, goal_pct: float, of: str) -> str:
    """'reaches B% of OF (goal >= G%): MET' (or NOT MET), the end of a target line."""
    met = "MET" if best >= goal_pct else "NOT MET"
    return f"reaches {best:.1f}% of {of} (goal >= {goal_pct:.0f}%): {met}"
