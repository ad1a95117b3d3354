"""jupyter console, the terminal frontend, driven in a pseudo-terminal (pexpect) as a user types:

  * a sweep's final table is printed (jupyter_console ignores update_display_data, so the final table
    must be an output of its own, not only an update of the progress display), and its progress
    display's first frame is not (the console would keep it above the table for good);
  * the kernel's own log prints nothing over the prompt in a healthy session (warnings only, unless
    CUDALAB_DEBUG=1);
  * a bare `exit` (or `quit`) leaves the console, and the kernel with it: the execute_reply carries
    ipykernel's ask_exit payload.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import psutil
import pexpect
import pytest

pytestmark = pytest.mark.timeout(120)

JUPYTER = Path(sys.executable).with_name("jupyter")
PROMPT = re.compile(r"In \[(\d+)\]: ")
SWEEP = "%matmul --size 32 --variant naive,tiled --reps 1 --warmup 0"


def console(*words: str) -> pexpect.spawn:
    env = {**os.environ, "CUDALAB_BACKEND": "cpu", "TERM": "dumb"}
    env.pop("CUDALAB_DEBUG", None)
    child = pexpect.spawn(str(JUPYTER), ["console", "--kernel", "cudalab", "--simple-prompt", *words],
                          env=env, encoding="utf-8", timeout=60, dimensions=(50, 200))
    child.expect(PROMPT)
    return child


def kernels_of(child: pexpect.spawn) -> list[psutil.Process]:
    return [p for p in psutil.Process(child.pid).children(recursive=True) if "cudalab" in " ".join(p.cmdline())]


def test_a_sweep_prints_its_final_table_and_exit_leaves():
    child = console()
    try:
        kernels = kernels_of(child)
        assert kernels, "jupyter console started no cudalab kernel"
        child.sendline(SWEEP)
        child.expect(PROMPT)
        out = child.before
        # the final table: its header and one row per point, each checked
        assert re.search(r"variant\s+m\s+n\s+k\s+tile", out), out
        assert re.search(r"^naive\s+32\s+32\s+32\b.*\bok\s*$", out, re.M), out
        assert re.search(r"^tiled\s+32\s+32\s+32\s+16\b.*\bok\s*$", out, re.M), out
        assert "[cudalab " not in out, out          # no log line over the prompt
        # no stale progress frame: its title, bar and counts are nowhere in the scrollback
        assert "running 1 of 2" not in out and "points done" not in out and "░" not in out, out
        assert out.count("Matrix multiplication") == 1, out
        child.sendline("exit")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, (child.exitstatus, child.before)
        gone, alive = psutil.wait_procs(kernels, timeout=10)
        assert not alive, [p.cmdline() for p in alive]
        assert "[cudalab " not in (child.before or ""), child.before
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_quit_leaves_too():
    child = console()
    try:
        child.sendline("  quit  ")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, (child.exitstatus, child.before)
    finally:
        if child.isalive():
            child.terminate(force=True)
