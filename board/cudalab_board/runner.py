"""runner.py — the board's runner: takes queued submissions one at a time and runs each through a real
cudalab kernel (jupyter_client; the binary in $CUDALAB_BIN; the CPU backend where there is no GPU),
then writes its outcome into the store.

A submission's turn, in a fresh kernel of its own (nothing a submission leaves in a kernel meets the next):

 1. the `%%kernel --for FAMILY --name sub_<id>` cell with the submitted source: the build, its audit and
    quick check, and the family's lesson checks; any failure is the submission's finding;
 2. for every hidden size and seed of the problem, the family's magic with the problem's references and
    the submission's kernel in the same run, under TIMING_FLAGS: `--reps auto` for a median with its
    confidence interval, and every timed rep checked on fresh inputs of its own (stricter than a cell's
    two reps); a wrong rep, a wrong result at any size or a crash is the finding;
 3. the physical bound: a median below the time the problem's work takes at the device's roof (FP32
    peak, or memory bandwidth) cannot be honest, whatever the checks said: "impossible: …".

Ranked or not, the result keeps each run's times so the board can show the references as lines. The GPU
is the kernel's to share: its admission times the measured sections with the GPU to itself.

The runner needs of the store only this (store.Store has it; the service hands the same object):

    store.requeue_interrupted()
        at start: what a stopped service left running goes back in the queue

    store.claim_next_submission() -> dict | None
        the oldest queued submission, marked running: {"id", "problem", "name", "family", "source", "flags"}
    store.finish_submission(id, status, result, finding=None, line=None)
        status "ranked" | "failed" | "error"; result a JSON-able dict (RESULT below); finding the first
        thing wrong, line the student's source line it names, if any
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .problems import RATE_KEYS, Problem, submission_flags
from .ranking import geomean_interval, impossible_finding, physical_bound_ms, score_sizes

log = logging.getLogger("cudalab_board.runner")

# How the board times a submission: one place. `--check-reps all` checks every timed rep on inputs of its
# own (the CPU runner does so whatever the flag says), stricter than a cell's two reps drawn at random.
CHECK_REPS_FLAG = "--check-reps all"
TIMING_FLAGS = f"--reps auto {CHECK_REPS_FLAG}"
RESULT_MIME = "application/vnd.cudalab.result+json"
# The longest one cell of a submission's turn may take (a hang at a hidden size is the submission's).
CELL_TIMEOUT_S = 600
KERNEL_START_TIMEOUT_S = 60
POLL_S = 1.0
# Environment the service has that student code and its kernel must never see: the board's own hub token
# and the class view (a board run posts no quick checks).
SCRUBBED_ENV = ("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "CUDALAB_BOARD_TOKEN", "CUDALAB_BOARD_URL",
                "CUDALAB_CLASS_VIEW", "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_OAUTH_CALLBACK_URL")
LINE_IN_TEXT = re.compile(r"\bline (\d+)\b")
LINE_AT_START = re.compile(r"^\s*line \d+:")


@dataclass
class Outcome:
    """What one turn found: the store's status, finding and line, and the result document."""
    status: str
    result: dict = field(default_factory=dict)
    finding: str | None = None
    line: int | None = None


class CellTimeout(Exception):
    pass


# ---------------------------------------------------------------- a kernel for one submission

class KernelSession:
    """A cudalab kernel started through jupyter_client from a private kernelspec naming `binary`, in a
    private working directory; cells run one at a time; stop() ends it and its worker."""

    def __init__(self, binary: Path, env: dict[str, str], workdir: Path):
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager
        specs = workdir / "kernels"
        (specs / "cudalab").mkdir(parents=True)
        (specs / "cudalab" / "kernel.json").write_text(json.dumps(
            {"argv": [str(binary), "-f", "{connection_file}"], "display_name": "cudalab (board)",
             "language": "cudalab", "interrupt_mode": "signal"}))
        (workdir / "cwd").mkdir()
        self.km = KernelManager(kernel_name="cudalab",
                                kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]))
        self.km.start_kernel(env=env, cwd=str(workdir / "cwd"))
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=KERNEL_START_TIMEOUT_S)
        except Exception:
            self.stop()
            raise

    def run(self, code: str, timeout: float = CELL_TIMEOUT_S) -> tuple[dict, dict | None]:
        """One cell: (the reply's content, its last result document or None). CellTimeout past timeout."""
        docs: list[dict] = []

        def keep(msg: dict) -> None:
            data = msg["content"].get("data") or {}
            if RESULT_MIME in data:
                docs.append(data[RESULT_MIME])
        try:
            reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=keep, stop_on_error=False,
                                                store_history=False, allow_stdin=False)
        except TimeoutError:
            raise CellTimeout(f"no answer within {timeout:g} s") from None
        return reply["content"], (docs[-1] if docs else None)

    def stop(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)


