"""Red team (issue 31, item 4), on the CPU runner: time and correctness belong to the harness. Every rep of a
student's kernel runs on inputs of its own (a seed per rep, the run's own for the last) with its output
poisoned, and every rep but the last is checked right after its launch (the last is the family's own check).
A kernel whose answer is only right for the run's own inputs (learned from a first, honest run through device
printf), one that leaves its output unwritten on the other reps and one that replays a kept answer all fail
with a CheckError naming the rep; honest kernels of every family still pass with several reps, and the next
cell works. Needs NVRTC (the gate) and g++ (the runner's compiler): without NVRTC the tests skip."""
from __future__ import annotations

import re

import pytest

from conftest import cell, compiled

CPU = {"CUDALAB_BACKEND": "cpu"}

# A run's reps on the CPU runner: CL_SIMT_MAX_REPS (include/cudalab/simt.h), whatever --reps asks.
REPS = 3

MATMUL = """%%kernel --for matmul --name NAME NOCHECK
__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    BEFORE
    float acc = 0;
    for (int k = 0; row < M && col < N && k < K; k++)
        acc += A[row * K + k] * B[k * N + col];
    if (row < M && col < N)
        C[row * N + col] = acc;
}
"""

VECADD = """%%kernel --for vecadd --name NAME NOCHECK
__global__ void NAME(const float *A, const float *B, float *C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    BODY
}
"""
HONEST_ADD = "if (i < n) C[i] = A[i] + B[i];"


def source(template: str, name: str, checked: bool = True, **parts: str) -> str:
    """A kernel cell: template with its name and parts; without the quick check unless checked (a kernel
    written for one size and seed fails it)."""
    code = template.replace("NAME", name).replace("NOCHECK", "" if checked else "--no-check")
    for key, text in parts.items():
        code = code.replace(key.upper(), text)
    return code


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def defined(kc, code: str) -> None:
    c, text, _ = compiled(kc, code)
    assert c["status"] == "ok", text


def printed(kc, command: str, key: str) -> list[str]:
    """What a kernel printed as KEY=value lines in one run of command (at --reps 1: one launch, on the run's
    own seed), by index when the lines say KEY[i]=value."""
    c, text, _ = cell(kc, command)
    assert c["status"] == "ok", text
    found = {int(m.group(1) or 0): m.group(2) for m in re.finditer(rf"{key}(?:\[(\d+)\])?=(\S+)", text)}
    assert found, text
    return [found[i] for i in sorted(found)]


def assert_rep_error(kc, command: str, name: str, says: str) -> None:
    c, text, _ = cell(kc, command)
    assert c["status"] == "error", text
    assert c["ename"] == "CheckError", c
    assert f"your kernel {name} failed (" in c["evalue"], c["evalue"]
    assert f"): {says}" in c["evalue"], c["evalue"]
    assert any("every rep runs on inputs of its own" in line for line in c["traceback"]), c["traceback"]


