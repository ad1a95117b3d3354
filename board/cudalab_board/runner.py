"""runner.py — the board's runner: takes queued submissions and runs each through a real cudalab kernel
(jupyter_client; the binary in $CUDALAB_BIN; the CPU backend where there is no GPU), then writes its
outcome into the store.

A submission's turn, in a warm kernel of the problem's (no kernel start per submission):

 1. the `%%kernel --for FAMILY --name sub_<id>` cell with the submitted source: the build, its audit and
    quick check, and the family's lesson checks; any failure is the submission's finding;
 2. for every hidden size and seed of the problem, the family's magic with the problem's references and
    the submission's kernel in the same run, under TIMING_FLAGS: `--reps auto` for a median with its
    confidence interval, and every timed rep checked on fresh inputs of its own (stricter than a cell's
    two reps); a wrong rep, a wrong result at any size or a crash is the finding;
 3. the physical bound: a median below the time the problem's work takes at the device's roof (FP32
    peak, or memory bandwidth) cannot be honest, whatever the checks said: "impossible: …".

Ranked or not, the result keeps each run's times so the board can show the references as lines.

The pipeline: PIPELINE_LANES turns run at once, each lane a thread with warm kernels of its own, one per
problem. A turn's step 1 is CPU work (NVRTC, the CPU runner's lesson checks); its step 2 holds the GPU. The
timed runs still take turns, one at a time with the GPU to themselves: the kernels' admission gives every
timed run of the host a turn of its own (kernel/exec/admission.h), so while one lane's submission is timed
the next lane's is built and checked. Each run's document says it was timed alone (timing.gpu_alone),
and a run that was not is an error of the board's, never a rank.

A warm kernel serves the next turn only after a turn that left nothing suspect in it: a submission that
ranked (every rep of every run checked, nothing crashed or hung) or whose source did not compile (nothing
of it ran). Any other outcome — a wrong result, a failed lesson check, a crash, a hang, a kernel that
died — retires the kernel: the next turn starts a fresh one. Each submission's kernel has a name of its
own (sub_<id>) and its own module (GPU) or runner process (CPU): nothing a ranked one defines is visible
to the next; and a kernel retires after TURNS_PER_KERNEL turns, well within the kernels a session holds.

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
# Turns at once: one submission's timed runs hold the GPU while the next ones are built and checked on the CPU
# (the admission keeps the timed runs one at a time whatever this is). Two keep the GPU busy where a turn's
# CPU work is no longer than its timed runs; a host with cores to spare may run more: LANES_ENV, or
# Runner(lanes=…). A warm turn's CPU work is NVRTC, the host build and the lesson checks (about 1 s each on
# a loaded 2-core host, where the CPU backend's timed cell takes 10).
PIPELINE_LANES = 2
LANES_ENV = "CUDALAB_BOARD_LANES"
# A warm kernel's turns before a fresh one: a session holds at most 64 kernels of its own
# (FAMILY_MAX_RUNTIME, kernel/magic/families.h), and what one worker has seen stays bounded.
TURNS_PER_KERNEL = 32
# The errors of a %%kernel cell that ran nothing of the student's: the kernel stays warm after them.
NOTHING_RAN = ("CompileError",)
# Environment the service has that student code and its kernel must never see: the board's own hub token
# and the class view (a board run posts no quick checks).
SCRUBBED_ENV = ("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "CUDALAB_BOARD_TOKEN", "CUDALAB_BOARD_URL",
                "CUDALAB_CLASS_VIEW", "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_OAUTH_CALLBACK_URL")
LINE_IN_TEXT = re.compile(r"\bline (\d+)\b")
LINE_AT_START = re.compile(r"^\s*line \d+:")


@dataclass
class Outcome:
    """What one turn found: the store's status, finding and line, and the result document; keeps_kernel:
    the turn left its warm kernel fit for the next (it ranked, or nothing of the student's ran)."""
    status: str
    result: dict = field(default_factory=dict)
    finding: str | None = None
    line: int | None = None
    keeps_kernel: bool = False


class CellTimeout(Exception):
    pass


# ---------------------------------------------------------------- a kernel for one submission

class KernelSession:
    """A cudalab kernel started through jupyter_client from a private kernelspec naming `binary`, in a
    private working directory of its own (removed by stop()); cells run one at a time; stop() ends it and
    its worker. `turns`: the submissions it has served."""

    def __init__(self, binary: Path, env: dict[str, str], workdir: Path):
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager
        self.workdir, self.turns = workdir, 0
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
            try:
                self.km.shutdown_kernel(now=True)
            finally:
                shutil.rmtree(self.workdir, ignore_errors=True)


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


def unchecked_reps(run: dict) -> str | None:
    """Why a run that passed its check cannot be ranked: the backend says (check.reps_checked, what its
    harness checked, not what was asked) that it checked fewer of its timed reps than it ran, or does
    not say; None when it checked every one."""
    checked, reps = (run.get("check") or {}).get("reps_checked"), (run.get("time_ms") or {}).get("reps")
    if isinstance(checked, int) and isinstance(reps, int) and 0 < reps <= checked:
        return None
    said = "did not say how many" if checked is None else f"checked {checked}"
    return (f"the backend {said} of its {reps} timed reps on their own inputs; the board ranks only a run whose "
            f"every timed rep was checked ({CHECK_REPS_FLAG})")


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
        content, doc = self.session.run(f"{head}\n{as_run_name(self.sub['source'], self.sub.get('name'), self.kernel)}",
                                        self.runner.cell_timeout_s)
        if content["status"] != "ok":
            outcome = self.failed(*error_finding("the kernel's build and quick check", content))
            outcome.keeps_kernel = content.get("ename") in NOTHING_RAN
            return outcome
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
        return Outcome("ranked", self.result, keeps_kernel=True)

    def timed_run(self, size: str, seed: int) -> Outcome | None:
        """One hidden size and seed with the references: None when it passed, else the Outcome."""
        where = f"at the hidden size {size} (seed {seed})"
        command = self.problem.command(size, seed, [*self.problem.references, self.kernel],
                                       TIMING_FLAGS)
        content, doc = self.session.run(command, self.runner.cell_timeout_s)
        if doc:
            self.result["gpu_ms"] += sum(run_gpu_ms(r) for r in doc.get("runs", []))
        if content["status"] != "ok":
            return self.failed(*error_finding(where, content))
        if doc and (doc.get("timing") or {}).get("gpu_alone") is not True:
            # the board's own promise broken (a kernel without admission, or shared timing): not the student's
            return Outcome("error", self.result, f"{where}: the run was not timed alone on the device")
        runs = {r.get("variant"): r for r in doc.get("runs", [])} if doc else {}
        mine = runs.get(self.kernel)
        if mine is None or not (mine.get("check") or {}).get("passed"):
            return self.failed(f"{where}: no checked run of {self.kernel}")
        unchecked = unchecked_reps(mine)
        if unchecked:
            # the board's own promise broken (a backend that kept fewer reps than it timed): not the student's
            return Outcome("error", self.result, f"{where}: {unchecked}")
        backend = doc.get("backend")
        device = doc.get("device") or {}
        self.result.update(backend=backend, gpu=device.get("name"))
        self.result["clock_mhz"] = self.result["clock_mhz"] or clock_mhz(mine)
        t = mine["time_ms"]
        row = {"size": size, "seed": seed, "median_ms": t["median"], "min_ms": t["min"],
               "ci95_rel": t.get("ci95_rel"), "reps": t["reps"], "reps_checked": mine["check"]["reps_checked"],
               "settled": t.get("settled"),
               "timed_alone": doc["timing"]["gpu_alone"], "turn_waited_ms": doc["timing"].get("waited_ms"),
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


# ---------------------------------------------------------------- a lane of the pipeline

class Lane:
    """One lane of the pipeline: its warm kernels, one per problem, used by one thread at a time."""

    def __init__(self, runner: "Runner", index: int):
        self.runner, self.index = runner, index
        self.kernels: dict[str, KernelSession] = {}

    def kernel(self, problem: str) -> KernelSession:
        """The problem's warm kernel, started when there is none."""
        session = self.kernels.get(problem)
        if session is None:
            work = Path(tempfile.mkdtemp(prefix=f"cudalab-board-lane{self.index}-"))
            try:
                session = KernelSession(self.runner.binary, self.runner.env, work)
            except BaseException:
                shutil.rmtree(work, ignore_errors=True)
                raise
            self.kernels[problem] = session
        return session

    def retire(self, problem: str) -> None:
        session = self.kernels.pop(problem, None)
        if session is not None:
            try:
                session.stop()
            except Exception:
                log.exception("runner: stopping a kernel of lane %d", self.index)

    def close(self) -> None:
        for problem in list(self.kernels):
            self.retire(problem)

    def run_turn(self, sub: dict, problem: Problem) -> Outcome:
        """One submission's turn in this lane's warm kernel of its problem; retires the kernel unless the turn
        kept it fit. Never raises for what the submission or kernel did."""
        session = None
        try:
            session = self.kernel(sub["problem"])
            session.turns += 1
            outcome = Turn(self.runner, sub, problem, session).run()
        except CellTimeout as e:
            outcome = Outcome("failed", {}, f"timed out: {e}")
        except Exception as e:                   # the kernel died or would not start: not the student's fault
            log.exception("runner: submission %s", sub.get("id"))
            outcome = Outcome("error", {}, f"the board's kernel failed: {type(e).__name__}: {first_line(str(e))}")
        if session is not None:
            outcome.result["kernel_turn"] = session.turns      # 1: a fresh kernel; more: a warm one
        if not outcome.keeps_kernel or (session is not None and session.turns >= TURNS_PER_KERNEL):
            self.retire(sub["problem"])
        return outcome


# ---------------------------------------------------------------- the runner

def default_lanes(environ) -> int:
    """LANES_ENV when it is a whole number from 1 to 64, else PIPELINE_LANES (said in the log)."""
    text = environ.get(LANES_ENV, "").strip()
    if not text:
        return PIPELINE_LANES
    if text.isdigit() and 1 <= int(text) <= 64:
        return int(text)
    log.warning("runner: %s=%r is not a number of lanes from 1 to 64: %d lanes", LANES_ENV, text, PIPELINE_LANES)
    return PIPELINE_LANES


class Runner:
    """Runs queued submissions in `lanes` threads (PIPELINE_LANES), their timed runs one at a time:
    Runner(store, problems, binary).start(). wake() when one is queued (each lane also looks every POLL_S);
    on_change(problem) after each result. run_next() runs one in the caller's thread (lane 0's kernels);
    close() (or stop()) ends the warm kernels."""

    def __init__(self, store, problems: dict[str, Problem], binary: str | Path | None = None, *,
                 env: dict[str, str] | None = None, cache_dir: str | Path | None = None,
                 cell_timeout_s: float = CELL_TIMEOUT_S, on_change=None, lanes: int | None = None):
        if lanes is None:
            lanes = default_lanes(os.environ)
        if lanes < 1:
            raise ValueError("a runner has at least one lane")
        self.store, self.problems = store, problems
        self.binary = Path(binary or os.environ.get("CUDALAB_BIN") or shutil.which("cudalab") or "cudalab")
        base = {k: v for k, v in (env if env is not None else os.environ).items() if k not in SCRUBBED_ENV}
        self.cache_dir = Path(cache_dir) if cache_dir else Path(tempfile.mkdtemp(prefix="cudalab-board-cache-"))
        self.env = {**base, "CUDALAB_CACHE_DIR": str(self.cache_dir)}
        self.cell_timeout_s, self.on_change = cell_timeout_s, on_change
        self.lanes = [Lane(self, i) for i in range(lanes)]
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> "Runner":
        """Starts the lanes' threads, after putting back in the queue what a stopped service left running."""
        self.store.requeue_interrupted()
        self._threads = [threading.Thread(target=self._loop, args=(lane,), name=f"cudalab-board-runner-{lane.index}",
                                          daemon=True) for lane in self.lanes]
        for t in self._threads:
            t.start()
        return self

    def wake(self) -> None:
        with self._wake:
            self._wake.notify_all()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self.wake()
        for t in self._threads:
            t.join(timeout)
        if not self._threads:
            self.close()                        # run_next()'s kernels; a lane's thread ends its own

    def close(self) -> None:
        """Ends the lanes' warm kernels (a lane's thread, when running, must have stopped)."""
        for lane in self.lanes:
            lane.close()

    def _loop(self, lane: Lane) -> None:
        try:
            while not self._stop.is_set():
                try:
                    ran = self.run_next(lane)
                except Exception:                    # a store error: said, and tried again after a pause
                    log.exception("runner: the store failed")
                    ran = False
                if not ran and not self._stop.is_set():
                    with self._wake:
                        self._wake.wait(POLL_S)
        finally:
            lane.close()

    def run_next(self, lane: Lane | None = None) -> bool:
        """Claims and runs the oldest queued submission in lane (lane 0); False when none was queued."""
        sub = self.store.claim_next_submission()
        if sub is None:
            return False
        outcome = self.run_submission(sub, lane or self.lanes[0])
        finding = outcome.finding
        if finding and sub.get("name"):     # the kernel as its student named it, not the turn's sub_<id>
            finding = re.sub(rf"\bsub_{int(sub['id'])}\b", sub["name"], finding)
        self.store.finish_submission(sub["id"], outcome.status, outcome.result, finding=finding,
                                     line=outcome.line)
        if self.on_change:
            self.on_change(sub["problem"])
        return True

    def run_submission(self, sub: dict, lane: Lane | None = None) -> Outcome:
        """One submission's turn; never raises for what the submission or kernel did."""
        problem = self.problems.get(sub.get("problem"))
        if problem is None:
            return Outcome("error", {}, f"unknown problem {sub.get('problem')!r}")
        started = time.monotonic()
        outcome = (lane or self.lanes[0]).run_turn(sub, problem)
        outcome.result["wall_s"] = time.monotonic() - started
        return outcome
