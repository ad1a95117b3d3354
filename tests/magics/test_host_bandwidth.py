"""The CPU backend's copy bandwidth (cpu/bandwidth.c), what its memory-bound analogues compare to:
measured once per boot and kept in the user's cache folder ($XDG_CACHE_HOME/cudalab/host/copy-bandwidth),
read back by later processes only when it is this boot's measure, for these threads and this buffer; a
figure that is not (another boot, a mangled file, a figure no host has, a link, a FIFO) is measured
again and replaced. A measure under way in another process is waited for, not repeated beside it
(each would share the memory bus and keep about half), and a lock held too long is not waited on
forever. Each test has a cache folder of its own."""
from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import kernel_binary, run_cell

CELL = "%reduce --size 100000 --variant convergent --reps 2"
FORMAT = "cudalab-copy-bandwidth-1"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
BOOT = BOOT_ID.read_text().strip() if BOOT_ID.is_file() else None


def env_of(cache: Path) -> dict[str, str]:
    return {"CUDALAB_BACKEND": "cpu", "XDG_CACHE_HOME": str(cache)}


def kept(cache: Path) -> Path:
    return cache / "cudalab" / "host" / "copy-bandwidth"


def figure(env: dict[str, str]) -> float:
    """The copy bandwidth the cell's document says it compared to."""
    rc, docs, _, err = run_cell(CELL, env=env)
    assert rc == 0 and err == "", err
    (doc,) = docs
    gbs = doc["device"]["measured_bandwidth_gbs"]
    assert all(run["bandwidth_gbs"] == gbs for run in doc["runs"])
    return gbs


@pytest.fixture
def measured(tmp_path) -> tuple[Path, list[str]]:
    """A cache folder with this boot's measure in it, and that measure's fields."""
    if BOOT is None:        # then the measure is not kept (cpu/bandwidth.c): only the last test applies
        pytest.skip(f"no {BOOT_ID} here: each process measures, nothing is kept")
    gbs = figure(env_of(tmp_path))
    fields = kept(tmp_path).read_text().split()
    assert len(fields) == 5 and fields[:2] == [FORMAT, BOOT], fields
    assert 1 <= int(fields[2]) <= os.cpu_count(), fields        # the host threads the copy ran on
    assert int(fields[3]) >= 32 << 20, fields                     # the buffer: at least 32 MiB
    assert float(fields[4]) == pytest.approx(gbs, rel=1e-5)
    return tmp_path, fields


def test_a_kept_measure_of_this_boot_is_read_not_measured_again(measured):
    cache, fields = measured
    kept(cache).write_text(" ".join(fields[:4] + ["12.5"]) + "\n")
    assert figure(env_of(cache)) == 12.5
    assert figure(env_of(cache)) == 12.5           # and again: nothing rewrote it


@pytest.mark.parametrize("mangle", [
    lambda f: [f[0], "00000000-0000-0000-0000-000000000000", *f[2:4], "12.5"],   # another boot
    lambda f: [*f[:2], str(int(f[2]) + 1), f[3], "12.5"],                       # other threads
    lambda f: [*f[:3], str(int(f[3]) * 2), "12.5"],                             # another buffer
    lambda f: ["cudalab-copy-bandwidth-0", *f[1:4], "12.5"],                    # an older measure
    lambda f: [*f[:4], "nan"],
    lambda f: [*f[:4], "inf"],
    lambda f: [*f[:4], "-3"],
    lambda f: [*f[:4], "1e9"],                                                  # no host has it
    lambda f: [*f[:4]],                                                         # cut short
    lambda f: [],
    lambda f: ["\x00\xff" * 300],
], ids=["boot", "threads", "buffer", "format", "nan", "inf", "negative", "absurd", "short", "empty", "binary"])
def test_a_figure_that_is_not_this_boots_measure_is_measured_again(measured, mangle):
    cache, fields = measured
    kept(cache).write_bytes((" ".join(mangle(fields)) + "\n").encode("latin-1"))
    gbs = figure(env_of(cache))
    assert gbs != 12.5 and 0.01 <= gbs <= 1e5
    again = kept(cache).read_text().split()
    assert again[:4] == fields[:4] and float(again[4]) == pytest.approx(gbs, rel=1e-5)


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge"])
def test_what_is_not_a_small_file_is_never_read(measured, kind):
    """A link (to a file of this boot's figure), a FIFO (which would block a reader) or a file past 4 KiB
    at the kept measure's place: measured instead, the place replaced by a file."""
    cache, fields = measured
    path = kept(cache)
    path.unlink()
    if kind == "symlink":
        (cache / "elsewhere").write_text(" ".join(fields[:4] + ["12.5"]) + "\n")
        path.symlink_to(cache / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(" ".join(fields[:4] + ["12.5"]) + "\n" + " " * 5000)
    assert figure(env_of(cache)) != 12.5
    assert path.is_file() and not path.is_symlink()


def test_a_measure_under_way_elsewhere_is_waited_for_and_read(measured):
    """While another process holds the lock (measuring), a cell waits, then reads what it kept."""
    cache, fields = measured
    kept(cache).unlink()
    with open(kept(cache).with_name("copy-bandwidth.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cell = subprocess.Popen([str(kernel_binary()), "--run", CELL, "--json"], env={**os.environ, **env_of(cache)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert cell.poll() is None, "the cell did not wait for the measure under way"
        kept(cache).write_text(" ".join(fields[:4] + ["7.25"]) + "\n")
        fcntl.flock(lock, fcntl.LOCK_UN)
        out, err = cell.communicate(timeout=60)
    assert cell.returncode == 0 and err == "", err
    assert '"measured_bandwidth_gbs": 7.25' in out or '"measured_bandwidth_gbs":7.25' in out, out[:400]


def test_a_lock_held_too_long_is_not_waited_on_forever(measured):
    """A holder that never lets go (stopped, say): after 5 s the cell measures by itself, and keeps it."""
    cache, fields = measured
    kept(cache).unlink()
    with open(kept(cache).with_name("copy-bandwidth.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        gbs = figure(env_of(cache))
        waited = time.monotonic() - started
    assert waited >= 5.0, waited
    assert float(kept(cache).read_text().split()[4]) == pytest.approx(gbs, rel=1e-5)


def test_without_a_cache_folder_each_process_measures(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    rc, docs, _, err = run_cell(CELL, env={**env, "CUDALAB_BACKEND": "cpu"})
    assert rc == 0 and err == "", err
    assert docs[0]["device"]["measured_bandwidth_gbs"] > 0
