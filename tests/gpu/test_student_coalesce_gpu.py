"""On a GPU: students' %coalesce copies run beside ours (stride, and row and col under --layout) on the
same input with the same timing and exact check, launched as ours (one thread per element of the
ceil(n/stride) x stride view); the lecture's strided copy made a %%kernel cell by --show-source stride
--as-kernel compiles and passes at every stride. The classic bugs are named: a missing bounds check
(writes past out: the guard), part of the input skipped (the first element never written), a wrong value
(the first wrong out[i]), a kernel that copies on its first launch only (the sentinel before every rep).
After each failure the next cell works."""
from __future__ import annotations

import student_session
from student_session import cell, failing, gpu_doc, kc  # noqa: F401  (gpu_doc, kc: fixtures)

COPY = """__global__ void mycopy(const float *in, float *out, unsigned long long n, unsigned long long stride) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
"""
# neighbours `stride` apart, as ours, written from scratch: thread t of the rows x stride view
STRIDED = """__global__ void mystrided(const float *in, float *out, unsigned long long n, unsigned long long stride) {
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long rows = (n + stride - 1) / stride;
    if (t >= rows * stride) return;
    unsigned long long i = (t % rows) * stride + t / rows;
    if (i < n) out[i] = in[i];
}
"""
# the quick check: %coalesce --size 100003 --stride 7, 391 blocks of 256 = 100096 threads
QUICK_N = 100003


def defined(kc, name: str, body: str, line: str = "") -> dict:
    text, doc = student_session.defined(kc, "coalesce", name, body, line)
    assert f"quick check (%coalesce --size {QUICK_N} --stride 7" in text
    return doc


def next_cell_works(kc):
    c, _, doc = cell(kc, "%coalesce --size 100003 --stride 1,32 --reps 1 --warmup 0")
    assert c["status"] == "ok" and all(r["check"]["passed"] for r in doc["runs"]), c


