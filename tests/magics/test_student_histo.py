"""A student's kernel for %histo without a GPU (CPU backend, a Jupyter kernel session): %%kernel
--for histo compiles with NVRTC and reports, its quick check passing on the CPU runner; a wrong
signature names the expected one; the kernel runs beside ours on the CPU runner; the bins a student's
kernel cannot count are refused; `all` leaves student kernels out. tests/magics/test_cpu_runner_histo.py
explains the bugs; tests/gpu/test_student_histo_gpu.py runs them on a GPU. Skipped with the reason
where NVRTC is missing."""
from __future__ import annotations

import pytest

from conftest import execute
from kernels import count_letters

CPU = {"CUDALAB_BACKEND": "cpu"}
RESULT = "application/vnd.cudalab.result+json"

PRIVATISED = """%%kernel --for histo --name myhist
__global__ void myhist(const unsigned char *data, long long n, unsigned int *histo) {
    __shared__ unsigned int histo_s[7];
    for (int b = threadIdx.x; b < 7; b += blockDim.x) histo_s[b] = 0;
    __syncthreads();
""" + count_letters("histo_s") + """\
    __syncthreads();
    for (int b = threadIdx.x; b < 7; b += blockDim.x) atomicAdd(&histo[b], histo_s[b]);
}
"""


def result(msgs: list[dict]) -> dict | None:
    for m in reversed(msgs):
        if m["msg_type"] in ("execute_result", "display_data", "update_display_data") \
                and RESULT in m["content"].get("data", {}):
            return m["content"]["data"][RESULT]
    return None


def error(reply: dict) -> tuple[str, str]:
    c = reply["content"]
    return c.get("ename", ""), c.get("evalue", "")


@pytest.fixture
def session(start_kernel):
    """A CPU-backend session with myhist compiled (skip where NVRTC is missing)."""
    _, kc, *_ = start_kernel(env=CPU)
    reply, msgs = execute(kc, PRIVATISED)
    ename, evalue = error(reply)
    if reply["content"]["status"] != "ok" and "NVRTC" in evalue:
        pytest.skip(f"no NVRTC here: {evalue}")
    assert reply["content"]["status"] == "ok", (ename, evalue)
    return kc, result(msgs)


def test_kernel_for_histo_compiles_and_reports(session):
    kc, doc = session
    assert doc["magic"] == "kernel" and doc["for"] == "histo" and doc["name"] == "myhist"
    assert doc["source"] == "student" and len(doc["source_hash"]) == 64
    assert doc["resources"]["registers"] > 0
    assert doc["resources"]["static_smem"] == 7 * 4             # histo_s[7]
    assert doc["block"] == [256, 1, 1]                          # the contract's default
    assert doc["check"]["passed"] is True, doc["check"]           # the quick check, on the CPU runner
    reply, msgs = execute(kc, "%kernels")
    assert reply["content"]["status"] == "ok"
    assert {"name": "myhist", "for": "histo"}.items() <= result(msgs)["kernels"][0].items()


def test_signature_mismatch_names_the_expected_one(session):
    kc, _ = session
    reply, _ = execute(kc, "%%kernel --for histo --name bad\n"
                           "__global__ void bad(const unsigned char *data, int n, unsigned int *histo) {}\n")
    ename, evalue = error(reply)
    tb = "\n".join(reply["content"].get("traceback", []))
    assert ename == "CompileError", (ename, evalue)
    assert "const unsigned char *data, long long n, unsigned int *histo" in evalue + tb


def test_student_variant_runs_on_the_cpu_runner(session):
    kc, _ = session
    reply, msgs = execute(kc, "%histo --variant interleaved,myhist --size 1000 --reps 1", timeout=60)
    assert reply["content"]["status"] == "ok", error(reply)
    runs = {r["variant"]: r for r in result(msgs)["runs"]}
    mine = runs["myhist"]
    assert mine["source"] == "student" and mine["backend"] == "cpu"
    assert mine["check"]["passed"] is True and mine["bin_mode"] == "letters" and mine["nbins"] == 7
    assert mine["implementation"].startswith("your kernel myhist on the CPU runner")
    assert runs["interleaved"]["check"]["passed"] is True


@pytest.mark.parametrize("flags, needle", [
    ("--bins bytes", "not --bins bytes"),
    ("--bin-width 2", "not --bin-width 2"),
    ('--text "Hello" --bin-width 1', "not --bin-width 1"),
])
def test_bins_a_student_kernel_cannot_count(session, flags, needle):
    kc, _ = session
    reply, _ = execute(kc, f"%histo --variant myhist {flags}")
    ename, evalue = error(reply)
    assert ename == "UsageError" and needle in evalue and "letter bins" in evalue, (ename, evalue)


def test_all_leaves_student_kernels_out(session):
    kc, _ = session
    reply, msgs = execute(kc, "%histo --size 1000 --reps 1 --warmup 0")
    assert reply["content"]["status"] == "ok", error(reply)
    variants = [r["variant"] for r in result(msgs)["runs"]]
    assert "myhist" not in variants and "privatized" in variants


def test_student_block_dims_refused_with_built_ins(session):
    kc, _ = session
    reply, _ = execute(kc, "%histo --variant privatized,myhist --block 16x16 --size 1000")
    ename, evalue = error(reply)
    # myhist alone could take it (on a GPU); privatized cannot
    assert ename == "UsageError" and "--block 16x16x1" in evalue and "1D blocks" in evalue, (ename, evalue)
    # alone it runs (on the CPU runner), and a kernel that ignores threadIdx.y is caught there: every row
    # of the block zeroes the same bins
    reply, _ = execute(kc, "%histo --variant myhist --block 16x16 --size 1000", timeout=60)
    ename, evalue = error(reply)
    assert ename == "KernelError", (ename, evalue)
    assert "thread (0,1) of block 0 wrote histo_s[0] at line 4 while thread (0,0) of block 0 had written it at " \
           "line 4" in evalue


def test_another_familys_kernel_is_not_a_histo_variant(start_kernel):
    _, kc, *_ = start_kernel(env=CPU)
    reply, _ = execute(kc, "%%kernel --for matmul --name mm\n"
                           "__global__ void mm(const float *A, const float *B, float *C, int M, int N, int K) {}\n")
    if reply["content"]["status"] != "ok" and "NVRTC" in error(reply)[1]:
        pytest.skip(f"no NVRTC here: {error(reply)[1]}")
    reply, _ = execute(kc, "%histo --variant mm --size 100")
    ename, evalue = error(reply)
    assert ename == "UsageError" and "mm" in evalue, (ename, evalue)
