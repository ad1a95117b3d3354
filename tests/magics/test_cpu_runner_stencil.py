"""Students' %stencil kernels on the CPU runner (the CPU backend, no GPU), through a real kernel and
jupyter_client: a correct 1D and 2D kernel pass (their %%kernel quick check too), and so do the cells
`%stencil --show-source naive|tiled --as-kernel` makes, as they are; the classic bugs are each named
exactly as the runner finds them, a KernelError naming the kind, the element (in[-3], out[1000],
tile[262], out[33][0]), the thread and block and the cell line: the left bound missing, the `if (i < n)`
missing on the write, the tiled kernel without its __syncthreads(), a halo load that leaves the edge's
tile slots unwritten, a tile index past the dynamic shared array (also when --smem makes it small), a
2D kernel without its column bound; a kernel whose quick check failed is kept, to be run and debugged;
the host-work estimate is the runner's (slower than ours, at most 3 launches whatever --reps says).
Sizes are small and awkward, one rep. NVRTC and g++ are needed (the tests are skipped without NVRTC).
"""
from __future__ import annotations


import jsonschema
import pytest

from conftest import cell, compiled, host_work_runs_s, load_schema
from kernels import stencil_1d, stencil_2d

H1 = "%%kernel --for stencil --name {name}\n"
H2 = "%%kernel --for stencil --dim 2 --name {name}\n"
RUN = "%stencil --size 1000 --radius 3 --variant {name} --reps 1 --warmup 0"

# line 1 is the %%kernel line: the kernel's lines are numbered from 2, as the cell shows them
GOOD = H1.format(name="mystencil") + stencil_1d("mystencil")
NO_LEFT = GOOD.replace("mystencil", "noleft").replace("if (i + j >= 0 && i + j < n)", "if (i + j < n)")  # line 7
NO_IF = GOOD.replace("mystencil", "noif").replace("    if (i >= n) return;\n", "")                     # write: line 7
TERMS = "    for (int j = 0; j <= 2 * R; j++)\n        acc += w[j] * tile[t + j];\n"


def tiled(name: str, load: str, terms: str = TERMS) -> str:
    """A tiled 1D kernel: load fills the dynamic shared tile (and defines t and i), terms add the weights."""
    return H1.format(name=name) + f"""\
__global__ void {name}(const float *in, float *out, const float *w, int n, int R) {{
    extern __shared__ float tile[];
{load}    if (i >= n) return;
    float acc = 0.0f;
{terms}    out[i] = acc;
}}
"""


# each thread loads the tile's slots t, t + B, ... (the halo included)
LOAD = """\
    int B = blockDim.x, t = threadIdx.x;
    int base = blockIdx.x * B;
    for (int s = t; s < B + 2 * R; s += B) {
        int p = base - R + s;
        tile[s] = p >= 0 && p < n ? in[p] : 0.0f;
    }
"""
# the tile written at line 8, read at line 14, no barrier between them
NO_SYNC = tiled("nosync", LOAD + "    int i = base + t;\n")
# the ghost cells at the array's edges are never written (they must be 0): read at line 12
HALO = tiled("halo", """\
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (i < n) tile[t + R] = in[i];
    if (t < R && i >= R) tile[t] = in[i - R];
    if (t >= blockDim.x - R && i + R < n) tile[t + 2 * R] = in[i + R];
    __syncthreads();
""")
# one term too many: the last thread reads one past the B + 2R floats, at line 15
PAST = tiled("past", LOAD + "    __syncthreads();\n    int i = base + t;\n",
             "    for (int j = 0; j <= 2 * R + 1; j++)\n        acc += (j <= 2 * R ? w[j] : 0.0f) * tile[t + j];\n")

CONV = H2.format(name="myconv") + stencil_2d("myconv")
NO_COL = CONV.replace("myconv", "nocol").replace("if (row >= height || col >= width) return;",
                                                 "if (row >= height) return;")    # the write: line 12


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def error_text(c: dict) -> str:
    return c["evalue"] + "\n" + "\n".join(c["traceback"])


def runner_error(c: dict, point: str, headline: str) -> str:
    """A KernelError of the CPU runner at point whose first finding is headline; all of it as text."""
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert c["evalue"].startswith(f"your kernel ") and f"failed on the CPU runner ({point}): {headline}" in c["evalue"], c
    return error_text(c)


def run_error(kc, name: str, headline: str) -> str:
    """name run at RUN's point: a KernelError of the CPU runner whose first finding is headline."""
    c, _, _ = cell(kc, RUN.format(name=name))
    return runner_error(c, "%stencil --size 1000 --radius 3", headline)


