"""Harness names against the student's macros: correct kernels, each after a block of `#define`s that
would break any code of ours they reached, for the CPU runner's test (tests/magics/test_student_names.py)
and the GPU's (tests/gpu/test_student_names_gpu.py). Everything cudalab adds to a student's translation
unit (NVRTC's parameter check after the cell; the CPU runner's prelude before it, its __shared__ rewrite
inside it and its entry after it) uses keywords, builtins, CUDA's own names or reserved `__cudalab_…`
names, #undef-ed where they follow the cell; the lecture writes `#define TILE_WIDTH 16`, so must we.

Out of scope, as with nvcc: x, y and z (threadIdx.x is a member access, and `#define x` breaks it on a
GPU as well), keywords, CUDA's own names (threadIdx, __syncthreads, atomicAdd, …), and words NVIDIA's
headers expand into a kernel (`__device__` is `__location__(device)` under NVRTC, so `device`,
`global` and `shared` are theirs). A -D on the %%kernel line comes before every header, as nvcc's does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the files that write text into a student's translation unit
HARNESS_SOURCES = ["cpu/simt/runtime/cudalab_simt.h", "kernel/student/compile.c",
                   "kernel/student/host_build.c", "kernel/student/shared_rewrite.c"]


def harness_names() -> list[str]:
    """Every reserved name those files write, read from them: __cudalab_… identifiers and the
    literal suffixes _cudalab_…; a name made with a number (…_slot_%d) is given the ids 0 to 3."""
    names: set[str] = set()
    for rel in HARNESS_SOURCES:
        for name in re.findall(r"(?<![A-Za-z0-9])_{1,2}cudalab_[A-Za-z0-9_]*", (ROOT / rel).read_text()):
            if name.endswith("_"):
                names.update(f"{name}{i}" for i in range(4))
            else:
                names.add(name)
    return sorted(names)


SINGLE_LETTERS = [c for c in "abcdefghijklmnopqrstuvwABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in "xyz"]

COMMON_WORDS = ["TILE_WIDTH", "BLOCK_WIDTH", "TILE", "TILE_SIZE", "BLOCK_SIZE", "BLOCK", "WARP", "WARP_SIZE",
                "F", "N", "M", "K", "T", "W", "R", "data", "in", "out", "idx", "tid", "sum", "size", "width",
                "height", "sdata", "tile", "row", "col", "value", "result", "temp", "tmp", "index", "stride",
                "offset", "count", "args", "arg", "entry", "kernel", "type", "ok", "same", "line", "name", "id",
                "elem", "align", "mask", "lane", "op", "bits", "old", "next", "lim", "expr", "pred", "slot",
                "place", "bind", "site", "here", "shfl", "vec", "p", "v", "ptr", "len", "min_val", "max_val"]


def defines(names: list[str]) -> str:
    """#define each name as a lone ')': whatever of ours it reached would not compile."""
    return "".join(f"#define {n} )\n" for n in names)


# Correct kernels that use none of the names above (x for threadIdx.x aside).

VECADD = """__global__ void names_vecadd(const float *first, const float *second, float *sums, int length)
{
    int at = blockIdx.x * blockDim.x + threadIdx.x;
    if (at < length)
        sums[at] = first[at] + second[at];
}
"""

MATMUL_TILES = """__global__ void names_matmul(const float *left, const float *right, float *product,
                             int rows_a, int cols_b, int inner)
{
    __shared__ float left_tile[16][16];
    __shared__ float right_tile[16][17];
    int across = threadIdx.x, down = threadIdx.y;
    int out_row = blockIdx.y * 16 + down, out_col = blockIdx.x * 16 + across;
    float acc = 0.0f;
    for (int step = 0; step < (inner + 15) / 16; step++) {
        int left_col = step * 16 + across, right_row = step * 16 + down;
        left_tile[down][across] = out_row < rows_a && left_col < inner ? left[out_row * inner + left_col] : 0.0f;
        right_tile[down][across] = right_row < inner && out_col < cols_b ? right[right_row * cols_b + out_col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < 16; kk++)
            acc += left_tile[down][kk] * right_tile[kk][across];
        __syncthreads();
    }
    if (out_row < rows_a && out_col < cols_b)
        product[out_row * cols_b + out_col] = acc;
}
"""

