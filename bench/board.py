#!/usr/bin/env python3
"""bench/board.py — the class leaderboard under a burst (issue 35): COUNT submissions (200) arriving over
OVER seconds (60) queue for the board's runner, which runs each through a warm cudalab kernel (its %%kernel
cell, then the problem's hidden size with its references, --reps auto, every rep checked), LANES turns at
once (--lanes; the runner's PIPELINE_LANES): one timed while the next is built and checked, the timed runs
one at a time through the kernels' admission.

Prints one table: submissions | lanes | kernels started | burst s | to the last result s | the submissions' own GPU time s (every timed
rep of the turn, references included; and the student kernels' alone) | overhead (time to the last result ÷
the turns' GPU time) | failures | median and slowest turn s. No failure is allowed: each is listed.

The problem is ps2.reduce of the sample course at its first hidden size and seed (--problem, --size-index
pick another). Without a GPU the benchmark says so and stops, unless --cpu runs it on the CPU backend
(a dry run at a small size: `python bench/board.py --cpu --count 10 --over 5`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import binary, gpu_device, print_table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "board"))
from cudalab_board.problems import load_problems, problem_from_json  # noqa: E402
from cudalab_board.runner import LANES_ENV, PIPELINE_LANES, Runner, default_lanes  # noqa: E402
from cudalab_board.store import open_store  # noqa: E402

REDUCE = """__global__ void NAME(const float *input, float *partial, int n)
{
    __shared__ float sum[1024];
    int t = threadIdx.x, B = blockDim.x;
    long long i = 2LL * B * blockIdx.x + t;
    sum[t] = (i < n ? input[i] : 0.0f) + (i + B < n ? input[i + B] : 0.0f);
    for (int stride = B / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) sum[t] += sum[t + stride];
    }
    if (t == 0) partial[blockIdx.x] = sum[0];
}
"""


class TimedStore:
    """The board's own store (SQLite, as a course's board keeps it), the time each result lands kept beside."""

    def __init__(self, path: Path, expected: int):
        self.store, self.expected = open_store(f"sqlite:///{path}"), expected
        self.finished: dict[int, float] = {}
        self.all_done = threading.Event()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def add(self, sid: int, problem: str, family: str) -> int:
        # each student's own kernel (a comment makes each source its own: no build shared), no rate limit hit
        return self.store.enqueue_submission(problem, f"student{sid}", f"k{sid}", family,
                                             f"// submission {sid}\n" + REDUCE)[0]

    def claim_next_submission(self):
        sub = self.store.claim_next_submission()
        if sub:
            sub["source"] = sub["source"].replace("NAME", f"sub_{sub['id']}")
        return sub

    def finish_submission(self, sid, status, result, finding=None, line=None):
        self.store.finish_submission(sid, status, result, finding=finding, line=line)
        self.finished[sid] = time.monotonic()
        if len(self.finished) % 25 == 0:
            print(f"  {len(self.finished)} of {self.expected} results", flush=True)
        if len(self.finished) == self.expected:
            self.all_done.set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--over", type=float, default=60.0, help="seconds the submissions arrive over")
    ap.add_argument("--problem", default="ps2.reduce")
    ap.add_argument("--size-index", type=int, default=0)
    ap.add_argument("--lanes", type=int, default=default_lanes(os.environ),
                    help=f"turns at once (the runner's pipeline: {LANES_ENV}, else {PIPELINE_LANES})")
    ap.add_argument("--cpu-size", type=int, default=100003,
                    help="--cpu: the hidden size (a small one leaves the turns' overhead, as a GPU's short runs do)")
    ap.add_argument("--cpu", action="store_true", help="the CPU backend at a small size (a dry run)")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds after the first arrival to stop waiting: the table then covers the results so "
                         "far and says how many were still queued")
    args = ap.parse_args()
    env = dict(os.environ)
    course = load_problems(REPO / "notebooks" / "assignments" / "board-problems.json")
    spec = course[args.problem].as_json()
    if args.cpu:
        env["CUDALAB_BACKEND"] = "cpu"
        spec.update(sizes=[f"--size {args.cpu_size}"], references=["convergent"])
    else:
        if gpu_device("reduce", "%reduce --size 1000 --reps 1") is None:
            return
        spec.update(sizes=[course[args.problem].sizes[args.size_index]])
    spec.update(seeds=[course[args.problem].seeds[0]], flags=course[args.problem].flags)
    problem = problem_from_json(args.problem, spec)
    with tempfile.TemporaryDirectory(prefix="cudalab-board-bench-") as tmp:
        store = TimedStore(Path(tmp) / "board.db", args.count)
        runner = Runner(store, {args.problem: problem}, binary(), env=env, lanes=args.lanes).start()
        start = time.monotonic()
        for sid in range(1, args.count + 1):           # arrivals spread evenly over the burst
            time.sleep(max(0.0, start + (sid - 1) * args.over / args.count - time.monotonic()))
            store.add(sid, args.problem, problem.family)
            runner.wake()
        store.all_done.wait(None if args.deadline is None else max(0.0, start + args.deadline - time.monotonic()))
        last = max(store.finished.values(), default=start) - start
        unfinished = args.count - len(store.finished)
        runner.stop(timeout=60)
        subs = [store.get_submission(sid) for sid in sorted(store.finished)]
    results = [sub["result"] or {} for sub in subs]
    failures = [(sub["id"], sub["status"], sub["finding"]) for sub in subs if sub["status"] != "ranked"]
    gpu_s = sum(r.get("gpu_ms", 0) for r in results) / 1e3
    own_s = sum(sum(row["median_ms"] * row["reps"] for row in r.get("sizes", [])) for r in results) / 1e3
    turns = [r["wall_s"] for r in results if r.get("wall_s") is not None] or [0.0]
    started = sum(1 for r in results if r.get("kernel_turn") == 1)      # a turn in a fresh kernel
    backend = next((r["backend"] for r in results if r.get("backend")), "?")
    gpu = next((r["gpu"] for r in results if r.get("gpu")), "?")
    print(f"bench/board.py: {args.count} submissions of {args.problem} ({problem.sizes[0]}, seed "
          f"{problem.seeds[0]}, references {','.join(problem.references)}) on {gpu} ({backend})")
    print_table("The burst: time to the last result against the submissions' own GPU time",
                [("submissions", "lanes", "kernels started", "burst s", "results", "still queued", "to last result s", "turns' GPU s",
                  "students' GPU s", "last ÷ GPU", "failures", "median turn s", "slowest turn s"),
                 (str(args.count), str(args.lanes), str(started), f"{args.over:.0f}", str(len(subs)), str(unfinished), f"{last:.1f}",
                  f"{gpu_s:.2f}", f"{own_s:.2f}",
                  f"{last / gpu_s:.1f}" if gpu_s else "-", str(len(failures)), f"{statistics.median(turns):.2f}",
                  f"{max(turns):.2f}")], left=())
    for sid, status, finding in failures:
        print(f"  submission {sid}: {status}: {finding}")
    if failures:
        sys.exit(1)
    if unfinished:
        print(f"  {unfinished} submissions were still queued at the deadline ({args.deadline:.0f} s)")


if __name__ == "__main__":
    main()
