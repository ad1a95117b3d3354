"""Students' %coalesce copies on the CPU runner (the CPU backend, no GPU), through a real kernel and
jupyter_client: the plain copy and the strided copy pass (their %%kernel quick checks too) at several
strides, under --layout, and so does the cell `%coalesce --show-source stride --as-kernel` makes; the
classic bugs are named exactly, a KernelError naming the kind, the element, the thread and block and the
cell line: no bounds check (the thread stopped reading in[n], past the end of in), a kernel that writes
out[i] from two threads (two writers), and the strided copy without its guard on the view's threads
(the threads of the last block past ceil(n/s)*s wrap onto elements others copy: a GPU's output would be
right, the runner names the second writer); the host-work estimate is the runner's. Sizes are small
and awkward, one rep. NVRTC and g++ are needed (the tests are skipped without NVRTC)."""
from __future__ import annotations

import re

import jsonschema
import pytest

from conftest import cell, compiled, host_work_runs_s, load_schema

H = "%%kernel --for coalesce --name {name}\n"
SIG = "(const float *in, float *out, unsigned long long n, unsigned long long stride)"
# line 1 is the %%kernel line: the kernel's lines are numbered from 2, as the cell shows them
COPY = H.format(name="mycopy") + f"""\
__global__ void mycopy{SIG} {{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}}
"""
STRIDED = H.format(name="mystrided") + f"""\
__global__ void mystrided{SIG} {{
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long rows = (n + stride - 1) / stride;
    if (t >= rows * stride) return;
    unsigned long long i = (t % rows) * stride + t / rows;
    if (i < n) out[i] = in[i];
}}
"""
NO_GUARD = STRIDED.replace("mystrided", "noguard").replace("    if (t >= rows * stride) return;\n", "")  # write: line 6
NO_BOUND = H.format(name="nobound") + f"""\
__global__ void nobound{SIG} {{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    out[i] = in[i];
}}
"""   # line 4: in[i] is read first, so the thread past n stops there
TWO = H.format(name="two") + f"""\
__global__ void two{SIG} {{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
    if (i + 1 < n) out[i + 1] = in[i + 1];
}}
"""   # out[i + 1] at line 5 is thread i + 1's out[i] at line 4


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def runner_error(c: dict, point: str, headline: str) -> None:
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert f"failed on the CPU runner ({point}): {headline}" in c["evalue"], c


def test_plain_and_strided_copies_pass(kc):
    for code in (COPY, STRIDED):
        c, _, doc = compiled(kc, code)
        assert c["status"] == "ok", c
        assert doc["check"]["passed"] is True and doc["quick_check"].startswith("%coalesce --size 100003 --stride 7")
    c, _, doc = cell(kc, "%coalesce --size 1001 --stride 1,7,32 --variant stride,mycopy,mystrided --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    jsonschema.validate(doc, load_schema("coalesce"))     # a student's run is a run like ours
    assert len(doc["runs"]) == 9
    for r in doc["runs"]:
        assert r["backend"] == "cpu" and r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0, r
        if r["variant"] != "stride":
            assert r["source"] == "student" and r["impl"].startswith(f"your kernel {r['variant']} on the CPU runner")
            assert r["check"]["never_written"] == 0 and r["time_ms"]["reps"] == 1
    c, _, doc = cell(kc, "%coalesce --layout row,col --rows 21 --cols 13 --variant row,col,mystrided --block 64 "
                         "--reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert [(r["variant"], r["stride"]) for r in doc["runs"]] == [("row", 1), ("mystrided", 1), ("col", 13),
                                                                  ("mystrided", 13)]
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert doc["runs"][3]["launch"]["block"] == [64, 1, 1] and doc["runs"][3]["launch"]["grid"] == [5, 1, 1]


def test_as_kernel_cell_passes_as_it_is(kc):
    code = cell(kc, "%coalesce --show-source stride --as-kernel")[2]["kernel_cell"]
    c, _, doc = compiled(kc, code)
    assert c["status"] == "ok" and doc["check"]["passed"] is True, c
    c, _, doc = cell(kc, "%coalesce --size 1001 --stride 1,7,32,1001 --variant mystride --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert [r["stride"] for r in doc["runs"]] == [1, 7, 32, 1001] and all(r["check"]["passed"] for r in doc["runs"])


def test_no_bounds_check_reads_past_the_end_of_in(kc):
    c, _, _ = compiled(kc, NO_BOUND)
    runner_error(c, "%coalesce --size 100003 --stride 7",
                 "out-of-bounds access: thread 163 of block 390 read in[100003] at line 4, past the end of in "
                 "(100003 elements)")
    c, _, _ = cell(kc, "%coalesce --size 1000 --stride 7 --variant nobound --reps 1 --warmup 0")
    runner_error(c, "%coalesce --size 1000 --stride 7",
                 "out-of-bounds access: thread 232 of block 3 read in[1000] at line 4, past the end of in (1000 "
                 "elements) (the thread was stopped there, as a GPU would fault): compare every index with its "
                 "bound before using it (24 in all)")


def test_two_threads_writing_one_element(kc):
    compiled(kc, TWO)
    c, _, _ = cell(kc, "%coalesce --size 1000 --stride 1 --variant two --reps 1 --warmup 0")
    runner_error(c, "%coalesce --size 1000 --stride 1",
                 "two writers: thread 0 of block 0 and thread 1 of block 0 both wrote out[1] at line 4")
    assert "(999 in all)" in c["evalue"], c


def test_strided_copy_without_its_guard_has_two_writers(kc):
    compiled(kc, NO_GUARD)
    # 1000 elements at stride 8: 125 rows x 8 = 1000 threads of the view, 1024 launched; thread 1000 wraps
    # onto (1000 % 125) * 8 + 1000 / 125 = element 8, which thread 1 copies
    c, _, _ = cell(kc, "%coalesce --size 1000 --stride 8 --variant noguard --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    # blocks 0 and 3 may run in two of the runner's processes: which wrote first is the host's timing
    assert re.search(r"failed on the CPU runner \(%coalesce --size 1000 --stride 8\): two writers: "
                     r"(thread 232 of block 3 and thread 1 of block 0|thread 1 of block 0 and thread 232 of block 3) "
                     r"both wrote out\[8\] at line 6", c["evalue"]), c
    assert "(24 in all)" in c["evalue"], c


def test_host_work_is_the_runners(start_kernel):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": "1e-6"})[1]
    assert compiled(kc, COPY.replace("--name mycopy", "--name mycopy --no-check"))[0]["status"] == "ok"
    line = "%coalesce --size 100000 --stride 1 --variant {v} --reps {reps} --warmup 0"
    mine = [cell(kc, line.format(v="mycopy", reps=r))[0] for r in (3, 10)]
    ours = cell(kc, line.format(v="stride", reps=3))[0]
    for c in mine + [ours]:
        assert c["status"] == "error" and c["ename"] == "UsageError" and "of host work" in c["evalue"], c
    # at most 3 launches whatever --reps says: the same estimate at 3 and 10; the runner's, far above ours
    assert runs_seconds(mine[0]) == pytest.approx(runs_seconds(mine[1]), rel=0.05)
    assert runs_seconds(mine[0]) > 20 * runs_seconds(ours)


def runs_seconds(c: dict) -> float:
    """The runs' part of a host-work refusal: 'N runs (--warmup + --reps) X s' (1 run)."""
    return host_work_runs_s(c["evalue"])
