"""Students' kernels that several tests compile with %%kernel, each written once here: the lecture's
correct kernel of a family, as a function of the kernel's name (and of the lines a test changes to make
a bug). The %%kernel line is not part of them: each test writes its own, and the cell's line numbers
that its messages quote count from it (line 1), so a kernel's first line here is the cell's line 2.
The CPU runner's tests (tests/magics/test_cpu_runner_*.py), the CPU-backend student tests
(tests/magics/test_student_*.py) and the GPU ones (tests/gpu/test_student_*_gpu.py) share them."""
from __future__ import annotations

# ---- %vecadd: C = A + B, one element a thread; the body is the kernel's third line
VECADD_BODY = "if (i < n) C[i] = A[i] + B[i];"


def vecadd(name: str, body: str = VECADD_BODY, head: str = "") -> str:
    return f"""{head}__global__ void {name}(const float *A, const float *B, float *C, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    {body}
}}
"""


# ---- %reduce: one partial sum per block
def reduce_tree(size: int, down_to: int = 0, sync: str = "__syncthreads();", s: str = "s") -> str:
    """A block's tree sum in __shared__ float s[size], as the first lines of a body that has input and n:
    each thread adds two elements of its block's section of 2 * blockDim.x, then the stride halves while
    it is above down_to (0: down to s[0]; 32: a last warp left to the caller)."""
    return f"""    __shared__ float {s}[{size}];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    float x = i < n ? input[i] : 0.0f;
    if (i + blockDim.x < n) x += input[i + blockDim.x];
    {s}[t] = x;
    for (unsigned stride = blockDim.x / 2; stride > {down_to}; stride /= 2) {{
        {sync}
        if (t < stride) {s}[t] += {s}[t + stride];
    }}
"""


def reduce_convergent(name: str, size: int, head: str = "", tail: str | None = None, **tree) -> str:
    """The lecture's convergent reduction (stride halving, active threads packed): head goes before the
    tree, tail after it (by default thread 0 writes the block's partial)."""
    s = tree.get("s", "s")
    if tail is None:
        tail = f"    if (t == 0) partial[blockIdx.x] = {s}[0];\n"
    return (f"__global__ void {name}(const float *input, float *partial, int n) {{\n{head}"
            + reduce_tree(size, **tree) + tail + "}\n")


def reduce_grid_stride(name: str) -> str:
    """Each thread adds the pairs of its block's sections, a grid stride apart, then the convergent tree:
    under the launch rule block b's partial is its section's sum, and one block sums all n (a kernel
    that serves as both passes, %reduce --second)."""
    return f"""__global__ void {name}(const float *input, float *partial, int n) {{
    __shared__ float s[1024];
    unsigned t = threadIdx.x;
    float x = 0.0f;
    for (long long i = 2LL * blockIdx.x * blockDim.x + t; i < n; i += 2LL * blockDim.x * gridDim.x) {{
        x += input[i];
        if (i + blockDim.x < n) x += input[i + blockDim.x];
    }}
    s[t] = x;
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {{
        __syncthreads();
        if (t < stride) s[t] += s[t + stride];
    }}
    if (t == 0) partial[blockIdx.x] = s[0];
}}
"""


# ---- %histo: the letters a-z in 7 bins of 4 (the last holds y and z)
GRID_STRIDE = """for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)"""
LETTER_BIN = "int pos = (data[i] | 0x20) - 'a';"


def count_letters(bins: str) -> str:
    """The grid-stride loop over the bytes that adds each letter to bins[] with atomicAdd, as body lines."""
    return f"""    {GRID_STRIDE} {{
        {LETTER_BIN}
        if (pos >= 0 && pos < 26) atomicAdd(&{bins}[pos / 4], 1u);
    }}
"""


def histo_interleaved(name: str) -> str:
    """Every thread adds its bytes' bins to the global histogram with atomics."""
    return (f"__global__ void {name}(const unsigned char *data, long long n, unsigned int *histo) {{\n"
            + count_letters("histo") + "}\n")


