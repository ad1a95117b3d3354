"""Students' %vecadd kernels on the CPU runner (no GPU: the CPU backend), through a real client: the
lecture's vecAddKernel passes its quick check and runs beside ours, and each classic bug is explained
exactly: which thread of which block, at which cell line, touched which element of A, B or C. The
%%kernel cell's quick check (--size 100003 = 390 · 256 + 163: the last block's 93 extra threads fall past
n) finds them. Needs NVRTC (the gate) and g++ (the runner's compiler): without NVRTC the tests skip."""
from __future__ import annotations


import pytest

from conftest import cell, compiled, edited, host_work_runs_s, runner_error, runner_host_work_s
from kernels import VECADD_BODY, vecadd

CPU = {"CUDALAB_BACKEND": "cpu"}


def kernel(name: str, body: str = VECADD_BODY) -> str:
    """The cell's lines, as the messages number them (the %%kernel line is line 1): the body is line 4."""
    return f"%%kernel --for vecadd --name {name}\n" + vecadd(name, body)


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def test_vecadd_kernel_passes_beside_ours(kc):
    c, text, doc = compiled(kc, kernel("myadd"))
    assert c["status"] == "ok", text
    assert doc["check"]["passed"] is True
    assert doc["check"]["tools"]["cpu-runner"]["status"] == "passed"
    # an awkward size and block: ⌈1000/96⌉ = 11 blocks, the last one partly past n
    c, text, doc = cell(kc, "%vecadd --size 1000 --variant myadd --block 96 --reps 5")
    assert c["status"] == "ok", text
    mine = doc["runs"][0]
    assert mine["source"] == "student" and mine["backend"] == "cpu"
    assert mine["check"]["passed"] is True and mine["check"]["wrong"]["count"] == 0
    assert mine["launch"]["grid"][0] == 11 and mine["launch"]["block"] == [96, 1, 1]
    assert mine["impl"].startswith("your kernel myadd on the CPU runner")
    assert mine["kernel_ms"]["reps"] == 3        # at most 3 launches on the runner, whatever --reps says
    c, text, doc = cell(kc, "%vecadd --size 100003 --variant builtin,myadd --reps 1")
    assert c["status"] == "ok", text
    assert {r["variant"]: r["check"]["passed"] for r in doc["runs"]} == {"builtin": True, "myadd": True}


def test_missing_bound_check_reads_past_the_end_of_A(kc):
    ename, evalue, tb = runner_error(kc, kernel("nobound", "C[i] = A[i] + B[i];"))
    assert ename == "KernelError"
    assert "your kernel nobound failed on the CPU runner (%vecadd --size 100003 --memory pageable)" in evalue
    # the first access past n is the load of A: the thread stops there, as it would fault on a GPU
    assert ("out-of-bounds access: thread 163 of block 390 read A[100003] at line 4, past the end of A (100003 "
            "elements) (the thread was stopped there, as a GPU would fault): compare every index with its bound "
            "before using it (93 in all)") in evalue


def test_unguarded_store_writes_past_the_end_of_C(kc):
    # the loads guarded, the store not: the 93 threads past n write C[100003 ..]
    ename, evalue, _ = runner_error(kc, kernel("nostore", "float a = i < n ? A[i] : 0.0f, b = i < n ? B[i] : 0.0f; C[i] = a + b;"))
    assert ename == "KernelError"
    assert ("out-of-bounds access: thread 163 of block 390 wrote C[100003] at line 4, past the end of C (100003 "
            "elements)") in evalue
    assert "(93 in all)" in evalue


def test_reading_one_past_the_end_of_A(kc):
    ename, evalue, _ = runner_error(kc, kernel("offbyone", "if (i < n) C[i] = A[i + 1] + B[i];"))
    assert ename == "KernelError"
    assert ("out-of-bounds access: thread 162 of block 390 read A[100003] at line 4, past the end of A (100003 "
            "elements)") in evalue
    assert "in all" not in evalue                 # one thread only: the last one


def test_writing_into_an_input(kc):
    ename, evalue, _ = runner_error(kc, kernel("intoa", "if (i < n) { ((float *)A)[i] = 0.0f; C[i] = A[i] + B[i]; }"))
    assert ename == "KernelError"
    assert ("write to an input: thread 0 of block 0 wrote A[0] at line 4, but A is an input of the kernel (const) "
            "(100003 in all)") in evalue


def test_a_failed_run_then_the_next_cell_works(kc):
    assert compiled(kc, kernel("myadd"))[0]["status"] == "ok"
    # a 2D block: the kernel numbers its threads with threadIdx.x only, so two rows write one element
    c, _, _ = cell(kc, "%vecadd --size 1000 --variant myadd --block 32x2 --reps 1")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert "two writers: thread (0,0) of block 0 and thread (0,1) of block 0 both wrote C[0] at line 4" in c["evalue"]
    c, text, doc = cell(kc, "%vecadd --size 1000 --variant myadd --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, text


def test_host_work_counts_three_launches_at_the_runner_rate(start_kernel):
    _, kc = start_kernel(env={**CPU, "CUDALAB_HOST_WORK_LIMIT": "0.05"})
    assert compiled(kc, kernel("myadd"))[0]["status"] == "ok"   # the quick check is under the limit
    three = runner_host_work_s(kc, "%vecadd --size 2^24 --variant myadd")
    # every access a checked call: slower than our analogue at the same reps (over 10x on 2 cores; the
    # analogue's estimate counts fewer threads than cores on a big host, so only a factor is asserted)
    c, _, _ = cell(kc, "%vecadd --size 2^24 --variant builtin --reps 3 --warmup 0")
    ours = host_work_runs_s(c["evalue"]) if c["status"] == "error" else 0.0
    assert three > 2 * ours, (three, ours)


# the grid-wide "last block" pattern: every block takes a ticket from a __device__ counter, and only the
# block holding the last one writes C[n-1]; right only when every block sees one counter, as on a GPU
LAST_BLOCK = """%%kernel --for vecadd --name lastblock
__device__ unsigned int tickets;
__global__ void lastblock(const float *A, const float *B, float *C, int n)
{
    __shared__ unsigned int mine;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) C[i] = A[i] + B[i];
    if (threadIdx.x == 0) mine = atomicAdd(&tickets, 1u);
    __syncthreads();
    if (mine == gridDim.x - 1 && threadIdx.x == 0) {
        C[n - 1] = A[n - 1] + B[n - 1];
        tickets = 0;
    }
}
"""


def test_device_variables_are_the_kernels_own_memory_shared_by_every_block(kc):
    """A __device__ variable is the kernel's own global memory, not a wild address (the runner said so,
    failing a correct kernel, and with bug parity the GPU's run of it too), and every block sees the one
    counter: the last block's ticket is drawn once."""
    c, text, doc = compiled(kc, LAST_BLOCK)
    assert c["status"] == "ok" and doc["check"]["passed"] is True, text
    c, text, doc = cell(kc, "%vecadd --size 1000003 --variant lastblock --reps 2 --warmup 1")
    assert c["status"] == "ok" and all(r["check"]["passed"] for r in doc["runs"]), text
