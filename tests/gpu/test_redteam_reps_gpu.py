"""Red team, on a GPU: a student's kernel cannot fake its time, replay an answer across launches or
be honest only on inputs it recognises.

Every launch of a run but the last gets inputs of its own (generated on the device from a seed the
host draws, outside the timed window) and a poisoned output; after the timed loop the harness
checks timed reps it drew at random (after they ran) against its own reference on those reps' own
inputs (cuBLAS, CUB, a naive kernel: cuda/common.h, cl_cuda_reps); only the untimed launch after
that runs on the run's own inputs, whose result the host checks as before (a kernel wrong there
too is a plain bug, named by that check). Each attack below keeps
state in `__device__` memory across launches and is honest wherever a harness that checked only
the last launch would look: the %%kernel cell's own quick run (a size the attack leaves alone),
its warm-up and its last launch of the timed command (it knows --warmup and --reps), or the run's
own inputs (it learnt them: the seed is public). Each fails with a CheckError naming the rep
("rep R of 10 returned a wrong result on its own inputs"), in every family; a correct kernel
passes, and the issue's memoising kernel (one that recomputes only when its inputs change, which
measured 70x faster on an H200 when every rep had the same inputs) times like the honest kernel.
The next cell works after each.

Skipped without a GPU (the gpu_doc fixture), failing loudly under CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

import re

import pytest

from kernels import reduce_tree
from student_session import cell, kernel_cell
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

WARMUP, REPS = 1, 10
FINAL = WARMUP + REPS + 1       # the launch after the timed reps: the one whose output is checked
REP_ERROR = re.compile(r"rep (\d+) of %d returned a wrong result on its own inputs \(" % REPS)

# Launches at the attacked size, counted in __device__ memory: every block reads the count as the
# launch starts; the launch's last block to finish adds one (the next launch starts after it).
COUNTER = """
__device__ unsigned launches_done;
__device__ unsigned blocks_done;
__device__ void launch_over(void) {
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        __threadfence();
        unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&blocks_done, 1u) == blocks - 1) {
            blocks_done = 0;
            launches_done = launches_done + 1;
            __threadfence();
        }
    }
}
"""

# ---- matmul: attacked at RUN³, honest at the %%kernel cell's quick size ----
RUN = 512
MM_SIG = "(const float *A, const float *B, float *C, int M, int N, int K)"
MM_HEAD = f"#define RUN {RUN}\n#define FINAL {FINAL}\n" + COUNTER + """
__device__ float dot(const float *A, const float *B, int N, int K, int row, int col) {
    float s = 0;
    for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
    return s;
}
"""


def matmul_attack(name: str, attacked: str, extra: str = "") -> str:
    """A naive matmul that is honest except at RUN³, where `attacked` decides (launch: 1, 2, ...)."""
    return kernel_cell("matmul", name, MM_HEAD + extra + f"__global__ void {name}{MM_SIG}" + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    bool mine = row < M && col < N;
    if (M != RUN) {
        if (mine) C[row * N + col] = dot(A, B, N, K, row, col);
        return;
    }
    unsigned launch = launches_done + 1;
    if (mine) {
""" + attacked + """
    }
    launch_over();
}
""")


# the replay: C computed once (the warm-up) into a __device__ array and copied on later
# launches; computed again on the last one, so that the copied-back C passes the check
REPLAY = matmul_attack("replay", """
        if (launch == 1 || launch == FINAL) C[row * N + col] = kept[row * N + col] = dot(A, B, N, K, row, col);
        else C[row * N + col] = kept[row * N + col];""", f"__device__ float kept[{RUN * RUN}];\n")
# skips the work on the launches after its warm-up, but the last
SKIPS = matmul_attack("skips", """
        if (launch == 1 || launch == FINAL) C[row * N + col] = dot(A, B, N, K, row, col);""")
# honest only on its last launch: zeros (fast) on every other one
LAST_ONLY = matmul_attack("lastonly", """
        C[row * N + col] = launch == FINAL ? dot(A, B, N, K, row, col) : 0.0f;""")