def test_copies_pass_beside_stride(kc):
    defined(kc, "mycopy", COPY)
    defined(kc, "mystrided", STRIDED)
    n = 1000003
    c, _, doc = cell(kc, f"%coalesce --size {n} --stride 1,32 --block 128,256 "
                         "--variant stride,mycopy,mystrided --reps 3 --warmup 1")
    assert c["status"] == "ok", c
    assert len(doc["runs"]) == 2 * 2 * 3
    assert doc["sweep"]["varying"] == ["stride", "block", "variant"]
    for r in doc["runs"]:
        assert r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0, r
        assert r["time_ms"]["median"] > 0 and r["gbs"] > 0 and r["backend"] == "cuda"
        s, b = r["stride"], r["block"]
        # launched as ours: one thread per element of the ceil(n/s) x s view
        assert r["launch"]["block"] == [b, 1, 1]
        assert r["launch"]["grid"][0] == -(-(-(-n // s) * s) // b), r
        if r["variant"] == "stride":
            assert "source" not in r and r["model"]["sectors_per_warp"] == (4 if s == 1 else 32)
        else:
            assert r["source"] == "student" and len(r["source_hash"]) == 64 and r["compile"]["arch"]
            assert r["resources"]["registers"] > 0 and r["check"]["never_written"] == 0
            assert r["model"]["sectors_per_warp"] is None and r["model"]["useful_bytes"] == 8 * n
            assert r["impl"].startswith(f"CUDA: your kernel {r['variant']}")


def test_copies_run_under_layout(kc):
    defined(kc, "mycopy", COPY)
    defined(kc, "mystrided", STRIDED)
    c, _, doc = cell(kc, "%coalesce --layout row,col --rows 1000 --cols 777 --variant row,col,mycopy,mystrided "
                         "--reps 2 --warmup 1")
    assert c["status"] == "ok", c
    ran = [(r["layout"], r["variant"], r["stride"]) for r in doc["runs"]]
    assert ran == [("row", "row", 1), ("row", "mycopy", 1), ("row", "mystrided", 1),
                   ("col", "col", 777), ("col", "mycopy", 777), ("col", "mystrided", 777)]
    assert all(r["check"]["passed"] for r in doc["runs"])


def test_as_kernel_cell_passes_at_every_stride(kc):
    c, _, _ = cell(kc, "%coalesce --show-source stride --as-kernel")
    assert c["status"] == "ok", c
    code = [p for p in c["payload"] if p.get("source") == "set_next_input"][0]["text"]
    c, text, doc = cell(kc, code)
    assert c["status"] == "ok" and doc["check"]["passed"] is True, (c, text)
    c, _, doc = cell(kc, "%coalesce --size 1000003 --stride 1,2,7,32,33 --variant stride,mystride --reps 2 "
                         "--warmup 1")
    assert c["status"] == "ok", c
    assert len(doc["runs"]) == 5 * 2 and all(r["check"]["passed"] for r in doc["runs"])


def test_missing_bounds_check_is_named(kc):
    # 100096 threads for 100003 elements: the last 93 store past the end of out
    body = COPY.replace("mycopy(", "nobounds(").replace("if (i < n) ", "")
    c, doc = failing(kc, "coalesce", "nobounds", body)      # the CPU runner's run names the write (bug parity)
    assert c["ename"] == "KernelError" and "out-of-bounds access" in c["evalue"], c
    c, doc = failing(kc, "coalesce", "nobounds", body, "--no-cpu-check")     # the GPU's own guard
    text = c["evalue"] + "\n".join(c["traceback"])
    assert "nobounds wrote outside out" in text or "illegal" in text.lower(), text
    if c["ename"] == "CheckError":
        assert "after its end" in text
    next_cell_works(kc)


def test_skipped_input_names_the_first_unwritten_element(kc):
    c, doc = failing(kc, "coalesce", "half", COPY.replace("mycopy(", "half(").replace("if (i < n)", "if (i < n / 2)"))
    assert c["ename"] == "CheckError", c
    assert f"out[{QUICK_N // 2}] was never written" in c["evalue"], c
    assert doc["check"]["passed"] is False
    c, _, doc = cell(kc, "%coalesce --size 1000 --stride 1,32 --variant stride,half --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    runs = {(r["variant"], r["stride"]): r["check"] for r in doc["runs"]}
    assert runs[("stride", 1)]["passed"] and runs[("stride", 32)]["passed"]
    assert runs[("half", 1)]["first_wrong"].startswith("out[500] was never written")
    assert runs[("half", 32)]["never_written"] == 500
    next_cell_works(kc)


def test_wrong_value_is_named(kc):
    c, doc = failing(kc, "coalesce", "wrong", COPY.replace("mycopy(", "wrong(")
                     .replace("out[i] = in[i];", "out[i] = i == 17 ? -in[i] : in[i];"))
    assert c["ename"] == "CheckError", c
    assert "out[17] = " in c["evalue"] and ", expected " in c["evalue"], c
    assert doc["check"]["wrong"]["count"] == 1 and doc["check"]["wrong"]["first"]["at"] == {"index": 17}
    assert doc["check"]["wrong"]["first"]["got"] == -doc["check"]["wrong"]["first"]["want"]
    next_cell_works(kc)


def test_a_kernel_that_copies_once_is_caught(kc):
    """The warm-up copies another input and out is NaN again before every timed rep: a kernel that
    does its work on its first launch only leaves the timed reps' out unwritten."""
    body = ("__device__ unsigned long long launches;\n" + COPY.replace("mycopy(", "once(")
            .replace("    if (i < n) out[i] = in[i];\n",
                     "    if (launches > 0) return;\n    if (i < n) out[i] = in[i];\n"
                     "    if (i == 0) atomicAdd(&launches, 1ull);\n"))
    c, _ = failing(kc, "coalesce", "once", body)
    assert c["ename"] == "CheckError" and "out[0] was never written" in c["evalue"], c
    next_cell_works(kc)


def test_blocks_are_whole_warps_in_one_dimension(kc):
    defined(kc, "mycopy", COPY)
    for block, words in (("32x4", "one-dimensional"), ("100", "multiple of the warp size")):
        c, _, _ = cell(kc, f"%coalesce --size 1000 --variant mycopy --block {block} --reps 1 --warmup 0")
        assert c["status"] == "error" and c["ename"] == "UsageError" and words in c["evalue"], c
    next_cell_works(kc)
