"""redteam.py — what every red-team test of issue 31 ("student code is contained") asserts after an
attack made by a student's %%kernel cell, in one place for the red-team files to import.

An attack runs in a kernel started in a `Site`: a private working directory (the kernel's cwd), a
private $HOME, a directory the attacks aim their marker files at, and a student cache shared by the
tests of a run (so that the correct kernel each test ends with is built once). After the attack:

  * `assert_contained` — nothing written outside the cache (the cwd, $HOME and the markers' directory
    are snapshotted before and compared after), no process left behind (no descendant of the kernel
    but its worker, and no process anywhere whose command line names the site), the kernel's own log
    grown by at most LOG_GROWTH_MAX, and the next cell (a correct vecadd kernel, then a %vecadd run of
    it) works;
  * `assert_refused` — the build refused the cell: a CompileError that names what it found and says
    that it is the CPU runner's rule;
  * `LaunchWatch` — the launch processes seen while a cell ran, with their seccomp mode, no-new-privs
    flag and CPU-time limit, so a test can say whether the sandbox was on while the student's code ran;
  * `processes_naming` and `kill_left` — the processes that name a test's private directory (an attack's
    daemon, wherever it went in the process tree), killed by pid and described, for tests that run the
    kernel through another program (nbgrader).

Test modules import these with `from redteam import ...` (tests/ is on sys.path, as for conftest).
"""
from __future__ import annotations

import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from conftest import KernelPair, cell, compiled, execute, outputs

CPU = {"CUDALAB_BACKEND": "cpu"}
# How much the kernel's own stderr may grow during an attack: a few log lines (a worker restart, a
# refused launch), never what the student's code wrote.
LOG_GROWTH_MAX = 4096
# How long a process an attack started may take to go after its cell ended, before it counts as left behind.
LINGER_S = 3.0

# The next cell: a correct kernel, built once per run (the cache is shared), then a run of it.
GOOD_NAME = "redteam_goodadd"
GOOD_KERNEL = f"""%%kernel --for vecadd --name {GOOD_NAME}
__global__ void {GOOD_NAME}(const float *A, const float *B, float *C, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}}
"""
GOOD_RUN = f"%vecadd --size 1000 --variant {GOOD_NAME} --reps 1 --warmup 0"


# ---------------------------------------------------------------- the places an attack could reach

@dataclass
class Site:
    """Where one test's kernel runs: root/{work,home,marks} are its own; cache is the run's student cache."""
    root: Path
    cache: Path
    token: str = field(default_factory=lambda: f"redteam-{uuid.uuid4().hex[:12]}")

    def __post_init__(self) -> None:
        self.root = self.root / self.token          # the token in every path: a process naming it is ours
        for d in (self.work, self.home, self.marks):
            d.mkdir(parents=True, exist_ok=True)
        self.cache.mkdir(parents=True, exist_ok=True)

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def marks(self) -> Path:
        """Where an attack's marker files would appear: a file here means the attack ran."""
        return self.root / "marks"

    def mark(self, name: str) -> Path:
        return self.marks / name

    def env(self) -> dict[str, str]:
        """The kernel's cache folders are the run's cache: the students' builds, and (XDG_CACHE_HOME) the
        host's copy bandwidth the CPU backend measures once and keeps (cpu/bandwidth.c)."""
        return {**CPU, "HOME": str(self.home), "CUDALAB_CACHE_DIR": str(self.cache),
                "XDG_CACHE_HOME": str(self.cache / "xdg")}

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """Every file under the working directory, $HOME and the markers' directory: path -> (size, mtime)."""
        files = {}
        for top in (self.work, self.home, self.marks):
            for dirpath, _, names in os.walk(top):
                for n in names:
                    p = Path(dirpath) / n
                    try:
                        st = p.lstat()
                    except FileNotFoundError:
                        continue
                    files[str(p)] = (st.st_size, st.st_mtime_ns)
        return files

    def written(self, before: dict[str, tuple[int, int]]) -> list[str]:
        """The files made or changed since the snapshot `before`."""
        return sorted(p for p, st in self.snapshot().items() if before.get(p) != st)


def start_in(site: Site, start_kernel, monkeypatch: pytest.MonkeyPatch, **env: str) -> KernelPair:
    """A kernel on the CPU backend whose cwd is site.work and whose $HOME is site.home."""
    monkeypatch.chdir(site.work)                    # the kernel inherits the test's cwd
    return start_kernel(env={**site.env(), **env})


# ---------------------------------------------------------------- processes

def is_worker(p: psutil.Process) -> bool:
    try:
        return "--worker" in p.cmdline()
    except psutil.Error:
        return False


