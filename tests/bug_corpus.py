"""The classic bugs of students' kernels, one per kind the CPU runner explains: each a %%kernel cell, the
family command that runs it at a small awkward size, and what each side must say. The CPU runner's
tests read the CPU phrases (tests/magics/test_cpu_runner_corpus.py); on a GPU the same kernels run under
compute-sanitizer (tests/gpu/test_bug_parity_gpu.py), which prints the table of what each side reports.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    name: str           # the kernel's name, and the bug's
    what: str           # the bug in words, for the table
    family: str
    source: str         # the kernel's source (the %%kernel cell's body)
    run: str            # the family command's flags (the variant is added)
    cpu: str            # a phrase the CPU runner's error must hold
    gpu_tool: str       # the compute-sanitizer tool that should see it, or "" for the exact check
    gpu: str            # a phrase of that tool's report (or of the check's error)

    def cell(self) -> str:
        return f"%%kernel --for {self.family} --name {self.name} --no-check\n{self.source}"

    def command(self, extra: str = "") -> str:
        return f"%{self.family} {self.run} --variant {self.name} --reps 1 {extra}".strip()


TILED = """#define TILE 16
__global__ void NAME(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int p = 0; p < (K + TILE - 1) / TILE; p++) {
        LOAD_A
        Bs[ty][tx] = p * TILE + ty < K && col < N ? B[(p * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            sum += As[ty][i] * Bs[i][tx];
        SYNC2
    }
    STORE
}
"""


def tiled(name: str, load_a: str = "As[ty][tx] = row < M && p * TILE + tx < K ? A[row * K + p * TILE + tx] : 0.0f;",
          sync2: str = "__syncthreads();", store: str = "if (row < M && col < N) C[row * N + col] = sum;") -> str:
    return (TILED.replace("NAME", name).replace("LOAD_A", load_a).replace("SYNC2", sync2)
            .replace("STORE", store))


REDUCE = """__global__ void NAME(const float *input, float *partial, int n)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    LOAD
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        if (t < stride)
            s[t] += s[t + STRIDE];
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}
"""


def reduce(name: str, load: str = "s[t] = (i < n ? input[i] : 0.0f) + (i + blockDim.x < n ? input[i + blockDim.x] : 0.0f);",
           stride: str = "stride") -> str:
    return REDUCE.replace("NAME", name).replace("LOAD", load).replace("STRIDE", stride)


HISTO = """__global__ void NAME(const unsigned char *data, long long n, unsigned int *histo)
{
    __shared__ unsigned int bins[7];
    INIT
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        int c = data[i] | 0x20;
        if (c >= 'a' && c <= 'z')
            ADD
    }
    __syncthreads();
    if (threadIdx.x < 7)
        atomicAdd(&histo[threadIdx.x], bins[threadIdx.x]);
}
"""


def histo(name: str, init: str = "if (threadIdx.x < 7) bins[threadIdx.x] = 0;",
          add: str = "atomicAdd(&bins[(c - 'a') / 4], 1u);") -> str:
    return HISTO.replace("NAME", name).replace("INIT", init).replace("ADD", add)


MATMUL_RUN = "--m 67 --n 33 --k 129"
REDUCE_RUN = "--size 100003"
HISTO_RUN = "--size 100003 --dist skewed"

BUGS = [
    Bug("no_bound_check", "tiled matmul without `if (row < M && col < N)` on the store", "matmul",
        tiled("no_bound_check", store="C[row * N + col] = sum;"), MATMUL_RUN,
        "out-of-bounds access: thread (0,3) of block (0,4) wrote C[67][0]", "", "CheckError"),
    # (on a GPU the harness's guard bytes around C are allocated memory: memcheck sees nothing, the guard
    # check names the write outside C)
    Bug("no_second_barrier", "tiled matmul missing its second `__syncthreads()`", "matmul",
        tiled("no_second_barrier", sync2=""), MATMUL_RUN,
        "data race on shared memory: thread (1,0) of block (0,0) read As[0][0]", "racecheck", "hazard"),
    Bug("tile_left_unwritten", "tiled matmul loading A's tile only where it is inside A (no zero padding)", "matmul",
        tiled("tile_left_unwritten", load_a="if (row < M && p * TILE + tx < K) As[ty][tx] = A[row * K + p * TILE + tx];"),
        MATMUL_RUN, "uninitialised shared memory", "initcheck", ""),
    Bug("early_return", "reduction returning early before its `__syncthreads()` tree", "reduce",
        reduce("early_return", load="if (i >= n) return;\n    s[t] = input[i] + (i + blockDim.x < n ? input[i + blockDim.x] : 0.0f);"),
        REDUCE_RUN, "divergent barrier in block", "", ""),
    # (on an H100 synccheck reports nothing: threads that returned no longer count at a barrier; the
    # tree then adds what the returned threads' slots of shared memory held before, which is whatever
    # the SM last kept there: one H100 run gave wrong partials (CheckError), another, after the L2
    # flush became a kernel, zeros and a passing check. No GPU symptom is promised; the CPU runner
    # names the bug every time)
    Bug("tree_past_the_array", "reduction reading `s[t + 2*stride]`, past its shared array", "reduce",
        reduce("tree_past_the_array", stride="2 * stride"), REDUCE_RUN,
        "out-of-bounds shared memory", "memcheck", "Invalid __shared__ read"),
    Bug("shared_lost_update", "histogram adding to its shared bins with `++` instead of atomicAdd", "histo",
        histo("shared_lost_update", add="bins[(c - 'a') / 4]++;"), HISTO_RUN,
        "data race on shared memory", "racecheck", "hazard"),
    Bug("global_lost_update", "histogram adding straight to global bins with `++`", "histo",
        histo("global_lost_update", add="histo[(c - 'a') / 4]++;"), HISTO_RUN,
        "data race on global memory", "", "CheckError"),
    Bug("bins_not_zeroed", "privatised histogram that never zeroes its shared bins", "histo",
        histo("bins_not_zeroed", init=""), HISTO_RUN, "uninitialised shared memory", "initcheck", ""),
]
