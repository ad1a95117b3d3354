"""Students' %histo kernels on the CPU runner (no GPU: the CPU backend), through a real client: the
lecture's interleaved (global atomics) and privatized (shared memory) kernels count the letter bins
(cl_histo_student) beside ours, on random, skewed and text input; each classic bug is explained exactly:
histo[b]++ without an atomic (the lost update, a global race), shared bins never zeroed (uninitialised
shared memory), the merge with no __syncthreads() before it and a non-atomic histo_s[b]++ (shared races),
a count past the 7 bins (out of bounds). The quick check runs --size 100003 --dist skewed: 90% of the
bytes are 'e', so every bin-1 update is contended. Needs NVRTC and g++: without NVRTC the tests skip."""
from __future__ import annotations

import re

import pytest

from conftest import cell, compiled, edited, runner_error, runner_host_work_s
from kernels import histo_interleaved, histo_privatised

CPU = {"CUDALAB_BACKEND": "cpu"}

# the %%kernel line is line 1
INTERLEAVED = "%%kernel --for histo --name NAME\n" + histo_interleaved("NAME")
LINE_COUNT = 6          # the update of the global histogram

PRIVATIZED = "%%kernel --for histo --name NAME\n" + histo_privatised("NAME")
LINE_ZERO, LINE_COUNT_S, LINE_MERGE = 5, 10, 14


def variant(code: str, name: str, old: str | None = None, new: str = "") -> str:
    return edited(code.replace("NAME", name), old, new)


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def test_lecture_kernels_pass_beside_ours(kc):
    for code in (variant(INTERLEAVED, "myinter"), variant(PRIVATIZED, "mypriv")):
        c, text, doc = compiled(kc, code)
        assert c["status"] == "ok", text
        assert doc["check"]["passed"] is True and doc["check"]["tools"]["cpu-runner"]["status"] == "passed"
    c, text, doc = cell(kc, "%histo --variant interleaved,myinter,mypriv --size 4099 --dist uniform,skewed "
                            "--grid 0,3 --reps 5")
    assert c["status"] == "ok", text
    mine = [r for r in doc["runs"] if r["variant"] != "interleaved"]
    assert len(mine) == 8 and all(r["check"]["passed"] is True for r in doc["runs"]), doc["runs"]
    for r in mine:
        assert r["source"] == "student" and r["backend"] == "cpu" and r["nbins"] == 7
        assert r["implementation"].startswith("your kernel %s on the CPU runner" % r["variant"])
        assert r["time_ms"]["reps"] == 3     # at most 3 launches on the runner, whatever --reps says
    assert sorted({r["grid"] for r in mine})[0] == 3
    # a text, copied to the "device" (its copy timed apart)
    c, text, doc = cell(kc, '%histo --variant mypriv --text "Programming Massively Parallel Processors" --reps 1')
    assert c["status"] == "ok", text
    run = doc["runs"][0]
    assert run["check"]["passed"] is True and run["input"] == "text" and run["h2d_ms"] is not None
    assert run["bins"]["e-h"] == 5 and sum(run["bins"].values()) == 38


def test_non_atomic_global_increment_is_a_global_race(kc):
    ename, evalue, _ = runner_error(kc, variant(INTERLEAVED, "nonatomic", "atomicAdd(&histo[pos / 4], 1u)",
                                                "histo[pos / 4]++"))
    assert ename == "KernelError"
    assert "your kernel nonatomic failed on the CPU runner (%histo --size 100003 --dist skewed)" in evalue
    # usually "thread 11 of block 0 read histo[0] ... while thread 9 of block 0 had written it"; which pair is
    # named first depends on how the blocks met in the runner's processes (global memory is shared)
    assert re.search(r"data race on global memory: thread \d+ of block \d+ read histo\[[0-6]\] at line %d while "
                     r"thread \d+ of block \d+ had written it, with no atomic operation: on a GPU one of the updates "
                     r"is lost \(use atomicAdd\)" % LINE_COUNT, evalue), evalue


def test_shared_bins_never_zeroed_are_uninitialised(kc):
    ename, evalue, _ = runner_error(kc, variant(
        PRIVATIZED, "nozero", "    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) histo_s[b] = 0;\n", ""))
    assert ename == "KernelError"
    assert ("uninitialised shared memory: thread 0 of block 0 updated atomically histo_s[6]") in evalue
    assert "before any thread of the block wrote it" in evalue


def test_merge_without_a_barrier_is_a_shared_race(kc):
    ename, evalue, _ = runner_error(kc, variant(
        PRIVATIZED, "nobarrier", "    __syncthreads();\n    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)\n",
        "    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)\n"))
    assert ename == "KernelError"
    # thread 1 reads its bin for the merge while the other threads are still counting into it
    assert ("data race on shared memory: thread 1 of block 0 read histo_s[1] at line %d while other threads "
            "update it atomically, with no __syncthreads() between them: a barrier is missing" % (LINE_MERGE - 1)) \
        in evalue


def test_non_atomic_shared_increment_is_a_shared_race(kc):
    ename, evalue, _ = runner_error(kc, variant(PRIVATIZED, "sharedplus", "atomicAdd(&histo_s[pos / 4], 1u)",
                                                "histo_s[pos / 4]++"))
    assert ename == "KernelError"
    assert ("data race on shared memory: thread 0 of block 0 read histo_s[1] at line %d while thread 255 of block 0 "
            "had written it at line %d, with no __syncthreads() between them" % (LINE_COUNT_S, LINE_COUNT_S)) in evalue


def test_count_past_the_bins_is_out_of_bounds(kc):
    ename, evalue, _ = runner_error(kc, variant(INTERLEAVED, "pastbins", "pos < 26", "pos < 32"))
    assert ename == "KernelError"
    # the bytes {|}~ DEL and 0x80 (and their case-folded twins) pass pos < 32: pos 28..31 is bin 7
    assert ("out-of-bounds access: thread 17 of block 0 updated atomically histo[7] at line %d, past the end of "
            "histo (7 elements)" % LINE_COUNT) in evalue


def test_atomic_findings_name_their_line(kc):
    _, evalue, _ = runner_error(kc, variant(INTERLEAVED, "pastbins", "pos < 26", "pos < 32"))
    assert "updated atomically histo[7] at line %d" % LINE_COUNT in evalue


def test_race_at_another_size_and_input(kc):
    # --no-check: defined without its quick check, so that it runs where the test says
    code = variant(INTERLEAVED, "lost", "atomicAdd(&histo[pos / 4], 1u)", "histo[pos / 4]++").replace(
        "--name lost", "--name lost --no-check")
    c, text, _ = compiled(kc, code)
    assert c["status"] == "ok", text
    for dist in ("skewed", "text"):
        c, _, _ = cell(kc, "%%histo --variant lost --size 4099 --dist %s --reps 1" % dist)
        assert c["status"] == "error" and c["ename"] == "KernelError", c
        assert "(%%histo --size 4099 --dist %s): data race on global memory: thread" % dist in c["evalue"]
        assert "with no atomic operation" in c["evalue"]
    c, text, doc = cell(kc, "%histo --variant interleaved --size 4099 --dist skewed --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, text    # the next cell works


def test_host_work_counts_three_launches_at_the_runner_rate(start_kernel):
    _, kc = start_kernel(env={**CPU, "CUDALAB_HOST_WORK_LIMIT": "0.05"})
    assert compiled(kc, variant(INTERLEAVED, "myinter"))[0]["status"] == "ok"   # under the limit
    runner_host_work_s(kc, "%histo --size 2^30 --variant myinter")