def alive(procs) -> list[psutil.Process]:
    """Those of procs still running (a zombie has ended)."""
    out = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def processes_naming(token: str, exclude: tuple[int, ...] = ()) -> list[psutil.Process]:
    """Every running process (this one and exclude aside) with token in its command line: an attack's
    daemon names the test's private directory, wherever in the process tree it went."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if p.pid == os.getpid() or p.pid in exclude:
            continue
        if any(token in arg for arg in (p.info["cmdline"] or [])):
            found.append(p)
    return alive(found)


def stray_processes(pair: KernelPair, site: Site) -> list[psutil.Process]:
    """Processes alive that the kernel did not have before any cell ran: descendants of the kernel other
    than its worker, and any process whose command line names the site (an attack's daemon that left
    the kernel's tree)."""
    found = {p.pid: p for p in psutil.Process(pair.pid).children(recursive=True) if not is_worker(p)}
    for p in processes_naming(site.token, exclude=(pair.pid,)):
        found.setdefault(p.pid, p)
    return alive(found.values())


def describe(p: psutil.Process) -> str:
    try:
        return f"pid {p.pid} ({' '.join(p.cmdline())[:160]})"
    except psutil.Error:
        return f"pid {p.pid} (gone)"


def kill_left(find, linger: float = LINGER_S) -> list[str]:
    """Waits up to linger seconds for the processes find() returns to go; kills (by pid) those that
    stay and says which they were, so a failing test leaves nothing running either."""
    deadline = time.monotonic() + linger
    left = find()
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = find()
    described = [describe(p) for p in left]
    for p in left:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=3)
    return described


def assert_no_process_left(pair: KernelPair, site: Site, linger: float = LINGER_S) -> None:
    """No process of the attack outlives its cell (given `linger` seconds to go)."""
    left = kill_left(lambda: stray_processes(pair, site), linger)
    assert not left, "processes left behind by the cell: " + "; ".join(left)


# ---------------------------------------------------------------- what a cell said

def error_text(c: dict) -> str:
    """An error reply's message and traceback, as one text."""
    return "\n".join([c.get("evalue", ""), *c.get("traceback", [])])


def assert_refused(c: dict, *names: str) -> None:
    """The cell was refused at build time for the CPU runner: a CompileError whose message says so and
    names (any of) names, case aside: what the build found in the cell."""
    assert c["status"] == "error", f"the cell was accepted; expected a CompileError naming {' or '.join(names)}"
    assert c["ename"] == "CompileError", f"{c['ename']}: {c['evalue']}"
    assert "CPU runner" in c["evalue"], c["evalue"]
    text = error_text(c).lower()
    assert any(n.lower() in text for n in names), \
        f"the refusal does not name {' or '.join(names)}: {error_text(c)[:1200]}"


def assert_next_cell_works(kc) -> None:
    """A correct kernel builds, passes its quick check, and runs right: the session survived the attack."""
    c, text, doc = compiled(kc, GOOD_KERNEL)
    assert c["status"] == "ok", f"the next %%kernel cell failed: {text[:1500]}"
    assert doc and doc["check"]["passed"] is True, text[:1500]
    c, text, doc = cell(kc, GOOD_RUN)
    assert c["status"] == "ok", f"the next %vecadd cell failed: {text[:1500]}"
    assert doc["runs"][0]["check"]["passed"] is True, text[:1500]


class Attack:
    """One attack's before and after: `with Attack(pair, site) as a:` snapshots the files and the
    kernel's log; a.run(code) runs a cell; leaving the block asserts nothing was written outside the
    cache, no process was left behind, the log did not grow, and the next cell works."""

    def __init__(self, pair: KernelPair, site: Site, log_growth_max: int = LOG_GROWTH_MAX):
        self.pair, self.site, self.log_growth_max = pair, site, log_growth_max

    def __enter__(self) -> "Attack":
        self.files = self.site.snapshot()
        self.log_size = self.log_bytes()
        return self

    def log_bytes(self) -> int:
        path = self.pair.log.path
        return path.stat().st_size if path.exists() else 0

    def run(self, code: str, timeout: float = 120) -> tuple[dict, str, dict | None]:
        return compiled(self.pair.kc, code) if code.startswith("%%kernel") else cell(self.pair.kc, code, timeout)

    def __exit__(self, exc_type, *_) -> None:
        if exc_type is not None:            # the test failed already: still leave nothing running
            kill_left(lambda: stray_processes(self.pair, self.site), linger=0)
            return
        assert_contained(self.pair, self.site, self.files, self.log_size, self.log_growth_max)