def test_correct_kernels_pass(kc):
    c, _, doc = compiled(kc, GOOD)
    assert c["status"] == "ok", c
    assert doc["check"]["passed"] is True and doc["quick_check"].startswith("%stencil --size 100003 --radius 5")
    c, _, doc = compiled(kc, CONV)
    assert c["status"] == "ok" and doc["check"]["passed"] is True, c
    c, _, doc = cell(kc, "%stencil --size 1000 --radius 3,17 --variant naive,mystencil --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert [(r["variant"], r["radius"]) for r in doc["runs"]] == [("naive", 3), ("mystencil", 3), ("naive", 17),
                                                                  ("mystencil", 17)]
    for r in doc["runs"]:
        assert r["backend"] == "cpu" and r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0, r
    jsonschema.validate(doc, load_schema("stencil"))     # a student's run is a run like ours
    mine = doc["runs"][1]
    assert mine["source"] == "student" and mine["impl"].startswith("your kernel mystencil on the CPU runner")
    assert mine["launch"]["grid"] == [4, 1, 1] and mine["launch"]["block"] == [256, 1, 1]
    assert mine["launch"]["smem_per_block"] == (256 + 2 * 3) * 4     # the tile with its halo, for extern __shared__
    # 2D: an awkward picture and a rectangular block; the grid by the rule
    c, _, doc = cell(kc, "%stencil --dim 2 --size 67x33 --filter gauss5,laplace8 --block 32x8 --variant myconv "
                         "--reps 1 --warmup 0")
    assert c["status"] == "ok", c
    for r in doc["runs"]:
        assert r["check"]["passed"] is True and r["launch"]["grid"] == [3, 5, 1] and r["source"] == "student", r


