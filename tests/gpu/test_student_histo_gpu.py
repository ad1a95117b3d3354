"""On a GPU: students' %histo kernels (%%kernel --for histo) run through the family's harness.
The lecture's interleaved (global atomics) and privatised (shared memory) kernels pass on uniform,
skewed and text input, next to the built-ins; known-wrong kernels are rejected with a CheckError
naming the first wrong bin: the lost update (non-atomic increments, on contended input), no
grid-stride loop (only the first gridDim x blockDim bytes), a wrong bin mapping, a write past the
7 bins. That is the GPU's own check, run here with --no-cpu-check; by default the CPU runner's run of
the kernel (bug parity) names the race or the write first, as a KernelError with its line: each test
asserts that too. Skipped without a GPU (CUDALAB_REQUIRE_GPU=1 fails instead)."""
from __future__ import annotations

import re

from conftest import execute
from kernels import GRID_STRIDE, LETTER_BIN, histo_interleaved, histo_privatised
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

RESULT = "application/vnd.cudalab.result+json"

INTERLEAVED = histo_interleaved("NAME")
PRIVATISED = histo_privatised("NAME", sync="SYNC")

# histo[b]++ on the global histogram: increments that race lose updates
NON_ATOMIC = INTERLEAVED.replace("atomicAdd(&histo[pos / 4], 1u)", "histo[pos / 4]++")
# one byte per thread: only the first gridDim.x * blockDim.x bytes are counted
NO_STRIDE = f"""__global__ void NAME(const unsigned char *data, long long n, unsigned int *histo) {{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {{
        {LETTER_BIN}
        if (pos >= 0 && pos < 26) atomicAdd(&histo[pos / 4], 1u);
    }}
}}
"""
WRONG_BIN = INTERLEAVED.replace("histo[pos / 4]", "histo[pos % 7]")
BYTE_BINS = f"""__global__ void NAME(const unsigned char *data, long long n, unsigned int *histo) {{
    {GRID_STRIDE} atomicAdd(&histo[data[i]], 1u);
}}
"""

FIRST_WRONG = re.compile(r"histo\[\d+\] \([a-z]-[a-z]\) = \d+, expected \d+")


def result(msgs: list[dict]) -> dict:
    for m in reversed(msgs):
        if m["msg_type"] in ("execute_result", "display_data", "update_display_data") \
                and RESULT in m["content"].get("data", {}):
            return m["content"]["data"][RESULT]
    raise AssertionError("no result document")


def define(kc, name: str, source: str, flags: str = "") -> dict:
    """Compiles a kernel (its quick check included); the reply's content."""
    reply, msgs = execute(kc, f"%%kernel --for histo --name {name} {flags}\n{source.replace('NAME', name)}",
                          timeout=120)
    content = reply["content"]
    content["doc"] = result(msgs) if content["status"] == "ok" else None
    return content


def run(kc, cell: str) -> tuple[dict, dict | None]:
    reply, msgs = execute(kc, cell, timeout=300)
    c = reply["content"]
    return c, result(msgs) if c["status"] == "ok" else None


