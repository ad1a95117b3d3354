#!/usr/bin/env python3
"""bench/protocol.py — protocol overhead of cudalab against ipykernel, through one client.

Both kernels are driven by the same jupyter_client code from this venv; ipykernel's kernelspec is
installed with `python -m ipykernel install --prefix` into a temporary JUPYTER_PATH next to
cudalab's (argv[0] = $CUDALAB_BIN or build/bin/cudalab). Measured per kernel:

  start -> ready    wall time from launching the kernel to its first kernel_info_reply, and the
                    kernel process's own CPU time (user + system, psutil) at that moment
  execute RTT       a trivial cell (cudalab "%echo hi", ipykernel "print('hi')") from sending
                    the request to its idle status; median and p90 over RUNS after warm-up
  kernel_info RTT   median over INFO_RUNS
  RSS               of the kernel process after those runs (cudalab: the device worker apart)

Prints one table (metric | cudalab | ipykernel | ratio cudalab/ipykernel) and the targets, met or
not. A benchmark, not a test: it asserts nothing and always exits 0 unless a kernel fails.
Usage: .venv/bin/python bench/protocol.py [--runs N] [--info-runs N] [--starts N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import psutil
import zmq
from jupyter_client import KernelManager

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab" / "kernel.json"
CELLS = {"cudalab": "%echo hi", "python3": "print('hi')"}
NAMES = {"cudalab": "cudalab", "python3": "ipykernel"}


def cudalab_binary() -> Path:
    p = Path(os.environ.get("CUDALAB_BIN", "build/bin/cudalab"))
    return p if p.is_absolute() else REPO / p


def setup_jupyter_path(root: Path) -> None:
    data = root / "share" / "jupyter"
    spec_dir = data / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True)
    spec = json.loads(TEMPLATE.read_text())
    spec["argv"][0] = str(cudalab_binary())
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(root),
                    "--name", "python3"], check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = str(data)
    os.environ["JUPYTER_RUNTIME_DIR"] = str(root / "runtime")
    os.environ["JUPYTER_CONFIG_DIR"] = str(root / "config")
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    os.environ.pop("CUDALAB_DEBUG", None)


def cpu_seconds(p: psutil.Process) -> float:
    """user + system CPU seconds of the process (psutil; clock-tick resolution, 10 ms here)."""
    t = p.cpu_times()
    return t.user + t.system


def cpu_seconds_precise(pid: int) -> float | None:
    """Time on CPU from /proc/PID/schedstat (nanoseconds, Linux), to resolve what ticks cannot."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def time_to_ready(kernel_name: str) -> tuple[float, float, float | None]:
    """(wall seconds from launch to the first kernel_info_reply, kernel CPU seconds then
    (psutil), the same from schedstat or None).

    The request goes out at once from a DEALER that retries its connection every millisecond,
    so the time is the kernel's start-up, not the client's reconnect back-off."""
    km = KernelManager(kernel_name=kernel_name)
    ctx = zmq.Context()
    try:
        t0 = time.perf_counter()
        km.start_kernel(stderr=subprocess.DEVNULL)
        info = km.get_connection_info()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.setsockopt(zmq.RECONNECT_IVL, 1)
        sock.connect(f"tcp://{info['ip']}:{info['shell_port']}")
        msg = km.session.msg("kernel_info_request", {})
        km.session.send(sock, msg)
        if not sock.poll(60_000):
            raise RuntimeError(f"{kernel_name}: no kernel_info_reply within 60 s")
        sock.recv_multipart()
        wall = time.perf_counter() - t0
        pid = km.provisioner.process.pid
        cpu, precise = cpu_seconds(psutil.Process(pid)), cpu_seconds_precise(pid)
        sock.close(0)
        return wall, cpu, precise
    finally:
        ctx.destroy(linger=0)
        km.shutdown_kernel(now=True)


def execute_rtt(kc, code: str) -> float:
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=30)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    dt = time.perf_counter() - t0
    while True:                                     # the reply, outside the timing
        r = kc.get_shell_msg(timeout=30)
        if r["parent_header"].get("msg_id") == msg_id:
            if r["content"]["status"] != "ok":
                raise RuntimeError(f"{code!r} failed: {r['content']}")
            return dt


def kernel_info_rtt(kc) -> float:
    t0 = time.perf_counter()
    msg_id = kc.kernel_info()
    while True:
        r = kc.get_shell_msg(timeout=30)
        if r["parent_header"].get("msg_id") == msg_id:
            return time.perf_counter() - t0


