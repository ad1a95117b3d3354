"""Student kernels for %coalesce without a GPU (the CPU backend): %%kernel --for coalesce compiles a copy
kernel with NVRTC and reports it; a wrong signature names the expected one (n and stride are unsigned
long long); a kernel may not take a traversal's name; %help kernel and %help coalesce show the
signature, the launch and the quick check; --variant takes the kernel beside ours (stride, or row and
col under --layout), and the CPU backend runs it on the CPU runner (its findings:
tests/magics/test_cpu_runner_coalesce.py); --show-source stride --as-kernel makes the lecture's strided
copy a %%kernel cell in the student signature. NVRTC is part of the CUDA toolkit: without it the compile
tests are skipped, the parsing tests still run. tests/gpu/test_student_coalesce_gpu.py runs the kernels
on a GPU."""
from __future__ import annotations

import pytest

from conftest import cell, compiled

COPY = """%%kernel --for coalesce --name mycopy
__global__ void mycopy(const float *in, float *out, unsigned long long n, unsigned long long stride) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
"""
SIG = "const float *in, float *out, unsigned long long n, unsigned long long stride"
AS_KERNEL_SIG = ("const float *__restrict__ in, float *__restrict__ out, unsigned long long n, "
                 "unsigned long long s")


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def error_text(c: dict) -> str:
    return c["evalue"] + "\n" + "\n".join(c["traceback"])


def test_compiles_and_reports(kc):
    c, text, doc = compiled(kc, COPY)
    assert c["status"] == "ok", c
    assert doc["for"] == "coalesce" and doc["name"] == "mycopy" and doc["block"] == [256, 1, 1]
    assert doc["source"] == "student" and len(doc["source_hash"]) == 64 and doc["resources"]["registers"] > 0
    # no GPU: the quick check runs on the CPU runner
    assert doc["check"]["passed"] is True and doc["check"]["never_written"] == 0
    assert doc["quick_check"].startswith("%coalesce --size 100003 --stride 7") and "%coalesce --variant mycopy" in text
    c, text, doc = cell(kc, "%kernels")
    assert c["status"] == "ok" and [(k["name"], k["for"]) for k in doc["kernels"]] == [("mycopy", "coalesce")]


@pytest.mark.parametrize("code", [
    COPY.replace("unsigned long long n, unsigned long long stride", "int n, int stride"),
    COPY.replace("unsigned long long n, unsigned long long stride", "unsigned long long n"),
    COPY.replace("const float *in, float *out", "const float *in, double *out"),
])
def test_signature_mismatch_names_the_expected_one(kc, code):
    c, _, _ = compiled(kc, code)
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert f"%coalesce runs __global__ void mycopy({SIG})" in error_text(c), c


@pytest.mark.parametrize("name", ["stride", "row", "col", "all"])
def test_a_traversal_name_is_refused(kc, name):
    c, _, _ = cell(kc, COPY.replace("--name mycopy", f"--name {name}").replace("void mycopy(", f"void {name}("))
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert f"--name {name}: %coalesce has a variant of that name already" in c["evalue"], c


def test_help_shows_the_signature_and_launch(kc):
    c, text, _ = cell(kc, "%help kernel")
    assert c["status"] == "ok", c
    assert "%%kernel --for coalesce --name NAME" in text and f"__global__ void NAME({SIG})" in text
    assert "quick check: %coalesce --size 100003 --stride 7" in text
    c, text, _ = cell(kc, "%help coalesce")
    assert c["status"] == "ok", c
    assert f"__global__ void NAME({SIG})" in text and "ceil(n/stride)*stride threads" in text
    assert "--variant" in text and "Variants (--variant" in text
    for variant in ("stride", "row", "col"):
        assert f"\n  {variant} " in text, variant
    # an unknown family's error lists coalesce among those that take kernels
    c, _, _ = cell(kc, "%%kernel --for nope --name k\n__global__ void k() {}\n")
    assert c["status"] == "error" and "kernels can be written for coalesce, " in c["evalue"], c


def test_variant_lists_the_kernel_and_suggests(kc):
    assert compiled(kc, COPY)[0]["status"] == "ok"
    c, _, _ = cell(kc, "%coalesce --variant mycopi")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert "did you mean 'mycopy'" in c["evalue"] and "stride, row, col, mycopy, all" in c["evalue"], c
    c, text, _ = cell(kc, "%help coalesce")
    assert "mycopy" in text and "[yours]" in text