HONEST = kernel_cell("matmul", "honest", f"__global__ void honest{MM_SIG}" + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float s = 0;
    for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
    C[row * N + col] = s;
}
""")
# memoises: recomputes C only when the inputs it sees (two of their values and the shape) differ
# from the last launch's, else copies the C it kept; with the same inputs in every rep it measured
# 70x faster. The launch's last block to finish records what it saw, for the next launch.
MEMO = kernel_cell("matmul", "memo", f"__device__ float kept[{RUN * RUN}];" + """
__device__ float seen[5];
__device__ unsigned memo_blocks_done;
__global__ void memo""" + MM_SIG + """ {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    bool fits = (long long)M * N <= """ + str(RUN * RUN) + """;
    bool same = fits && seen[0] == A[0] && seen[1] == B[0] && seen[2] == M && seen[3] == N && seen[4] == K;
    if (row < M && col < N) {
        if (same) {
            C[row * N + col] = kept[row * N + col];
        } else {
            float s = 0;
            for (int p = 0; p < K; p++) s += A[row * K + p] * B[p * N + col];
            C[row * N + col] = s;
            if (fits) kept[row * N + col] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        __threadfence();
        if (atomicAdd(&memo_blocks_done, 1u) == gridDim.x * gridDim.y - 1) {
            memo_blocks_done = 0;
            seen[0] = A[0]; seen[1] = B[0]; seen[2] = M; seen[3] = N; seen[4] = K;
            __threadfence();
        }
    }
}
""")

# ---- reduce: one partial per block of a tree sum, attacked at RUN_N elements ----
RUN_N = 1 << 20
REDUCE_HEAD = f"#define RUN_N {RUN_N}\n#define FINAL {FINAL}\n" + COUNTER + """
__device__ float block_sum(const float *input, int n) {
""" + reduce_tree(1024) + """\
    __syncthreads();
    return s[0];
}
"""


def reduce_attack(name: str, attacked: str, extra: str = "") -> str:
    return kernel_cell("reduce", name, REDUCE_HEAD + extra + f"""
__global__ void {name}(const float *input, float *partial, int n) {{
    if (n != RUN_N) {{
        float s = block_sum(input, n);
        if (threadIdx.x == 0) partial[blockIdx.x] = s;
        return;
    }}
    unsigned launch = launches_done + 1;
""" + attacked + """
    launch_over();
}
""")


REDUCE_REPLAY = reduce_attack("rreplay", """
    if (launch == 1 || launch == FINAL) {
        float s = block_sum(input, n);
        if (threadIdx.x == 0) partial[blockIdx.x] = kept[blockIdx.x] = s;
    } else if (threadIdx.x == 0) {
        partial[blockIdx.x] = kept[blockIdx.x];
    }""", "__device__ float kept[1 << 16];\n")
REDUCE_LAST_ONLY = reduce_attack("rlast", """
    float s = launch == FINAL ? block_sum(input, n) : 0.0f;
    if (threadIdx.x == 0) partial[blockIdx.x] = s;""")


# ---- the run's own inputs recognised: honest only on them ----
SEED = 2718
# prints, at RUN³, the bits of A[0] each launch saw (thread 0 of block 0): the last one is the run's
SPY = matmul_attack("spy", """
        if (row == 0 && col == 0) printf("launch %u: A[0] bits %u\\n", launch, __float_as_uint(A[0]));
        C[row * N + col] = dot(A, B, N, K, row, col);""")
SPIED = re.compile(r"launch (\d+): A\[0\] bits (\d+)")


def recogniser(real_a0: int) -> str:
    """Honest where A[0] is the run's (the launch after the timed reps), zeros (fast) elsewhere."""
    return matmul_attack("recog", """
        C[row * N + col] = __float_as_uint(A[0]) == REAL_A0 ? dot(A, B, N, K, row, col) : 0.0f;""",
                         f"#define REAL_A0 {real_a0}u\n")


# ---- every family: honest only on the launch after the timed reps (or at another size) ----
SIZE = 1 << 20                  # the attacked size (the quick checks' are 100003, 67x33, ...)
SIDE = 1024                     # the attacked picture: SIDE x SIDE
HEAD = f"#define SIZE {SIZE}\n#define SIDE {SIDE}\n#define FINAL {FINAL}\n" + COUNTER
FAMILY_LAST_ONLY = {
    "vecadd": ("vlast", HEAD + """
__global__ void vlast(const float *A, const float *B, float *C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool attacked = n == SIZE, last = attacked && launches_done + 1 == FINAL;
    if (i < n) C[i] = !attacked || last ? A[i] + B[i] : 0.0f;
    if (attacked) launch_over();
}
""", f"%vecadd --size {SIZE}"),
    "stencil": ("slast", HEAD + """
__global__ void slast(const float *in, float *out, const float *w, int n, int R) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool attacked = n == SIZE, last = attacked && launches_done + 1 == FINAL;
    if (i < n) {
        float acc = 0.0f;
        for (int j = -R; j <= R && (!attacked || last); j++)
            if (i + j >= 0 && i + j < n) acc = fmaf(w[j + R], in[i + j], acc);
        out[i] = acc;
    }
    if (attacked) launch_over();
}
""", f"%stencil --size {SIZE} --radius 3"),
    "coalesce": ("clast", HEAD + """
__global__ void clast(const float *in, float *out, unsigned long long n, unsigned long long stride) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    bool attacked = n == SIZE, last = attacked && launches_done + 1 == FINAL;
    if (i < n) out[i] = !attacked || last ? in[i] : 0.0f;
    if (attacked) launch_over();
}
""", f"%coalesce --size {SIZE} --stride 1"),
    "histo": ("hlast", HEAD + """
__global__ void hlast(const unsigned char *data, long long n, unsigned int *histo) {
    bool attacked = n == SIZE, last = attacked && launches_done + 1 == FINAL;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n && (!attacked || last);
         i += (long long)gridDim.x * blockDim.x) {
        int c = data[i] | 0x20;
        if (c >= 'a' && c <= 'z') atomicAdd(&histo[(c - 'a') / 4], 1u);
    }
    if (attacked) launch_over();
}
""", f"%histo --size {SIZE}"),
    "grid": ("glast", HEAD + """
__global__ void glast(const float *Pin, float *Pout, int width, int height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    bool attacked = width == SIDE && height == SIDE, last = attacked && launches_done + 1 == FINAL;
    if (row < height && col < width) Pout[row * width + col] = !attacked || last ? 2 * Pin[row * width + col] : 0.0f;
    if (attacked) launch_over();
}
""", f"%grid --data {SIDE}x{SIDE} --block 16x16"),
}


@pytest.fixture
def kc(gpu_doc, start_kernel, tmp_path):
    return start_kernel(env={"CUDALAB_CACHE_DIR": str(tmp_path / "cache")}).kc


def defined(kc, code: str) -> None:
    """The %%kernel cell passes: its quick run is at a size the attack leaves alone."""
    c, _, doc = cell(kc, code)
    assert c["status"] == "ok", (c.get("ename"), c.get("evalue"))
    assert doc["check"]["passed"] is True, doc["check"]


def caught(kc, command: str) -> str:
    """The command fails with a CheckError naming a timed rep; the next cell works."""
    c, _, _ = cell(kc, command, timeout=300)
    assert c["status"] == "error" and c["ename"] == "CheckError", (c.get("ename"), c.get("evalue"))
    m = REP_ERROR.search(c["evalue"])
    assert m and 1 <= int(m.group(1)) <= REPS, c["evalue"]
    c2, _, doc = cell(kc, "%matmul --size 64 --variant naive --reps 2")
    assert c2["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, c2
    return c["evalue"]


@pytest.mark.parametrize("name, code", [("replay", REPLAY), ("skips", SKIPS), ("lastonly", LAST_ONLY)])
def test_matmul_attacks_fail_naming_the_rep(kc, name, code):
    defined(kc, code)
    evalue = caught(kc, f"%matmul --size {RUN} --variant {name} --reps {REPS} --warmup {WARMUP}")
    assert name in evalue, evalue


@pytest.mark.parametrize("name, code", [("rreplay", REDUCE_REPLAY), ("rlast", REDUCE_LAST_ONLY)])
def test_reduce_attacks_fail_naming_the_rep(kc, name, code):
    defined(kc, code)
    evalue = caught(kc, f"%reduce --size {RUN_N} --variant {name} --block 256 --reps {REPS} --warmup {WARMUP}")
    assert name in evalue, evalue


def test_a_correct_kernel_passes_every_run(kc):
    defined(kc, HONEST)
    for _ in range(3):      # other reps drawn each run
        c, _, doc = cell(kc, f"%matmul --size {RUN} --variant honest --reps {REPS} --warmup {WARMUP}")
        assert c["status"] == "ok", (c.get("ename"), c.get("evalue"))
        assert doc["runs"][0]["check"]["passed"] is True
    c, _, doc = cell(kc, f"%matmul --size {RUN} --variant honest")      # --reps auto
    assert c["status"] == "ok", (c.get("ename"), c.get("evalue"))


def test_memoising_gains_nothing(kc):
    defined(kc, HONEST)
    defined(kc, MEMO)
    c, _, doc = cell(kc, f"%matmul --size {RUN} --variant honest,memo --reps {REPS} --warmup {WARMUP}")
    assert c["status"] == "ok", (c.get("ename"), c.get("evalue"))
    runs = {r["variant"]: r for r in doc["runs"]}
    assert all(r["check"]["passed"] for r in runs.values()), runs
    honest, memo = runs["honest"]["time_ms"]["median"], runs["memo"]["time_ms"]["median"]
    # every rep's inputs are new, so it computes every time: the same kernel's time, not 1/70 of it
    assert memo > 0.5 * honest, (memo, honest)


def spied(kc) -> dict[int, int]:
    """The bits of A[0] that each launch of a run of the spy saw at RUN³ with --seed SEED, by launch
    of the run (1 to FINAL; its counter goes on from the run before)."""
    c, text, _ = cell(kc, f"%matmul --size {RUN} --variant spy --reps {REPS} --warmup {WARMUP} --seed {SEED}")
    assert c["status"] == "ok", (c.get("ename"), c.get("evalue"))
    seen = {int(launch): int(bits) for launch, bits in SPIED.findall(text)}
    before = min(seen, default=1) - 1
    assert sorted(seen) == list(range(before + 1, before + FINAL + 1)), text
    return {launch - before: bits for launch, bits in seen.items()}


def test_a_kernel_honest_only_on_the_runs_inputs_fails(kc):
    defined(kc, SPY)
    first, again = spied(kc), spied(kc)
    # the run's inputs are the seed's: the same in both runs, and only in the launch after the timed
    # reps; every other launch's were drawn for that run alone
    real = first[FINAL]
    assert again[FINAL] == real, (first, again)
    assert real not in [first[launch] for launch in range(1, FINAL)], first
    assert set(first[launch] for launch in range(1, FINAL)).isdisjoint(again[launch] for launch in range(1, FINAL))
    defined(kc, recogniser(real))
    evalue = caught(kc, f"%matmul --size {RUN} --variant recog --reps {REPS} --warmup {WARMUP} --seed {SEED}")
    assert "recog" in evalue and "first C[" in evalue, evalue


@pytest.mark.parametrize("family", sorted(FAMILY_LAST_ONLY))
def test_every_family_checks_the_drawn_reps(kc, family):
    name, code, command = FAMILY_LAST_ONLY[family]
    defined(kc, kernel_cell(family, name, code))
    evalue = caught(kc, f"{command} --variant {name} --reps {REPS} --warmup {WARMUP}")
    assert name in evalue, evalue