@pytest.mark.parametrize("variant", ["naive", "tiled"])
def test_as_kernel_cells_pass_as_they_are(kc, variant):
    c, _, doc = cell(kc, f"%stencil --show-source {variant} --as-kernel")
    assert c["status"] == "ok", c
    code = doc["kernel_cell"]
    assert code.startswith(f"%%kernel --for stencil --name my{variant}\n")
    c, _, kdoc = compiled(kc, code)
    assert c["status"] == "ok" and kdoc["check"]["passed"] is True, c
    # odd sizes, a radius beyond a small block's half (the halo takes more than one stride), two block sizes
    c, _, doc = cell(kc, f"%stencil --size 1001 --radius 1,100 --block 128,96 --variant my{variant} "
                         "--reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert len(doc["runs"]) == 4 and all(r["check"]["passed"] for r in doc["runs"]), doc["runs"]


def test_left_bound_missing_reads_before_the_start_of_in(kc):
    c, _, _ = compiled(kc, NO_LEFT)
    runner_error(c, "%stencil --size 100003 --radius 5",
                 "out-of-bounds access: thread 0 of block 0 read in[-5] at line 7, before the start of in "
                 "(100003 elements)")
    # compiled, so kept: it runs, and says the same at the run's size
    text = run_error(kc, "noleft",
                     "out-of-bounds access: thread 0 of block 0 read in[-3] at line 7, before the start of in "
                     "(1000 elements) (the thread was stopped there, as a GPU would fault)")
    assert "(3 in all)" in text      # threads 0, 1, 2 of block 0 reach before in[0]


def test_missing_if_writes_past_the_end_of_out(kc):
    compiled(kc, NO_IF)
    text = run_error(kc, "noif",
                     "out-of-bounds access: thread 232 of block 3 wrote out[1000] at line 7, past the end of "
                     "out (1000 elements)")
    assert "(24 in all)" in text     # threads 232..255 of the last block


def test_tiled_without_syncthreads_is_a_shared_race_naming_both_lines(kc):
    compiled(kc, NO_SYNC)
    text = run_error(kc, "nosync",
                     "data race on shared memory: thread 1 of block 0 wrote tile[1] at line 8 while thread 0 "
                     "of block 0 had read it at line 14, with no __syncthreads() between them: a barrier is "
                     "missing")
    # and the reads of slots not yet written, among the findings
    assert "what the CPU runner found" in text
    assert "uninitialised shared memory: thread 0 of block 0 read tile[1] at line 14 before any thread of the " \
           "block wrote it" in text


def test_halo_leaving_edge_slots_unwritten_reads_uninitialised_shared_memory(kc):
    compiled(kc, HALO)
    text = run_error(kc, "halo",
                     "uninitialised shared memory: thread 0 of block 0 read tile[0] at line 12 before any "
                     "thread of the block wrote it")
    # reads of the R slots left of in[0] (3 + 2 + 1 by threads 0, 1, 2) and right of in[999] (as many)
    assert "(12 in all)" in text


def test_tile_index_past_the_dynamic_shared_array(kc):
    compiled(kc, PAST)
    run_error(kc, "past",
              "out-of-bounds shared memory: thread 255 of block 0 read tile[262] at line 15, outside __shared__ "
              "tile[] (extern: 262 elements, the launch's dynamic shared memory, --smem)")
    # --smem sizes the dynamic shared memory: too small for the tile, the correct kernel's fill overruns it
    tiled = cell(kc, "%stencil --show-source tiled --as-kernel")[2]["kernel_cell"]
    assert compiled(kc, tiled)[0]["status"] == "ok"
    c, _, _ = cell(kc, RUN.format(name="mytiled") + " --smem 512")
    runner_error(c, "%stencil --size 1000 --radius 3",
                 "out-of-bounds shared memory: thread 0 of block 0 wrote tile[256] at line 13, outside "
                 "__shared__ tile[] (extern: 128 elements, the launch's dynamic shared memory, --smem)")      # its second slot (s = t + B): the first thread to overrun


def test_2d_without_the_column_bound_writes_into_the_next_row(kc):
    compiled(kc, NO_COL)
    c, _, _ = cell(kc, "%stencil --dim 2 --size 67x33 --filter gauss5 --variant nocol --reps 1 --warmup 0")
    text = runner_error(c, "%stencil --dim 2 --size 67x33 --filter gauss5",
                        "out-of-bounds access: thread (3,0) of block (4,2) wrote out[33][0] at line 12, past the "
                        "end of out (33×67)")
    # a thread past the last column writes the next row's first pixels, which their own threads write too
    # (blocks (4,0) and (0,0) may run in two of the runner's processes: which wrote first is the host's timing)
    assert any(f"two writers: {a} and {b} both wrote out[1][0] at line 12: each element has one thread; a thread "
               "past the last column writes into the next row" in text
               for a, b in [("thread (3,0) of block (4,0)", "thread (0,1) of block (0,0)"),
                            ("thread (0,1) of block (0,0)", "thread (3,0) of block (4,0)")]), text


def runs_seconds(c: dict) -> float:
    """The runs' part of a host-work refusal: 'N runs (--warmup + --reps) X s' (1 run)."""
    assert c["status"] == "error" and c["ename"] == "UsageError" and "of host work" in c["evalue"], c
    return host_work_runs_s(c["evalue"])


def test_host_work_is_the_runners(start_kernel):
    """A student's kernel is estimated at the runner's rate (every access checked), and as at most 3
    launches with no warm-up whatever --reps and --warmup say."""
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": "1e-6"})[1]
    c, _, _ = compiled(kc, GOOD.replace("--name mystencil", "--name mystencil --no-check"))
    assert c["status"] == "ok", c
    line = "%stencil --size 100000 --radius 8 --variant {v} --reps {reps} --warmup {warmup}"
    mine3 = runs_seconds(cell(kc, line.format(v="mystencil", reps=3, warmup=0))[0])
    assert runs_seconds(cell(kc, line.format(v="mystencil", reps=10, warmup=2))[0]) == pytest.approx(mine3, rel=0.05)
    assert runs_seconds(cell(kc, line.format(v="mystencil", reps=1, warmup=0))[0]) == pytest.approx(mine3 / 3, rel=0.05)
    ours3 = runs_seconds(cell(kc, line.format(v="naive", reps=3, warmup=0))[0])
    assert mine3 > 4 * ours3


def test_a_kernel_over_at_once_is_never_lost(kc):
    """A runner that says its last words and exits within one poll of the parent (a launch of 3 elements)
    is read to the end of its pipe: 30 such launches all run. Before, on a loaded machine (the grading of
    many notebooks at once), one in a few dozen was 'the CPU runner failed (exit status 0)': its start was
    lost; an idle machine rarely shows it, so this is a stress run, not a reproduction."""
    assert compiled(kc, GOOD)[0]["status"] == "ok"
    for _ in range(3):
        c, text, doc = cell(kc, "%stencil --size 3 --radius 1 --variant mystencil --reps 10 --warmup 0 --no-cpu-check")
        assert c["status"] == "ok" and all(r["check"]["passed"] for r in doc["runs"]), text