def test_default_runs_ours_unchanged(kc):
    """A kernel defined changes nothing for a command that does not name it."""
    assert compiled(kc, COPY)[0]["status"] == "ok"
    c, _, doc = cell(kc, "%coalesce --size 1000 --stride 1,3 --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert [(r["variant"], r["stride"]) for r in doc["runs"]] == [("stride", 1), ("stride", 3)]
    assert doc["params"]["variant"] == "stride" and doc["sweep"]["varying"] == ["stride"]
    c, _, doc = cell(kc, "%coalesce --layout row,col --rows 20 --cols 9 --reps 1 --warmup 0")
    assert c["status"] == "ok" and [r["variant"] for r in doc["runs"]] == ["row", "col"], c


@pytest.mark.parametrize("line, runs", [
    ("%coalesce --size 1000 --stride 1,32 --variant stride,mycopy --reps 1 --warmup 0",
     [("stride", 1), ("mycopy", 1), ("stride", 32), ("mycopy", 32)]),
    ("%coalesce --size 1000 --variant mycopy --reps 1 --warmup 0",
     [("mycopy", s) for s in (1, 2, 4, 8, 16, 32)]),
    ("%coalesce --layout row,col --rows 20 --cols 9 --variant row,col,mycopy --reps 1 --warmup 0",
     [("row", 1), ("mycopy", 1), ("col", 9), ("mycopy", 9)]),
])
def test_cpu_backend_runs_a_student_kernel(kc, line, runs):
    assert compiled(kc, COPY)[0]["status"] == "ok"
    c, _, doc = cell(kc, line)
    assert c["status"] == "ok", c
    assert [(r["variant"], r["stride"]) for r in doc["runs"]] == runs
    for r in doc["runs"]:
        assert r["backend"] == "cpu" and r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0, r
        if r["variant"] == "mycopy":
            assert r["source"] == "student" and r["impl"].startswith("your kernel mycopy on the CPU runner")
            assert r["check"]["never_written"] == 0 and r["block"] == 256
            # launched as ours: ceil(n/stride)*stride threads in blocks of 256
            n, stride = r["size"], r["stride"]
            assert r["launch"]["grid"] == [-(-(-(-n // stride) * stride) // 256), 1, 1], r
    # `all` never includes a student's kernel, and ours still run
    all_line = line.replace("stride,mycopy", "all").replace("row,col,mycopy", "all").replace("mycopy", "all")
    c, _, doc = cell(kc, all_line)
    assert c["status"] == "ok", c
    assert "mycopy" not in {r["variant"] for r in doc["runs"]}
    assert all(r["check"]["passed"] for r in doc["runs"])


def test_sanitize_needs_a_kernel(kc):
    c, _, _ = cell(kc, "%coalesce --variant stride --sanitize")
    assert c["status"] == "error" and "--sanitize runs your own kernels" in c["evalue"], c


def test_as_kernel_is_the_strided_copy_in_the_student_signature(kc):
    c, _, doc = cell(kc, "%coalesce --show-source stride --as-kernel")
    assert c["status"] == "ok", c
    payloads = [p for p in c["payload"] if p.get("source") == "set_next_input"]
    assert len(payloads) == 1, c["payload"]
    code = payloads[0]["text"]
    assert code == doc["kernel_cell"]
    assert code.startswith("%%kernel --for coalesce --name mystride\n")
    assert f"__global__ void mystride({AS_KERNEL_SIG})\n{{\n" in code
    # the template's index type and the row count ours is passed, bound before the kernel
    assert "typedef unsigned long long I;\n" in code and "#define m ((n + s - 1) / s)\n" in code
    assert "template <typename I>" not in code and "coalesce_copy_strided" not in code
    # the contiguous copy is shown beside it, but is no part of the cell
    assert "coalesce_copy_contiguous" in doc["source"] and "coalesce_copy_contiguous" not in code
    # the taught body, unchanged
    body = code[code.index(AS_KERNEL_SIG) + len(AS_KERNEL_SIG) + 1:]
    assert "I i = (t % m) * s + t / m;" in body and body in doc["source"]
    # and it compiles in the family's signature
    c, text, kdoc = compiled(kc, code)
    assert c["status"] == "ok", c
    assert kdoc["name"] == "mystride" and kdoc["for"] == "coalesce" and kdoc["warnings"] == [], kdoc
    c, _, _ = cell(kc, "%coalesce --show-source row --as-kernel")
    assert c["status"] == "error" and "row has no student-signature form" in c["evalue"], c
    assert "coalesce stride" in c["evalue"]