# the same tiles at file scope, each through its slot
MATMUL_FILE_TILES = "__shared__ float left_tile[16][16], right_tile[16][17];\n" + \
    MATMUL_TILES.replace("    __shared__ float left_tile[16][16];\n    __shared__ float right_tile[16][17];\n", "")

# the prelude's functions: shuffles, a barrier count, a ballot, an atomic, assert, clock64
REDUCE_WARPS = """__global__ void names_reduce(const float *input, float *partial, int length)
{
    __shared__ float warp_sums[32];
    __shared__ int done;
    unsigned me = threadIdx.x, first = blockIdx.x * 2 * blockDim.x + me;
    long long started = clock64();
    float mine = (first < length ? input[first] : 0.0f) +
                 (first + blockDim.x < length ? input[first + blockDim.x] : 0.0f);
    for (int apart = 16; apart > 0; apart /= 2)
        mine += __shfl_down_sync(0xffffffffu, mine, apart);
    if (me == 0)
        done = 0;
    unsigned voted = __ballot_sync(0xffffffffu, 1);
    assert(voted == 0xffffffffu && clock64() >= started);
    if (__syncthreads_count(me % 32 == 0) != (int)blockDim.x / 32)
        return;
    if (me % 32 == 0) {
        warp_sums[me / 32] = mine;
        atomicAdd(&done, 1);
    }
    __syncthreads();
    if (me == 0) {
        float all = 0.0f;
        for (int w_at = 0; w_at < done; w_at++)
            all += warp_sums[w_at];
        partial[blockIdx.x] = all;
    }
}
"""

# Harris's reduction with its array at file scope and a helper whose parameter has the array's name (its
# last warp synchronised with __syncwarp, as Volta's independent threads need, each lane's sum in a
# register between them)
SDATA = """__shared__ float sdata[256];

__device__ float warp_reduce(volatile float *sdata, unsigned me)
{
    float mine = sdata[me] + sdata[me + 32];
    for (unsigned apart = 16; apart > 0; apart /= 2) {
        __syncwarp();
        sdata[me] = mine;
        __syncwarp();
        mine += sdata[me + apart];
    }
    return mine;
}

__global__ void names_sdata(const float *input, float *partial, int length)
{
    unsigned me = threadIdx.x, first = blockIdx.x * 2 * blockDim.x + me;
    sdata[me] = (first < length ? input[first] : 0.0f) +
                (first + blockDim.x < length ? input[first + blockDim.x] : 0.0f);
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 32; half /= 2) {
        if (me < half)
            sdata[me] += sdata[me + half];
        __syncthreads();
    }
    if (me < 32) {
        float total = warp_reduce(sdata, me);
        if (me == 0)
            partial[blockIdx.x] = total;
    }
}
"""


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    name: str           # the kernel's
    flags: str          # of the %%kernel line
    source: str         # the cell's body: the #defines, then the kernel

    def cell(self) -> str:
        return f"%%kernel --for {self.family} --name {self.name} {self.flags}\n{self.source}"


CASES = [
    Case("harness-names", "matmul", "names_matmul", "", defines(harness_names()) + MATMUL_FILE_TILES),
    Case("single-letters", "reduce", "names_reduce", "--block 256", defines(SINGLE_LETTERS) + REDUCE_WARPS),
    Case("common-words", "matmul", "names_matmul", "", defines(COMMON_WORDS) + MATMUL_TILES),
    Case("common-words-vecadd", "vecadd", "names_vecadd", "", defines(COMMON_WORDS + SINGLE_LETTERS) + VECADD),
    Case("sdata-file-scope-and-parameter", "reduce", "names_sdata", "--block 256", SDATA),
]
