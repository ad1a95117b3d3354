#!/usr/bin/env python3
"""bench/stall.py — what hostile or oversized input costs the kernel: heartbeat stalls and memory.

One cudalab kernel is started by jupyter_client (argv[0] = $CUDALAB_BIN or build/bin/cudalab, CPU
backend) while a heartbeat monitor pings it every 50 ms from its own thread, and a sampler reads
the kernel process's RSS every 5 ms. Each scenario then reports:

  worst hb       the longest any ping waited for its echo during the scenario
  peak RSS       the kernel process's peak resident memory during the scenario (worker apart)
  held after     its RSS 2 s after the scenario, against the RSS before it
  answer         what the client got back (an error name, "ok", or "peer dropped")

The reference in the same run is the idle kernel: its worst heartbeat over 2 s and its RSS. The
goal is a worst stall under 100 ms in every scenario and memory that returns to the idle figure.
A benchmark, not a test: it asserts nothing. Usage: .venv/bin/python bench/stall.py [--quick]
(--quick divides the sizes by 10).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from queue import Empty

import psutil
import zmq
from jupyter_client import KernelManager

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from conftest import HeartbeatMonitor, ZmtpPeer  # noqa: E402  (the same helpers the tests use)

MB = 1 << 20


class RssSampler:
    """Peak RSS of one process, sampled every 5 ms from a thread."""

    def __init__(self, pid: int):
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.005)

    def __enter__(self) -> "RssSampler":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def start_kernel(root: Path) -> tuple[KernelManager, object]:
    data = root / "share" / "jupyter"
    spec_dir = data / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True)
    spec = json.loads((REPO / "share/jupyter/kernelspecs/cudalab/kernel.json").read_text())
    binary = Path(os.environ.get("CUDALAB_BIN", "build/bin/cudalab"))
    spec["argv"][0] = str(binary if binary.is_absolute() else REPO / binary)
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    os.environ["JUPYTER_PATH"] = str(data)
    os.environ["JUPYTER_RUNTIME_DIR"] = str(root)
    km = KernelManager(kernel_name="cudalab")
    km.start_kernel(env={**os.environ, "CUDALAB_BACKEND": "cpu"}, stderr=open(root / "kernel.log", "wb"))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=30)
    return km, kc


class Target:
    """The kernel under test: its client, connection info and process."""

    def __init__(self, kc, conn: dict, proc: psutil.Process):
        self.kc, self.conn, self.proc = kc, conn, proc

    def alive(self) -> bool:
        return self.proc.is_running() and self.proc.status() != psutil.STATUS_ZOMBIE

    def cell(self, code: str, timeout: float = 300) -> str:
        """Executes code; returns 'ok', the error's ename, or 'no reply' (at once if the kernel died)."""
        msg_id = self.kc.execute(code)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return "no reply (kernel died)"
            try:
                m = self.kc.get_shell_msg(timeout=1)
            except Empty:
                continue
            if m["parent_header"].get("msg_id") == msg_id:
                c = m["content"]
                return "ok" if c["status"] == "ok" else c.get("ename", c["status"])
        return "no reply"


def raw_socket(conn: dict, port: str, kind: int) -> zmq.Socket:
    s = zmq.Context.instance().socket(kind)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(f"tcp://{conn['ip']}:{conn[port]}")
    return s




def scenarios(scale: int) -> list[tuple[str, callable]]:
    big = 50 * MB // scale

    def cell_histo(t):
        return t.cell("%%histo --variant privatized\n" + "abcdefgh " * (big // 9))

    def cell_echo(t):
        return t.cell("%echo " + "x" * big)

    def cell_score(t):
        return t.cell("%score " + "+".join(["1"] * 8000))

    def hb_frame(t):
        s = raw_socket(t.conn, "hb_port", zmq.REQ)
        s.send(b"x" * (1024 * MB // scale))
        got = s.poll(3000)
        s.close()
        return "echoed" if got else "peer dropped"

    def hb_parts(t):
        s = raw_socket(t.conn, "hb_port", zmq.REQ)
        part = b"y" * (100 * MB // scale)
        s.send_multipart([part] * 20)
        got = s.poll(3000)
        s.close()
        return "echoed" if got else "peer dropped"

    def sub_topics(t):
        subs = []
        for i in range(5):     # by hand: a pyzmq SUB would keep the topic in its own trie
            s = ZmtpPeer(t.conn["ip"], t.conn["iopub_port"], "SUB")
            s.send(b"\x01" + bytes([65 + i]) * big)
            subs.append(s)
        time.sleep(1.0)
        for s in subs:
            s.close()
        return "sent"

    def shell_frames(t):
        s = raw_socket(t.conn, "shell_port", zmq.DEALER)
        for _ in range(10):
            s.send_multipart([b"<IDS|MSG>", b"", b"{}", b"{}", b"{}", b"z" * (100 * MB // scale)])
        time.sleep(1.0)
        s.close()
        return "sent"

    def small_cells(t):
        for i in range(5000 // scale):
            t.cell(f"%echo cell {i}")
        return "ok"

    return [("%%histo, 50 MB body", cell_histo), ("%echo, 50 MB line", cell_echo),
            ("heartbeat, 1 GiB frame", hb_frame), ("heartbeat, 20 x 100 MB parts", hb_parts),
            ("iopub, 5 x 50 MB topics", sub_topics), ("shell, 10 x 100 MB unsigned", shell_frames),
            ("5,000 small cells", small_cells), ("%score, 8,000 terms", cell_score)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sizes divided by 10")
    scale = 10 if ap.parse_args().quick else 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        km, kc = start_kernel(Path(tmp))
        conn = km.get_connection_info(session=False)
        pid = km.provisioner.process.pid
        proc = psutil.Process(pid)
        target = Target(kc, conn, proc)
        with HeartbeatMonitor(conn) as hb, RssSampler(pid) as rs:
            time.sleep(2)
        idle_hb, idle_rss = hb.worst, proc.memory_info().rss
        rows.append(("idle kernel (reference)", f"{idle_hb * 1e3:.1f}", f"{rs.peak / MB:.1f}",
                     f"{idle_rss / MB:.1f}", "-", "-"))
        for name, fn in scenarios(scale):
            before = proc.memory_info().rss if proc.is_running() else 0
            with HeartbeatMonitor(conn) as hb, RssSampler(pid) as rs:
                t0 = time.monotonic()
                try:
                    answer = fn(target)
                except Exception as e:  # a benchmark reports, it does not stop
                    answer = f"{type(e).__name__}"
                took = time.monotonic() - t0
            time.sleep(2)
            alive = target.alive()
            after = proc.memory_info().rss if alive else 0
            answer += "; next cell " + (("ok" if target.cell("%echo still here", timeout=30) == "ok" else "NO ANSWER")
                                      if alive else "KERNEL DEAD")
            rows.append((name, f"{hb.worst * 1e3:.1f}", f"{rs.peak / MB:.1f}",
                         f"{before / MB:.1f} -> {after / MB:.1f}", f"{took:.1f}", answer))
            if not alive:
                break
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    head = ("scenario", "worst hb ms", "peak RSS MB", "RSS before -> 2 s after", "s", "answer")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    worst = max(float(r[1]) for r in rows[1:])
    print(f"\nworst heartbeat stall {worst:.1f} ms (goal < 100 ms; idle {idle_hb * 1e3:.1f} ms, "
          f"{worst / max(idle_hb * 1e3, 0.01):.0f}x idle)")


if __name__ == "__main__":
    main()