def drain_iopub(kc) -> None:
    while True:
        try:
            kc.get_iopub_msg(timeout=0.05)
        except Empty:
            return


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def bench_kernel(kernel_name: str, runs: int, info_runs: int, starts: int) -> dict:
    readies = [time_to_ready(kernel_name) for _ in range(starts)]
    precise = [p for _, _, p in readies if p is not None]
    res = {"ready_wall": statistics.median(w for w, _, _ in readies),
           "ready_cpu": statistics.median(c for _, c, _ in readies),
           "ready_cpu_precise": statistics.median(precise) if precise else None}
    km = KernelManager(kernel_name=kernel_name)
    km.start_kernel(stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        code = CELLS[kernel_name]
        for _ in range(max(10, runs // 10)):       # warm-up
            execute_rtt(kc, code)
        ex = [execute_rtt(kc, code) for _ in range(runs)]
        drain_iopub(kc)
        for _ in range(20):
            kernel_info_rtt(kc)
        info = [kernel_info_rtt(kc) for _ in range(info_runs)]
        drain_iopub(kc)
        proc = psutil.Process(km.provisioner.process.pid)
        res.update(exec_median=statistics.median(ex), exec_p90=percentile(ex, 0.9),
                   info_median=statistics.median(info), rss=proc.memory_info().rss,
                   uss=proc.memory_full_info().uss,
                   children_rss=sum(c.memory_info().rss for c in proc.children(recursive=True)),
                   children=len(proc.children(recursive=True)))
    finally:
        kc.stop_channels()
        km.shutdown_kernel()
    return res


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def fmt_mb(b: float) -> str:
    return f"{b / 1e6:.1f} MB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="execute round trips per kernel")
    ap.add_argument("--info-runs", type=int, default=500, help="kernel_info round trips per kernel")
    ap.add_argument("--starts", type=int, default=3, help="start-up measurements per kernel")
    args = ap.parse_args()
    if not cudalab_binary().is_file():
        print(f"bench: no kernel binary at {cudalab_binary()}: run `make` first", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cudalab-bench-") as tmp:
        setup_jupyter_path(Path(tmp))
        results = {k: bench_kernel(k, args.runs, args.info_runs, args.starts) for k in ("cudalab", "python3")}
    c, p = results["cudalab"], results["python3"]

    rows = [
        ("start -> ready (wall)", fmt_ms(c["ready_wall"]), fmt_ms(p["ready_wall"]), c["ready_wall"] / p["ready_wall"]),
        ("start -> ready (kernel CPU time, psutil)", fmt_ms(c["ready_cpu"]), fmt_ms(p["ready_cpu"]),
         c["ready_cpu"] / p["ready_cpu"] if p["ready_cpu"] else None),
    ]
    if c["ready_cpu_precise"] is not None and p["ready_cpu_precise"] is not None:
        rows.append(("start -> ready (kernel CPU time, schedstat)", fmt_ms(c["ready_cpu_precise"]),
                     fmt_ms(p["ready_cpu_precise"]), c["ready_cpu_precise"] / p["ready_cpu_precise"]))
    rows += [
        (f"execute RTT median ({args.runs} runs)", fmt_ms(c["exec_median"]), fmt_ms(p["exec_median"]),
         c["exec_median"] / p["exec_median"]),
        ("execute RTT p90", fmt_ms(c["exec_p90"]), fmt_ms(p["exec_p90"]), c["exec_p90"] / p["exec_p90"]),
        (f"kernel_info RTT median ({args.info_runs} runs)", fmt_ms(c["info_median"]), fmt_ms(p["info_median"]),
         c["info_median"] / p["info_median"]),
        ("kernel RSS", fmt_mb(c["rss"]), fmt_mb(p["rss"]), c["rss"] / p["rss"]),
        ("kernel USS (pages of its own)", fmt_mb(c["uss"]), fmt_mb(p["uss"]), c["uss"] / p["uss"]),
        ("child processes RSS (cudalab: device worker)", f"{fmt_mb(c['children_rss'])} ({c['children']})",
         f"{fmt_mb(p['children_rss'])} ({p['children']})", None),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows + [("", "cudalab", "", 0)])
    w2 = max(len(r[2]) for r in rows + [("", "", "ipykernel", 0)])
    print(f"{'metric':<{w0}} | {'cudalab':>{w1}} | {'ipykernel':>{w2}} | ratio (cudalab/ipykernel)")
    print(f"{'-' * w0}-|-{'-' * w1}-|-{'-' * w2}-|-{'-' * 25}")
    for name, a, b, ratio in rows:
        print(f"{name:<{w0}} | {a:>{w1}} | {b:>{w2}} | {'' if ratio is None else f'{ratio:.3f}'}")

    ready_cpu = max(c["ready_cpu"], c["ready_cpu_precise"] or 0.0)
    targets = [
        ("execute RTT median <= 1/5 of ipykernel's", c["exec_median"] <= p["exec_median"] / 5,
         f"{c['exec_median'] / p['exec_median']:.3f} of ipykernel's"),
        ("start -> ready <= 50 ms of kernel CPU time", ready_cpu <= 0.050, fmt_ms(ready_cpu)),
        ("kernel RSS <= 10 MB", c["rss"] <= 10e6, fmt_mb(c["rss"])),
    ]
    print("\ntargets:")
    for name, ok, value in targets:
        print(f"  {'met    ' if ok else 'NOT met'}  {name}  ({value})")
    print(f"\n(bench wall time {time.perf_counter() - t_start:.1f} s; python {sys.version.split()[0]}, "
          f"cudalab {cudalab_binary()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
