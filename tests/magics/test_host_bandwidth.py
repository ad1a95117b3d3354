"""The CPU backend's measured copy bandwidth (cpu/bandwidth.c) is the host's, kept for this boot:
measured by the first process (a kernel's worker, at its start), kept in
$XDG_CACHE_HOME/cudalab/host-bandwidth under a key of the boot, the buffer and the thread count, and
read back by every later process instead of measuring again (which faults in four times the host's
largest cache). The figure is what %reduce and the other memory-bound analogues compare to
(device.measured_bandwidth_gbs)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import run_cell

CELL = "%reduce --size 65536 --variant convergent --reps 1 --warmup 0"


def measured(cache: Path) -> float:
    rc, docs, out, err = run_cell(CELL, env={"CUDALAB_BACKEND": "cpu", "XDG_CACHE_HOME": str(cache)})
    assert rc == 0 and len(docs) == 1, (out, err)
    return docs[0]["device"]["measured_bandwidth_gbs"]


def same(gbs: float):
    """The kept figure as the JSON documents print it (12 significant digits)."""
    return pytest.approx(gbs, rel=1e-11)


def kept(cache: Path) -> tuple[str, float]:
    key, gbs = (cache / "cudalab" / "host-bandwidth").read_text().rsplit(" ", 1)
    return key, float(gbs)


def test_the_first_process_measures_and_the_next_reads_the_same_figure(tmp_path):
    first = measured(tmp_path)
    key, gbs = kept(tmp_path)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert key.split(" ")[0] == boot and first == same(gbs) and gbs > 0
    assert measured(tmp_path) == first


def test_a_kept_figure_is_used_only_under_its_own_key(tmp_path):
    measured(tmp_path)
    key, _ = kept(tmp_path)
    path = tmp_path / "cudalab" / "host-bandwidth"
    path.write_text(f"{key} 12345.5\n")
    assert measured(tmp_path) == 12345.5                   # read, not measured
    boot, rest = key.split(" ", 1)
    path.write_text(f"{boot[::-1]} {rest} 12345.5\n")         # another boot of the host: measure again
    again = measured(tmp_path)
    assert again != 12345.5 and kept(tmp_path)[0] == key and again == same(kept(tmp_path)[1])


def test_a_kernels_worker_keeps_the_figure_at_its_start(start_kernel, tmp_path):
    cache = tmp_path / "cache"
    start_kernel(env={"CUDALAB_BACKEND": "cpu", "XDG_CACHE_HOME": str(cache)})
    path = cache / "cudalab" / "host-bandwidth"
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:       # no cell asked: the worker's start
        time.sleep(0.05)
    assert kept(cache)[1] > 0
    assert measured(cache) == same(kept(cache)[1])
