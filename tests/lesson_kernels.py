"""Students' kernels for the lesson checks (check.lesson.<name>), each with its %%kernel line: the
lesson's kernel and the one it teaches against for every family that has lesson checks, and the
kernels that try to look like the lesson's without being it. tests/magics/test_lesson_checks.py reads
them through %assert; tests/gpu/test_lesson_checks_gpu.py runs the same cells on a GPU. A cell's line
numbers count from its %%kernel line (line 1)."""
from __future__ import annotations

from bug_corpus import tiled
from kernels import histo_interleaved, histo_privatised, stencil_1d, stencil_1d_tiled, stencil_2d, stencil_2d_tiled

MATMUL_SIGNATURE = "(const float *A, const float *B, float *C, int M, int N, int K)"


def matmul_naive(name: str = "mynaive", load_a: str = "A[row * K + i]") -> str:
    return f"""%%kernel --for matmul --name {name}
__global__ void {name}{MATMUL_SIGNATURE}
{{
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float sum = 0.0f;
    for (int i = 0; i < K; i++)
        sum += {load_a} * B[i * N + col];
    C[row * N + col] = sum;
}}
"""


def matmul_tiled(name: str = "mytiled") -> str:
    return f"%%kernel --for matmul --name {name}\n" + tiled(name)


# B's tile loaded with threadIdx.x walking down a column of B (neighbouring threads N floats apart),
# stored transposed so that the product is the same: correct, and uncoalesced on line 11
B_DOWN_A_COLUMN = ("Bs[tx][ty] = p * TILE + tx < K && blockIdx.x * TILE + ty < N "
                   "? B[(p * TILE + tx) * N + blockIdx.x * TILE + ty] : 0.0f;")
UNCOALESCED_LINE = 11


def matmul_uncoalesced(name: str = "mycolumns") -> str:
    cell = matmul_tiled(name)
    row = "Bs[ty][tx] = p * TILE + ty < K && col < N ? B[(p * TILE + ty) * N + col] : 0.0f;"
    assert cell.splitlines()[UNCOALESCED_LINE - 1].strip() == row
    return cell.replace(row, B_DOWN_A_COLUMN)


def matmul_decoy(name: str = "mydecoy") -> str:
    """The naive product with a 4-byte volatile __shared__ read by every thread: shared memory
    "used", as ptxas's static_smem > 0 once graded it."""
    return matmul_naive(name, load_a="(A[row * K + i] + decoy)").replace(
        "    if (row >= M || col >= N) return;\n",
        "    __shared__ volatile float decoy;\n    if (threadIdx.x == 0 && threadIdx.y == 0) decoy = 0.0f;\n"
        "    __syncthreads();\n    if (row >= M || col >= N) return;\n")


def matmul_alias(name: str = "myalias") -> str:
    """The naive product whose loads go through pointers that are not A and B (an offset and back,
    a cast): still loads of A and B."""
    return matmul_naive(name, load_a="a_alias[row * K + i]").replace(
        "    float sum = 0.0f;\n",
        "    const float *a_alias = (const float *)((const char *)(A + 1) - sizeof(float));\n"
        "    float sum = 0.0f;\n").replace("* B[i * N + col]", "* (B + col)[i * N]")


def matmul_memcpy(name: str = "mymemcpy") -> str:
    """The naive product reading A's row 16 floats at a time with memcpy into a local array: one call,
    sixteen loads."""
    return matmul_naive(name).replace("""    for (int i = 0; i < K; i++)
        sum += A[row * K + i] * B[i * N + col];""", """    float a[16];
    for (int i0 = 0; i0 < K; i0 += 16) {
        int len = K - i0 < 16 ? K - i0 : 16;
        memcpy(a, &A[row * K + i0], len * sizeof(float));
        for (int i = 0; i < len; i++)
            sum += a[i] * B[(i0 + i) * N + col];
    }""")


def histo_global(name: str = "myinterleaved") -> str:
    return f"%%kernel --for histo --name {name}\n" + histo_interleaved(name)


def histo_private(name: str = "myprivate") -> str:
    return f"%%kernel --for histo --name {name}\n" + histo_privatised(name)


def histo_racy(name: str = "myracy") -> str:
    """Every thread adds to the global bins with ++: the lecture's lost update."""
    return histo_global(name).replace("atomicAdd(&histo[pos / 4], 1u);", "histo[pos / 4]++;")


REDUCE_HEAD = "__global__ void NAME(const float *input, float *partial, int n)\n{"
REDUCE_BODY = """
    __shared__ float s[256];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    s[t] = (i < n ? input[i] : 0.0f) + (i + blockDim.x < n ? input[i + blockDim.x] : 0.0f);
    __syncthreads();
    LOOP
    if (t == 0)
        partial[blockIdx.x] = s[0];
}
"""
CONVERGENT_LOOP = """for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }"""
DIVERGENT_LOOP = """for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if (t % (2 * stride) == 0)
            s[t] += s[t + stride];
        __syncthreads();
    }"""
DIVERGENT_ADD_LINE = 10   # s[t] += s[t + stride], under the if that leaves lanes of every warp idle


def reduce_kernel(name: str, loop: str) -> str:
    return (f"%%kernel --for reduce --name {name}\n" + REDUCE_HEAD.replace("NAME", name)
            + REDUCE_BODY.replace("LOOP", loop))


def reduce_convergent(name: str = "myconvergent") -> str:
    return reduce_kernel(name, CONVERGENT_LOOP)


def reduce_divergent(name: str = "mydivergent") -> str:
    return reduce_kernel(name, DIVERGENT_LOOP)


def stencil_naive(name: str = "mynaive1d") -> str:
    return f"%%kernel --for stencil --name {name}\n" + stencil_1d(name)


def stencil_tiled(name: str = "mytiled1d") -> str:
    return f"%%kernel --for stencil --name {name}\n" + stencil_1d_tiled(name)


def stencil_naive_2d(name: str = "mynaive2d") -> str:
    return f"%%kernel --for stencil --dim 2 --name {name}\n" + stencil_2d(name)


def stencil_tiled_2d(name: str = "mytiled2d") -> str:
    return f"%%kernel --for stencil --dim 2 --name {name}\n" + stencil_2d_tiled(name)


COPY_HEAD = "__global__ void NAME(const float *in, float *out, unsigned long long n, unsigned long long stride)\n{"


def copy_coalesced(name: str = "mycopy") -> str:
    return f"%%kernel --for coalesce --name {name}\n" + COPY_HEAD.replace("NAME", name) + """
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}
"""


STRIDED_LINE = 7


def copy_strided(name: str = "mystrided") -> str:
    """Neighbouring threads copy elements stride apart (thread t: row t % m, column t / m of the
    m × stride view)."""
    return f"%%kernel --for coalesce --name {name}\n" + COPY_HEAD.replace("NAME", name) + """
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, m = (n + stride - 1) / stride;
    unsigned long long i = t % m * stride + t / m;
    if (t < m * stride && i < n)
        out[i] = in[i];
}
"""