def assert_contained(pair: KernelPair, site: Site, files_before: dict, log_size_before: int,
                     log_growth_max: int = LOG_GROWTH_MAX) -> None:
    """After an attack: no process left, no file written outside the cache, the kernel's log (nearly)
    unchanged, and the next cell works."""
    assert_no_process_left(pair, site)
    written = site.written(files_before)
    assert not written, f"files written outside the student cache: {written}"
    path = pair.log.path
    grown = (path.stat().st_size if path.exists() else 0) - log_size_before
    assert grown <= log_growth_max, \
        f"the kernel's own log grew by {grown} bytes during the attack: {pair.log.text()[-600:]!r}"
    assert_next_cell_works(pair.kc)


# ---------------------------------------------------------------- the launch processes, watched

@dataclass
class Seen:
    """One launch process as last seen: its sandbox state at that moment and how long it was watched."""
    pid: int
    cmdline: str
    first: float
    last: float
    seccomp: int | None = None          # /proc/PID/status Seccomp: 0 none, 1 strict, 2 filter
    no_new_privs: int | None = None
    cpu_limit: str | None = None        # /proc/PID/limits "Max cpu time" soft limit

    @property
    def watched_s(self) -> float:
        return self.last - self.first


def _proc_state(pid: int) -> tuple[int | None, int | None, str | None]:
    seccomp = nnp = cpu = None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Seccomp:"):
                seccomp = int(line.split()[1])
            elif line.startswith("NoNewPrivs:"):
                nnp = int(line.split()[1])
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max cpu time"):
                cpu = line.split()[3]
    except (OSError, ValueError, IndexError):
        return None, None, None
    return seccomp, nnp, cpu


# the host toolchain the build runs (and any wrapper that confines it): not a launch
TOOLCHAIN = re.compile(r"(.*-)?(g\+\+|c\+\+|gcc|cc|cc1plus|cc1|as|ld|ld\.bfd|ld\.gold|collect2)(-[\d.]+)?")
TOOLCHAIN_ARG = re.compile(r".*\.(cpp|cc|o|a)$|.*[gc]\+\+.*")


def is_toolchain(p: psutil.Process) -> bool:
    try:
        return bool(TOOLCHAIN.fullmatch(p.name())) or any(TOOLCHAIN_ARG.fullmatch(a) for a in p.cmdline()[1:])
    except psutil.Error:
        return True


class LaunchWatch:
    """Samples the kernel's descendants (its worker and the toolchain aside) every few milliseconds while
    a cell runs: `with LaunchWatch(pair) as w: ...`, then w.seen (pid -> Seen) and w.unsandboxed()."""

    def __init__(self, pair: KernelPair, period: float = 0.01):
        self.pair, self.period = pair, period
        self.seen: dict[int, Seen] = {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        now = time.monotonic()
        try:
            procs = psutil.Process(self.pair.pid).children(recursive=True)
        except psutil.Error:
            return
        for p in procs:
            try:
                if is_worker(p) or is_toolchain(p):
                    continue
                cmd = " ".join(p.cmdline())
            except psutil.Error:
                continue
            seccomp, nnp, cpu = _proc_state(p.pid)
            if seccomp is None:
                continue
            s = self.seen.setdefault(p.pid, Seen(p.pid, cmd, now, now))
            s.last, s.seccomp, s.no_new_privs, s.cpu_limit = now, seccomp, nnp, cpu

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.period)

    def __enter__(self) -> "LaunchWatch":
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(5)

    def long_lived(self, min_s: float) -> list[Seen]:
        """The launch processes watched for at least min_s: past any set-up, inside the student's code."""
        return [s for s in self.seen.values() if s.watched_s >= min_s]

    def unsandboxed(self, min_s: float) -> list[Seen]:
        """Of the long-lived launch processes, those whose last sample had no seccomp filter, no
        no-new-privs flag or no CPU-time limit."""
        return [s for s in self.long_lived(min_s)
                if s.seccomp != 2 or s.no_new_privs != 1 or s.cpu_limit == "unlimited"]


def run_watched(pair: KernelPair, code: str, timeout: float = 120) -> tuple[dict, str, LaunchWatch]:
    """Runs a cell while watching its launch processes: (reply content, its outputs' text, the watch)."""
    with LaunchWatch(pair) as watch:
        reply, msgs = execute(pair.kc, code, timeout=timeout)
    text = "\n".join(m["content"].get("text", "") or m["content"].get("evalue", "")
                     or m["content"].get("data", {}).get("text/plain", "") for m in outputs(msgs))
    return reply["content"], text, watch