# ---------------------------------------------------------------- reading a run's documents

def first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def line_of(text: str) -> int | None:
    m = LINE_IN_TEXT.search(text or "")
    return int(m.group(1)) if m else None


def error_finding(where: str, content: dict) -> tuple[str, int | None]:
    """A failed cell's finding: where it happened, its error's name and first line, and the first line of
    its traceback that names a line of the cell (a compiler's "line 6: error: …"); that line's number, in
    the cell's numbering (the %%kernel line is 1), as the student's notebook shows it."""
    evalue = content.get("evalue", "")
    finding = f"{where}: {content.get('ename', 'Error')}: {first_line(evalue)}"
    located = next((t for t in content.get("traceback", []) if LINE_AT_START.match(t or "")), None)
    if located and located not in finding:
        finding += f" ({located.strip()})"
    return finding, line_of(located or evalue)


def failed_lessons(doc: dict | None) -> list[tuple[str, int | None]]:
    """The lesson checks a %%kernel cell's document says failed: (name, line)."""
    lessons = ((doc or {}).get("check") or {}).get("lesson") or {}
    return [(name, l.get("line")) for name, l in sorted(lessons.items())
            if isinstance(l, dict) and l.get("passed") is False]


def physical_bound(problem: Problem, device: dict, run: dict) -> dict | None:
    """The run's work and the device's roof for it: {"work" (FLOPs or bytes), "peak_per_s" (FLOP/s or B/s),
    "rate", "unit", "bound_ms"}; None where the problem has no bound or the device or run lacks a number.
    The work is the family's own model (its GFLOP/s or GB/s times its time), the roof the FP32 peak for
    FLOPs, and for bytes the larger of the theoretical and the measured bandwidth (the CPU backend has
    only a measured one). ranking.impossible_finding judges a time against it."""
    if problem.bound is None:
        return None
    rate = next((run[k] for k in RATE_KEYS[problem.bound] if isinstance(run.get(k), (int, float))), None)
    median = (run.get("time_ms") or {}).get("median")
    if problem.bound == "flops":
        roof, unit = device.get("peak_fp32_gflops"), "GFLOP/s"
    else:
        roofs = [device.get(k) for k in ("peak_bandwidth_gbs", "measured_bandwidth_gbs")]
        roof, unit = max((r for r in roofs if isinstance(r, (int, float))), default=None), "GB/s"
    if not all(isinstance(x, (int, float)) and x > 0 for x in (rate, median, roof)):
        return None
    work, peak = rate * 1e9 * median / 1e3, roof * 1e9
    return {"work": work, "peak_per_s": peak, "rate": rate, "roof": roof, "unit": unit,
            "bound_ms": physical_bound_ms(work, peak)}


def run_gpu_ms(run: dict) -> float:
    """The device time a run's timed reps took: its mean times its reps."""
    t = run.get("time_ms") or {}
    return float(t.get("mean") or 0) * int(t.get("reps") or 0)


def clock_mhz(run: dict) -> int | None:
    clock = ((run.get("conditions") or {}).get("sm_clock_mhz") or {})
    return clock.get("max") if isinstance(clock, dict) else None


# ---------------------------------------------------------------- one submission's turn

def as_run_name(source: str, name: str | None, kernel: str) -> str:
    """The submitted source with its __global__ function NAME (the name %submit sends, which the
    student's cell used) declared as `kernel`, the name the turn's cell runs (--name sub_<id>, which
    no student's name or built-in variant can clash with). Only the declaration is renamed, on its
    own line, so the finding's line numbers are the student's; a source already declaring `kernel`
    passes unchanged."""
    if not name:
        return source
    declaration = re.compile(r"(__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+)" + re.escape(name) + r"\b")
    return declaration.sub(lambda m: m.group(1) + kernel, source, count=1)


