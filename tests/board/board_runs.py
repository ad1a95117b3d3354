"""board_runs.py — what the runner's tests share: the board package on sys.path, a problems file of small
hidden sizes the CPU runner takes in seconds, the submissions' sources, and a store in memory that keeps
every call the runner makes (claim order, finish order, each outcome) so a test sees what the runner did.

The store here implements only the runner's narrow interface (runner.py's docstring), so that a test sees
each call in order (test_runner.py also runs one through the real Store); the runner under test is the
real one, and the kernel it drives is the real binary.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from conftest import kernel_binary

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "board"))

from cudalab_board.problems import problem_from_json  # noqa: E402
from cudalab_board.runner import Runner  # noqa: E402

CPU = {"CUDALAB_BACKEND": "cpu"}
# Hidden sizes none of the students' cells use: vecadd's quick check runs at --size 100003.
HIDDEN_VECADD = {"family": "vecadd", "title": "Vector add", "sizes": ["--size 40", "--size 7777"],
                 "seeds": [2718], "references": ["builtin"], "bound": "bytes", "rate_limit_s": 0}
HIDDEN_MATMUL = {"family": "matmul", "title": "Tiled matmul", "sizes": ["--m 67 --n 45 --k 33"],
                 "seeds": [31, 41], "references": ["naive", "tiled"], "bound": "flops", "rate_limit_s": 0}
PROBLEMS = {"t.vecadd": problem_from_json("t.vecadd", HIDDEN_VECADD),
            "t.matmul": problem_from_json("t.matmul", HIDDEN_MATMUL)}

VECADD = """__global__ void NAME(const float *A, const float *B, float *C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
"""
HONEST_ADD = "if (i < n) C[i] = A[i] + B[i];"

TILED_MATMUL = """#define TILE 16
__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int ty = threadIdx.y, tx = threadIdx.x, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {
        As[ty][tx] = row < M && p * TILE + tx < K ? A[row * K + p * TILE + tx] : 0.0f;
        Bs[ty][tx] = col < N && p * TILE + ty < K ? B[(p * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}
"""


def vecadd(body: str = HONEST_ADD) -> str:
    """A vecadd kernel's source with NAME for the runner to fill in (submit() does)."""
    return VECADD.replace("BODY", body)


class MemoryStore:
    """The runner's store interface in memory, recording what the runner asked of it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.queued: list[dict] = []
        self.subs: dict[int, dict] = {}
        self.events: list[tuple[str, int]] = []          # ("claim" | "finish", id) in order
        self.done = threading.Condition(self.lock)

    def submit(self, problem: str, source: str, name: str = "k", flags: str = "", user: str = "alice") -> int:
        with self.lock:
            sid = len(self.subs) + 1
            fam = PROBLEMS[problem].family if problem in PROBLEMS else "vecadd"
            sub = {"id": sid, "problem": problem, "user": user, "name": name, "family": fam,
                   "source": source.replace("NAME", f"sub_{sid}"), "flags": flags, "status": "queued"}
            self.subs[sid] = sub
            self.queued.append(sub)
            return sid

    def requeue_interrupted(self) -> int:
        return 0

    def claim_next_submission(self) -> dict | None:
        with self.lock:
            if not self.queued:
                return None
            sub = self.queued.pop(0)
            sub["status"] = "running"
            self.events.append(("claim", sub["id"]))
            return {k: sub[k] for k in ("id", "problem", "name", "family", "source", "flags")}

    def finish_submission(self, sid, status, result, finding=None, line=None) -> None:
        assert status in ("ranked", "failed", "error"), status
        with self.lock:
            self.subs[sid].update(status=status, result=result, finding=finding, line=line)
            self.events.append(("finish", sid))
            self.done.notify_all()

    def ranked(self) -> list[int]:
        return [s["id"] for s in self.subs.values() if s["status"] == "ranked"]

    def wait_all(self, timeout: float) -> None:
        with self.lock:
            assert self.done.wait_for(lambda: all(s["status"] not in ("queued", "running")
                                                  for s in self.subs.values()), timeout), self.subs


@pytest.fixture
def board(tmp_path):
    """(store, runner): a runner on the CPU backend over PROBLEMS, its own student cache; its warm kernels
    end with the test."""
    store = MemoryStore()
    runner = Runner(store, PROBLEMS, kernel_binary(), env={**os.environ, **CPU}, cache_dir=tmp_path / "cache")
    yield store, runner
    runner.close()


def run_all(store: MemoryStore, runner: Runner) -> None:
    while runner.run_next():
        pass