def histo_privatised(name: str, sync: str = "__syncthreads();") -> str:
    """Each block counts into shared bins, then adds them to the global histogram; sync is the barrier
    before that merge."""
    return f"""#define NUM_BINS 7
__global__ void {name}(const unsigned char *data, long long n, unsigned int *histo) {{
    __shared__ unsigned int histo_s[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) histo_s[b] = 0;
    __syncthreads();
{count_letters("histo_s")}    {sync}
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (histo_s[b]) atomicAdd(&histo[b], histo_s[b]);
}}
"""


# ---- %stencil: out[i] = the weighted sum of in around i, zero outside the array
def stencil_1d(name: str) -> str:
    return f"""__global__ void {name}(const float *in, float *out, const float *w, int n, int R) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = -R; j <= R; j++)
        if (i + j >= 0 && i + j < n) acc += w[j + R] * in[i + j];
    out[i] = acc;
}}
"""


def stencil_2d(name: str) -> str:
    return f"""__global__ void {name}(const float *in, float *out, const float *w, int width, int height, int r) {{
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= height || col >= width) return;
    float acc = 0.0f;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {{
            int y = row + dy, x = col + dx;
            if (y >= 0 && y < height && x >= 0 && x < width)
                acc += w[(dy + r) * (2 * r + 1) + dx + r] * in[y * width + x];
        }}
    out[row * width + col] = acc;
}}
"""


def stencil_1d_tiled(name: str) -> str:
    """The block's elements and R on each side loaded once into dynamic shared memory."""
    return f"""__global__ void {name}(const float *in, float *out, const float *w, int n, int R) {{
    extern __shared__ float tile[];                 // blockDim.x + 2R floats
    int i = blockIdx.x * blockDim.x + threadIdx.x, base = blockIdx.x * blockDim.x - R;
    for (int s = threadIdx.x; s < blockDim.x + 2 * R; s += blockDim.x) {{
        int p = base + s;
        tile[s] = p >= 0 && p < n ? in[p] : 0.0f;
    }}
    __syncthreads();
    if (i >= n) return;
    float acc = 0.0f;
    for (int j = 0; j <= 2 * R; j++) acc += w[j] * tile[threadIdx.x + j];
    out[i] = acc;
}}
"""


def stencil_2d_tiled(name: str) -> str:
    """The block's (T + 2r)² inputs loaded once into dynamic shared memory, then convolved there."""
    return f"""__global__ void {name}(const float *in, float *out, const float *w, int width, int height, int r) {{
    extern __shared__ float tile[];                 // (blockDim.x + 2r) x (blockDim.y + 2r) floats
    int sx = blockDim.x + 2 * r, sy = blockDim.y + 2 * r, k = 2 * r + 1;
    int x0 = blockIdx.x * blockDim.x - r, y0 = blockIdx.y * blockDim.y - r;
    for (int ty = threadIdx.y; ty < sy; ty += blockDim.y)
        for (int tx = threadIdx.x; tx < sx; tx += blockDim.x) {{
            int x = x0 + tx, y = y0 + ty;
            tile[ty * sx + tx] = x >= 0 && x < width && y >= 0 && y < height ? in[y * width + x] : 0.0f;
        }}
    __syncthreads();
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= height || col >= width) return;
    float acc = 0.0f;
    for (int dy = 0; dy < k; dy++)
        for (int dx = 0; dx < k; dx++)
            acc += w[dy * k + dx] * tile[(threadIdx.y + dy) * sx + threadIdx.x + dx];
    out[row * width + col] = acc;
}}
"""


# ---- %grid: the picture kernel, Pout = 2 Pin, one pixel a thread
PICTURE_INDEX = "int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;"
PICTURE_OUT = "Pout[row * width + col]"


def picture(name: str, index: str = PICTURE_INDEX, out: str = PICTURE_OUT) -> str:
    """index: the line that numbers the thread's pixel; out: the element it writes."""
    return f"""__global__ void {name}(const float *Pin, float *Pout, int width, int height) {{
    {index}
    if (row < height && col < width)
        {out} = 2.0f * Pin[row * width + col];
}}
"""