def test_lecture_kernels_pass_uniform_and_contended(gpu_doc, start_kernel):
    _, kc, *_ = start_kernel()
    for name, src in (("myinter", INTERLEAVED), ("mypriv", PRIVATISED.replace("SYNC", "__syncthreads();"))):
        c = define(kc, name, src)
        assert c["status"] == "ok", c
        assert c["doc"]["check"]["passed"] is True, c["doc"]["check"]     # the quick check ran
        assert "--size 100003 --dist skewed" in c["doc"]["quick_check"]
    c, doc = run(kc, "%histo --variant interleaved,privatized,myinter,mypriv --dist uniform,text,skewed "
                     f"--size 1000003,{2**24 + 5} --reps 2 --warmup 1")
    assert c["status"] == "ok", c
    assert doc["params"]["bins"] == "letters"                 # the default when a student's kernel runs
    runs = doc["runs"]
    assert len(runs) == 4 * 3 * 2
    for r in runs:
        assert r["check"]["passed"] is True, r
        assert r["nbins"] == 7
    mine = [r for r in runs if r["variant"] in ("myinter", "mypriv")]
    for r in mine:
        assert r["source"] == "student" and r["launch"]["block"] == [256, 1, 1]
        assert r["grid"] % gpu_doc["devices"][0]["sms"] == 0  # SMs x resident blocks
    skewed = next(r for r in mine if r["dist"] == "skewed")
    assert "contended" in skewed["check"]["method"]
    # a text with capitals, block and grid sweeps
    c, doc = run(kc, '%histo --variant privatized,mypriv --text "Programming Massively Parallel Processors" '
                     "--block 32,96,1024 --grid 0,1,7 --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert {r["block"] for r in doc["runs"] if r["variant"] == "mypriv"} == {32, 96, 1024}
    assert {1, 7} <= {r["grid"] for r in doc["runs"] if r["variant"] == "mypriv"}


def assert_kernel_error(c: dict, says: str) -> None:
    """The CPU runner's finding (bug parity), a KernelError saying SAYS."""
    assert c["status"] == "error" and c["ename"] == "KernelError" and says in c["evalue"], c


def assert_check_error(c: dict, pattern: re.Pattern = FIRST_WRONG) -> None:
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert pattern.search(c["evalue"]), c["evalue"]


def test_lost_update_fails_on_contended_input(gpu_doc, start_kernel):
    _, kc, *_ = start_kernel()
    assert_kernel_error(define(kc, "nonatomic", NON_ATOMIC), "data race")
    c = define(kc, "nonatomic", NON_ATOMIC, "--no-cpu-check")
    assert_check_error(c)                                    # the quick check is contended already
    c, _ = run(kc, f"%histo --variant nonatomic --dist skewed --size {2**22} --reps 1 --warmup 0")
    assert_check_error(c)
    # the exact check on contended input caught it: racecheck would not (global memory)
    assert "contended" in c["evalue"] and "racecheck does not see races in global memory" in c["evalue"]


def test_missing_barrier_before_the_merge(gpu_doc, start_kernel):
    # Without the __syncthreads() before merging, a thread may add a bin to the global histogram
    # before the other warps of its block finished counting into it. Whether that shows depends
    # on warp scheduling: it may pass by luck, so either outcome is accepted, but nothing else.
    _, kc, *_ = start_kernel()
    c = define(kc, "nosync", PRIVATISED.replace("SYNC", ""), "--no-check")
    assert c["status"] == "ok", c
    c, doc = run(kc, f"%histo --variant nosync --dist skewed,uniform --size {2**22} --reps 3 --warmup 0")
    assert_kernel_error(c, "data race")
    c, doc = run(kc, f"%histo --variant nosync --dist skewed,uniform --size {2**22} --reps 3 --warmup 0 "
                     "--no-cpu-check")
    if c["status"] == "ok":
        assert all(r["check"]["passed"] for r in doc["runs"])
    else:       # the run's histogram wrong, or only a timed rep's (cuda/common.h checks reps drawn at random)
        assert_check_error(c, re.compile(FIRST_WRONG.pattern + r"|rep \d of 3 returned a wrong result .*or a race"))


def test_no_grid_stride_loop_counts_part_of_the_input(gpu_doc, start_kernel):
    _, kc, *_ = start_kernel()
    c = define(kc, "nostride", NO_STRIDE, "--no-check")
    assert c["status"] == "ok", c
    # the default grid is SMs x resident blocks: far fewer threads than 2^24 bytes
    c, _ = run(kc, f"%histo --variant nostride --size {2**24} --reps 1 --warmup 0")
    assert_check_error(c)
    c, _ = run(kc, "%histo --variant nostride --size 100003 --grid 3 --reps 1 --warmup 0")
    assert_check_error(c)


def test_wrong_bin_mapping(gpu_doc, start_kernel):
    _, kc, *_ = start_kernel()
    c = define(kc, "mod7", WRONG_BIN)
    assert_check_error(c)
    c, _ = run(kc, f"%histo --variant mod7 --dist uniform --size {2**20} --reps 1 --warmup 0")
    assert_check_error(c)


def test_write_past_the_bins(gpu_doc, start_kernel):
    _, kc, *_ = start_kernel()
    assert_kernel_error(define(kc, "bytebins", BYTE_BINS), "past the end of histo")
    c = define(kc, "bytebins", BYTE_BINS, "--no-cpu-check")
    assert_check_error(c, re.compile(r"histo\[\d+\] = \d+, past the 7 bins"))