def test_matmul_right_only_on_the_runs_own_inputs_fails_at_its_first_rep(kc):
    # the spy: an honest kernel that prints A[0]; one run of one rep shows its value under the run's seed
    defined(kc, source(MATMUL, "spy", before='if (row == 0 && col == 0) printf("A0=%.9g\\n", A[0]);'))
    a0 = printed(kc, "%matmul --size 48 --variant spy --reps 1", "A0")[0]
    # right on the inputs it has seen, zeros on any others (its quick check runs on the same seed: it passes)
    defined(kc, source(MATMUL, "cheat", before=f"if (A[0] != {a0}f) {{ if (row < M && col < N) "
                                               "C[row * N + col] = 0.0f; return; }"))
    c, text, doc = cell(kc, "%matmul --size 48 --variant cheat --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, text   # one rep: its own inputs
    assert_rep_error(kc, "%matmul --size 48 --variant cheat --reps 3", "cheat",
                     f"rep 1 of {REPS} returned a wrong result: C[0][0] = 0, expected ")
    # --counters takes one more launch after the timed ones: the wrong rep still ends the run first
    assert_rep_error(kc, "%matmul --size 48 --variant cheat --reps 3 --counters", "cheat",
                     f"rep 1 of {REPS} returned a wrong result: C[0][0] = 0, expected ")
    # the next cell works, and an honest kernel passes with every rep checked (its counters too)
    c, text, doc = cell(kc, "%matmul --size 48 --variant naive,spy --reps 3 --counters")
    assert c["status"] == "ok", text
    mine = next(r for r in doc["runs"] if r["variant"] == "spy")
    assert mine["check"]["passed"] is True and mine["time_ms"]["reps"] == REPS
    assert len(re.findall(r"A0=(\S+)", text)) >= REPS + 1       # every launch printed: the counted one too
    assert len(set(re.findall(r"A0=(\S+)", text))) == REPS      # on inputs of its own each timed rep


def test_vecadd_output_left_unwritten_on_other_inputs(kc):
    defined(kc, source(VECADD, "spy", body='if (i == 0) printf("A0=%.9g\\n", A[0]);\n    ' + HONEST_ADD))
    a0 = printed(kc, "%vecadd --size 1000 --variant spy --reps 1", "A0")[0]
    defined(kc, source(VECADD, "lazy", body=f"if (A[0] != {a0}f) return;\n    " + HONEST_ADD))
    assert_rep_error(kc, "%vecadd --size 1000 --variant lazy --reps 3", "lazy",
                     f"rep 1 of {REPS} returned a wrong result: C[0] = nan (never written?), expected ")
    c, text, doc = cell(kc, "%vecadd --size 1000 --variant spy --reps 3")
    assert c["status"] == "ok", text
    assert doc["runs"][0]["check"]["passed"] is True


def test_vecadd_kept_answer_is_a_result_of_other_inputs(kc):
    n = 40
    # the spy prints every C[i] of one run: the answer for the run's own inputs
    defined(kc, source(VECADD, "spy", body='if (i < n) { C[i] = A[i] + B[i]; printf("C[%d]=%.9g\\n", i, C[i]); }'))
    kept = printed(kc, f"%vecadd --size {n} --variant spy --reps 1", "C")
    assert len(kept) == n
    table = ", ".join(f"{v}f" for v in kept)
    # (right at every other size, as the CPU runner's run of it at the quick check's size sees: the
    # replay is of this size's answer only, which reps on fresh inputs must catch)
    replay = source(VECADD, "replay", checked=False, body=f"const float kept[{n}] = {{{table}}};\n    "
                    f"if (i < n) C[i] = n == {n} ? kept[i] : A[i] + B[i];")
    defined(kc, replay)
    c, text, doc = cell(kc, f"%vecadd --size {n} --variant replay --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, text
    assert_rep_error(kc, f"%vecadd --size {n} --variant replay --reps 3", "replay",
                     f"rep 1 of {REPS} returned a result of other inputs (rep {REPS}'s)")
    c, text, doc = cell(kc, f"%vecadd --size {n} --variant spy --reps 3")
    assert c["status"] == "ok", text


def test_wrong_on_every_rep_is_the_familys_check_as_before(kc):
    """A kernel wrong on its own inputs too is a wrong kernel, not a rep's: the family's check describes it."""
    defined(kc, source(VECADD, "offbyone", checked=False, body="if (i < n) C[i] = A[i] + B[i] + 1.0f;"))
    c, text, doc = cell(kc, "%vecadd --size 1000 --variant offbyone --reps 3")
    assert c["status"] == "error" and c["ename"] == "CheckError", text
    assert c["evalue"].startswith("1 of 1 runs gave a wrong result"), c["evalue"]
    assert doc["runs"][0]["check"]["passed"] is False
    assert doc["runs"][0]["check"]["first_wrong"].startswith("C[0] = ")


HISTO = """%%kernel --for histo --name myhisto
__global__ void myhisto(const unsigned char *data, long long n, unsigned int *histo)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)blockDim.x * gridDim.x;
    for (; i < n; i += stride) {
        int c = data[i] | 0x20;
        if (c >= 'a' && c <= 'z')
            atomicAdd(&histo[(c - 'a') / 4], 1u);
    }
}
"""


def test_histo_of_a_text_passes_every_rep(kc):
    """A text has no seed: the reps before the last count it with its letters relabelled."""
    defined(kc, HISTO)
    text_arg = "'The quick brown fox jumps over the lazy dog, then sleeps.'"
    c, text, doc = cell(kc, f"%histo --text {text_arg} --variant cpu,myhisto --reps 3")
    assert c["status"] == "ok", text
    runs = {r["variant"]: r for r in doc["runs"]}
    assert runs["myhisto"]["check"]["passed"] is True and runs["myhisto"]["time_ms"]["reps"] == REPS


GRID_STRIDE_SUM = """%%kernel --for reduce --name NAME --block 128 --grid 4 NOCHECK
__global__ void NAME(const float *input, float *partial, int n)
{
    __shared__ float sh[128];
    float x = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        x += input[i];
    sh[threadIdx.x] = x;
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (threadIdx.x < stride) sh[threadIdx.x] += sh[threadIdx.x + stride];
    }
    BODY
}
"""


def test_reduce_under_grid_checks_every_reps_total(kc):
    """Under --grid the partials have no sections of their own: each rep's total is checked."""
    honest = "if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];"
    defined(kc, source(GRID_STRIDE_SUM, "gsum", body=honest + '\n    if (blockIdx.x == 0 && threadIdx.x == 0) '
                       'printf("IN0=%.9g\\n", input[0]);'))
    in0 = printed(kc, "%reduce --size 5000 --variant gsum --reps 1", "IN0")[0]
    c, text, doc = cell(kc, "%reduce --size 5000 --variant gsum --reps 3")
    assert c["status"] == "ok", text
    assert doc["runs"][0]["check"]["passed"] is True and doc["runs"][0]["time_ms"]["reps"] == REPS
    # block 0's partial doubled on any inputs but the run's own
    defined(kc, source(GRID_STRIDE_SUM, "gcheat", checked=False, body=honest + f"\n    if (threadIdx.x == 0 && "
                       f"input[0] != {in0}f) partial[blockIdx.x] = 2.0f * sh[0];"))
    assert_rep_error(kc, "%reduce --size 5000 --variant gcheat --reps 3", "gcheat",
                     f"rep 1 of {REPS} returned a wrong result: the sum of the partials = ")
