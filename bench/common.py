"""bench/common.py — what the benchmarks share: running one cell through the CLI, a kernel session
through jupyter_client (for benchmarks that need several cells, such as a %%kernel then its family's
magic), and printing an aligned table. Not a benchmark itself (`make bench` skips it). Standard
library only, but for the session (jupyter_client, imported when one starts).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

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


def bandwidth_device(magic: str, cell: str, peak: bool = False) -> dict | None:
    """gpu_device, and where there is one, the benchmark's first line (print_bandwidth)."""
    device = gpu_device(magic, cell)
    if device is not None:
        print_bandwidth(magic, device, peak)
    return device


def sweep_arguments(doc: str, size: str, block_help: str | None = None) -> argparse.ArgumentParser:
    """The flags of a benchmark of one family's sweep: --size (default size), --reps (auto) and --block
    (by default none: each variant its own). doc: the benchmark's docstring (its first line describes it)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--size", default=size)
    ap.add_argument("--reps", default="auto")
    ap.add_argument("--block", default=None, help=block_help)
    return ap


def any_check_failed(runs: list[dict]) -> bool:
    """Whether a run's check failed (a skipped check is not a failure)."""
    return any(r["check"].get("passed") is False for r in runs)


def clock_text(run: dict) -> str:
    """The SM clock NVML read during the run's reps ("1980" or "1755-1980", "*" when the GPU slowed
    itself), or "-" where NVML is unavailable."""
    c = run.get("conditions") or {}
    sm = c.get("sm_clock_mhz")
    if not sm:
        return "-"
    text = f"{sm['min']}" if sm["min"] == sm["max"] else f"{sm['min']}-{sm['max']}"
    return text + ("*" if c.get("slowed") else "")


def reps_text(run: dict) -> str:
    """The reps a run took and the spread of its median: "37 ±0.4%"."""
    t = run["time_ms"]
    return f"{t['reps']} ±{100 * t.get('ci95_rel', 0):.1f}%"


def print_goals(title: str, goals: list[tuple[str, float | None, float, str]]) -> None:
    """The goals of the issue as one table: what | measured % | goal % | of what | MET or NOT MET."""
    rows = [("goal", "measured", "goal", "of", "verdict")]
    for what, pct, goal, of in goals:
        rows.append((what, "-" if pct is None else f"{pct:.1f}%", f">= {goal:.0f}%", of,
                     "not measured" if pct is None else "MET" if pct >= goal else "NOT MET"))
    print_table(title, rows, left=(0, 3, 4))


# ---------------------------------------------------------------- a kernel session

RESULT = "application/vnd.cudalab.result+json"


@contextlib.contextmanager
def session(env: dict[str, str] | None = None, program: Path | None = None) -> Iterator[object]:
    """A client of a fresh kernel (program, else the binary under test; a private kernelspec and
    kernel cache), or None after saying why when jupyter_client is missing (the benchmark then
    skips, succeeding)."""
    try:
        from jupyter_client import KernelManager
    except ImportError:
        print("needs jupyter_client (pip install -r requirements-test.txt): skipped")
        yield None
        return
    spec = tempfile.mkdtemp()
    os.makedirs(f"{spec}/kernels/cudalab")
    with open(f"{spec}/kernels/cudalab/kernel.json", "w") as f:
        json.dump({"argv": [str(program or binary()), "-f", "{connection_file}"], "display_name": "cudalab",
                   "language": "cuda"}, f)
    os.environ["JUPYTER_PATH"] = spec
    km = KernelManager(kernel_name="cudalab")
    km.start_kernel(env={**os.environ, "CUDALAB_CACHE_DIR": tempfile.mkdtemp(), **(env or {})})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(60)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def docs_of(msgs: list[dict]) -> list[dict]:
    return [m["content"]["data"][RESULT] for m in msgs
            if m["msg_type"] in ("execute_result", "display_data", "update_display_data")
            and RESULT in m["content"].get("data", {})]


def execute(kc, code: str) -> tuple[dict, list[dict], float]:
    """Runs a cell: (its reply, its iopub messages, the round trip's wall time in ms)."""
    t0 = time.perf_counter()
    mid = kc.execute(code)
    msgs = []
    while True:
        m = kc.get_iopub_msg(timeout=300)
        if m["parent_header"].get("msg_id") != mid:
            continue
        msgs.append(m)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=300)
    return reply["content"], msgs, (time.perf_counter() - t0) * 1e3


def doc_of(msgs: list[dict], magic: str) -> dict:
    return next(d for d in docs_of(msgs) if d["magic"] == magic)