class Turn:
    """One submission through one kernel: run() gives its Outcome."""

    def __init__(self, runner: "Runner", sub: dict, problem: Problem, session: KernelSession):
        self.runner, self.sub, self.problem, self.session = runner, sub, problem, session
        self.kernel = f"sub_{int(sub['id'])}"
        self.result: dict = {"kernel": self.kernel, "run_at": None, "backend": None, "gpu": None,
                             "clock_mhz": None, "sizes": [], "references": [], "median_ms": None,
                             "ci95_rel": None, "score": None, "gpu_ms": 0.0, "timing": TIMING_FLAGS}

    def failed(self, finding: str, line: int | None = None) -> Outcome:
        return Outcome("failed", self.result, finding, line)

    def run(self) -> Outcome:
        if self.sub.get("family") != self.problem.family:
            return Outcome("error", self.result, f"family {self.sub.get('family')!r} is not the problem's "
                                                 f"{self.problem.family!r}")
        try:
            flags = submission_flags(self.sub.get("flags") or "")
        except ValueError as e:
            return self.failed(str(e))
        head = " ".join(p for p in ("%%kernel", f"--for {self.problem.family}", self.problem.kernel_cell_flags(),
                                    f"--name {self.kernel}", flags) if p)
        content, doc = self.session.run(f"{head}\n{as_run_name(self.sub['source'], self.sub.get('name'), self.kernel)}")
        if content["status"] != "ok":
            return self.failed(*error_finding("the kernel's build and quick check", content))
        lessons = failed_lessons(doc)
        if lessons:
            name, line = lessons[0]
            return self.failed(f"lesson check {name} failed" + (f" at line {line}" if line else ""), line)
        self.result["run_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        for size, seed in self.problem.timed_runs():
            outcome = self.timed_run(size, seed)
            if outcome is not None:
                return outcome
        self.summarise()
        self.result["timing"] = TIMING_FLAGS
        return Outcome("ranked", self.result)

    def timed_run(self, size: str, seed: int) -> Outcome | None:
        """One hidden size and seed with the references: None when it passed, else the Outcome."""
        where = f"at the hidden size {size} (seed {seed})"
        command = self.problem.command(size, seed, [*self.problem.references, self.kernel],
                                       TIMING_FLAGS)
        content, doc = self.session.run(command)
        if doc:
            self.result["gpu_ms"] += sum(run_gpu_ms(r) for r in doc.get("runs", []))
        if content["status"] != "ok":
            return self.failed(*error_finding(where, content))
        runs = {r.get("variant"): r for r in doc.get("runs", [])} if doc else {}
        mine = runs.get(self.kernel)
        if mine is None or not (mine.get("check") or {}).get("passed"):
            return self.failed(f"{where}: no checked run of {self.kernel}")
        backend = doc.get("backend")
        device = doc.get("device") or {}
        self.result.update(backend=backend, gpu=device.get("name"))
        self.result["clock_mhz"] = self.result["clock_mhz"] or clock_mhz(mine)
        t = mine["time_ms"]
        row = {"size": size, "seed": seed, "median_ms": t["median"], "min_ms": t["min"],
               "ci95_rel": t.get("ci95_rel"), "reps": t["reps"], "settled": t.get("settled"),
               "references": {v: {"median_ms": r["time_ms"]["median"], "ci95_rel": r["time_ms"].get("ci95_rel")}
                              for v, r in runs.items() if v != self.kernel and r.get("time_ms")}}
        bound = physical_bound(self.problem, device, mine)
        row["bound"] = bound
        self.result["sizes"].append(row)
        impossible = bound and impossible_finding(t["median"], work=bound["work"], peak_per_s=bound["peak_per_s"],
                                                  bound=self.problem.bound, size=f"{size} (seed {seed})")
        return self.failed(impossible) if impossible else None

    def summarise(self) -> None:
        """The submission's time and score over the hidden sizes (ranking.score_sizes: against the fastest
        reference of the same run), and each reference's time over them. Under several seeds a size's
        figures are the median run's."""
        by_size: dict[str, list[dict]] = {}
        for row in self.result["sizes"]:
            by_size.setdefault(row["size"], []).append(row)
        picked = [sorted(rows, key=lambda r: r["median_ms"])[len(rows) // 2] for rows in by_size.values()]
        common = set.intersection(*(set(r["references"]) for r in picked)) if picked else set()
        score = score_sizes([{"median_ms": r["median_ms"], "ci95_rel": ci(r["ci95_rel"]),
                              "reference_ms": min(r["references"][v]["median_ms"] for v in common)}
                             for r in picked]) if common else None
        if score is None:
            raise RuntimeError("no reference ran at every hidden size: nothing to score against")
        self.result.update(median_ms=score.median_ms, ci95_rel=score.ci95_rel, score=score.score,
                           score_lo=score.score_lo, score_hi=score.score_hi)
        refs = []
        for v in sorted(common, key=lambda v: -sum(r["references"][v]["median_ms"] for r in picked)):
            median, rel = geomean_interval([r["references"][v]["median_ms"] for r in picked],
                                           [ci(r["references"][v]["ci95_rel"]) for r in picked])
            refs.append({"variant": v, "median_ms": median, "ci95_rel": rel})
        self.result["references"] = refs


def ci(rel) -> float:
    """A run's ci95_rel as ranking takes it: a number in [0, 1) (a wider interval counts as nearly 100 %)."""
    return min(float(rel or 0.0), 0.999)


# ---------------------------------------------------------------- the runner

class Runner:
    """Runs queued submissions one at a time in a thread of its own: Runner(store, problems, binary).start().
    wake() when one is queued (it also looks every POLL_S); on_change(problem) after each result."""

    def __init__(self, store, problems: dict[str, Problem], binary: str | Path | None = None, *,
                 env: dict[str, str] | None = None, cache_dir: str | Path | None = None,
                 cell_timeout_s: float = CELL_TIMEOUT_S, on_change=None):
        self.store, self.problems = store, problems
        self.binary = Path(binary or os.environ.get("CUDALAB_BIN") or shutil.which("cudalab") or "cudalab")
        base = {k: v for k, v in (env if env is not None else os.environ).items() if k not in SCRUBBED_ENV}
        self.cache_dir = Path(cache_dir) if cache_dir else Path(tempfile.mkdtemp(prefix="cudalab-board-cache-"))
        self.env = {**base, "CUDALAB_CACHE_DIR": str(self.cache_dir)}
        self.cell_timeout_s, self.on_change = cell_timeout_s, on_change
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Runner":
        """Starts the thread, after putting back in the queue what a stopped service left running."""
        self.store.requeue_interrupted()
        self._thread = threading.Thread(target=self._loop, name="cudalab-board-runner", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_next()
            except Exception:                    # a store error: said, and tried again after a pause
                log.exception("runner: the store failed")
                ran = False
            if not ran:
                self._wake.wait(POLL_S)
                self._wake.clear()

    def run_next(self) -> bool:
        """Claims and runs the oldest queued submission; False when none was queued."""
        sub = self.store.claim_next_submission()
        if sub is None:
            return False
        outcome = self.run_submission(sub)
        finding = outcome.finding
        if finding and sub.get("name"):     # the kernel as its student named it, not the turn's sub_<id>
            finding = re.sub(rf"\bsub_{int(sub['id'])}\b", sub["name"], finding)
        self.store.finish_submission(sub["id"], outcome.status, outcome.result, finding=finding,
                                     line=outcome.line)
        if self.on_change:
            self.on_change(sub["problem"])
        return True

    def run_submission(self, sub: dict) -> Outcome:
        """One submission's turn in a fresh kernel; never raises for what the submission or kernel did."""
        problem = self.problems.get(sub.get("problem"))
        if problem is None:
            return Outcome("error", {}, f"unknown problem {sub.get('problem')!r}")
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f"cudalab-board-{int(sub['id'])}-"))
        session = None
        try:
            session = KernelSession(self.binary, self.env, work)
            outcome = Turn(self, sub, problem, session).run()
        except CellTimeout as e:
            outcome = Outcome("failed", {}, f"timed out: {e}")
        except Exception as e:                   # the kernel died or would not start: not the student's fault
            log.exception("runner: submission %s", sub.get("id"))
            outcome = Outcome("error", {}, f"the board's kernel failed: {type(e).__name__}: {first_line(str(e))}")
        finally:
            if session is not None:
                try:
                    session.stop()
                except Exception:
                    log.exception("runner: stopping the kernel of submission %s", sub.get("id"))
            shutil.rmtree(work, ignore_errors=True)
        outcome.result["wall_s"] = time.monotonic() - started
        return outcome
