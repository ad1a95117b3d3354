"""--counters on the CPU runner (no GPU: the CPU backend), through a real client: a student's kernel (and
a variant broken on purpose, where its run finishes) is run once more, counted, and its run's `counters`
carries the hardware's names (tests/schemas/counters.schema.json) with "source": "simulation (CPU runner)"
and the model in "note": 32-byte sectors per warp-wide global load (4 for consecutive floats, 32 at a
stride of 32 floats, 2 for a 16x16 block's two rows), extra wavefronts of shared-memory bank conflicts
(none for consecutive floats or a broadcast, one a request at a stride of 2, 31 at a stride of 32),
active lanes per memory request, and each sector of the buffers read or written once (compulsory DRAM
traffic); what it does not model is null. The table shows those columns and the note once; the built-in
variants' CPU analogues say why they have none; the counted launch is one more, not a timed one; without
the flag nothing changes. The arithmetic itself: tests/unit/test_simt_counts.c. Needs NVRTC and g++ (the
CPU runner): without NVRTC the tests skip."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import cell, compiled, load_schema

CPU = {"CUDALAB_BACKEND": "cpu"}
SHARED = load_schema("counters")
N = 4096                                # 128 warps of 32 floats: every request whole
SIMULATION = "simulation (CPU runner)"

COALESCED = """%%kernel --for vecadd --name coal
__global__ void coal(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
"""
# thread t adds element (t % 32) * (n / 32) + t / 32: the same sum, but the 32 lanes of a warp read
# 32 floats n / 32 apart, each in a sector of its own (the elements past 32 * (n / 32) as they are)
STRIDED = """%%kernel --for vecadd --name strided
__global__ void strided(const float *A, const float *B, float *C, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, rows = n / 32;
    int i = t < rows * 32 ? (t % 32) * rows + t / 32 : t;
    if (i < n) C[i] = A[i] + B[i];
}
"""
# each lane stores its A[i] at s[lane * STRIDE] and reads it back after the barrier: with 32-lane
# blocks, STRIDE 1 touches 32 banks, 2 two words in each even bank, 32 one bank
BANKS = """%%kernel --for vecadd --name banks --block 32
#ifndef STRIDE
#define STRIDE 1
#endif
__global__ void banks(const float *A, const float *B, float *C, int n) {
    __shared__ float s[32 * 32];
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    s[lane * STRIDE] = i < n ? A[i] : 0.0f;
    __syncthreads();
    if (i < n) C[i] = s[lane * STRIDE] + B[i];
}
"""
# lane 0 loads A[i] and stores it in one shared word, which every lane then reads (a broadcast);
# f - f is 0 for the finite inputs, so the sum is exact
BROADCAST = """%%kernel --for vecadd --name bcast --block 32
__global__ void bcast(const float *A, const float *B, float *C, int n) {
    __shared__ float first;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) first = i < n ? A[i] : 0.0f;
    __syncthreads();
    float f = first;
    if (i < n) C[i] = (f - f) + A[i] + B[i];
}
"""
NAIVE_MATMUL = """%%kernel --for matmul --name naive2
__global__ void naive2(const float *A, const float *B, float *C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
"""
# one line of output per launch, from its first thread
CHATTY = """%%kernel --for vecadd --name chatty
__global__ void chatty(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) printf("a launch of chatty\\n");
    if (i < n) C[i] = A[i] + B[i];
}
"""


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def define(kc, *cells: str) -> None:
    for code in cells:
        c, text, _ = compiled(kc, code)
        assert c["status"] == "ok", text


def counted(kc, code: str, schema: str | None) -> tuple[str, list[dict]]:
    """A command's text and runs, valid against the family's schema (where it takes a student's variant
    among its params) and each counters against the shared one."""
    c, text, doc = cell(kc, code)
    assert c["status"] == "ok", c
    if schema:
        jsonschema.validate(doc, load_schema(schema))
    for run in doc["runs"]:
        if "counters" in run:
            jsonschema.validate(run["counters"], SHARED)
    return text, doc["runs"]


def simulated(run: dict) -> dict:
    c = run["counters"]
    assert c["source"] == SIMULATION and c["passes"] == 1, c
    assert "memory instructions only" in c["note"] and "32-byte sector" in c["note"]
    for unmodelled in ("l2_hit_pct", "l1_hit_pct", "achieved_occupancy_pct", "flop", "flop_per_dram_byte"):
        assert c[unmodelled] is None, unmodelled
    return c


def test_coalesced_and_strided_loads(kc):
    define(kc, COALESCED, STRIDED)
    text, runs = counted(kc, f"%vecadd --variant coal,strided,builtin --size {N} --reps 1 --counters", "vecadd")
    coal, strided, builtin = runs
    for run, sectors in ((coal, 4), (strided, 32)):
        c = simulated(run)
        assert run["check"]["passed"] is True
        assert c["global_load_sectors_per_request"] == sectors, (run["variant"], c)
        assert c["warp_execution_efficiency_pct"] == 100 and c["shared_bank_conflicts"] == 0
        # A and B read whole, C written whole, each sector once whatever the order
        assert c["dram_read_bytes"] == 2 * 4 * N and c["dram_write_bytes"] == 4 * N
    assert builtin["counters"]["source"].startswith("unavailable: the CPU backend has no hardware counters")
    assert "CPU runner" in builtin["counters"]["source"]
    table = text[text.index("variant  op"):]
    for header in ("DRAM read MB", "DRAM write MB", "sectors/load", "bank conflicts", "warp eff %"):
        assert header in table, header
    for header in ("L2 hit %", "L1 hit %", "occupancy %"):
        assert header not in table, header       # nothing counted them: no column of dashes
    assert text.count("counters: each kernel run again, untimed, counted on the CPU runner, not measured") == 1
    assert "counters unavailable for builtin: the CPU backend has no hardware counters" in text
    assert "performance counters (CUPTI" not in text


def test_bank_conflicts_and_a_broadcast(kc):
    define(kc, BANKS, BROADCAST)
    _, runs = counted(kc, f"%vecadd --variant banks,bcast --size {N} --reps 1 --counters "
                          "-D STRIDE=1,STRIDE=2,STRIDE=32", "vecadd")
    conflicts = {next(o for o in run["compile"]["options"] if o.startswith("-DSTRIDE=")):
                 simulated(run)["shared_bank_conflicts"] for run in runs if run["variant"] == "banks"}
    warps = N // 32                     # a store and a load each, 1 and 31 extra wavefronts each at 2 and 32
    assert conflicts == {"-DSTRIDE=1": 0, "-DSTRIDE=2": 2 * warps, "-DSTRIDE=32": 2 * 31 * warps}, conflicts
    bcast = [run for run in runs if run["variant"] == "bcast"]
    assert bcast and all(run["check"]["passed"] for run in bcast)
    for run in bcast:
        c = simulated(run)
        assert c["shared_bank_conflicts"] == 0                 # one word for every lane
        # lane 0 alone loads A[i] and stores it; then 32 lanes load it, A[i], B[i] and store C[i]
        assert c["warp_execution_efficiency_pct"] == pytest.approx(100 * (1 + 1 + 4 * 32) / (6 * 32))
        assert c["global_load_sectors_per_request"] == (1 + 4 + 4) / 3


def test_a_matmul_block_of_two_rows_per_warp(kc):
    """A 16x16 block's warp is two rows of 16: A's element is one float per row (2 sectors), B's row of
    16 floats the same for both (2 sectors). Every float of A and B is read from DRAM once in the model,
    so the CGMA the DRAM saw is the compulsory one, 2·n³ / (2·n² floats) = n."""
    define(kc, NAIVE_MATMUL)
    text, runs = counted(kc, "%matmul --variant naive2 --size 64 --reps 1 --counters", None)
    c = simulated(runs[0])
    assert c["global_load_sectors_per_request"] == 2 and c["warp_execution_efficiency_pct"] == 100
    assert c["dram_read_bytes"] == 2 * 64 * 64 * 4 and c["dram_write_bytes"] == 64 * 64 * 4
    assert c["cgma_dram"] == 64
    assert "CGMA (DRAM)" in text and "sectors/load" in text


def test_broken_variants_counted_where_they_finish(kc):
    # off_by_one hides at a multiple of the block: it runs to the end, counted as a student's kernel is
    _, runs = counted(kc, f"%vecadd --variant off_by_one --size {N} --reps 1 --counters", "vecadd")
    assert runs[0]["outcome"] == "right"
    assert simulated(runs[0])["global_load_sectors_per_request"] == 4
    # where the CPU runner stops it, the run is the stop and its findings, as without --counters
    _, runs = counted(kc, "%vecadd --variant off_by_one --size 1000 --reps 1 --counters", "vecadd")
    assert runs[0]["outcome"] == "stopped" and "counters" not in runs[0]
    _, runs = counted(kc, "%histo --variant lost_update --size 100003 --reps 1 --counters", "histo")
    assert runs[0]["outcome"] == "stopped" and "counters" not in runs[0]


def test_one_more_launch_and_none_without_the_flag(kc):
    define(kc, CHATTY)
    c, text, doc = cell(kc, f"%vecadd --variant chatty --size {N} --reps 2")
    assert c["status"] == "ok", c
    assert text.count("a launch of chatty") == 2               # the timed ones, nothing else
    assert "counters" not in doc["runs"][0]
    assert "sectors/load" not in text and "counted on the CPU runner" not in text
    c, text, doc = cell(kc, f"%vecadd --variant chatty --size {N} --reps 2 --counters")
    assert c["status"] == "ok", c
    assert text.count("a launch of chatty") == 3               # and the counted one
    assert doc["runs"][0]["time_ms"]["reps"] == 2
    simulated(doc["runs"][0])
