"""%reduce --second: a student's kernel reduces the partials of the first pass on the device (the
lecture's second pass), launched by the harness once, one block of its own threads, over the partials;
its result is the run's value and is checked as the total. On the CPU backend (the CPU runner), as
students without a GPU run it: one grid-stride kernel as both passes, a second kernel of its own with its
own block, and the second passes that must fail: one that reaches only the first 2B partials (the
lecture's one-segment tree), one that ignores its input, one that writes past its result, one that never
writes it, one that reads past the partials; and the refusals. tests/gpu/test_student_reduce_gpu.py runs student reductions on a GPU."""
from __future__ import annotations

import pytest

import jsonschema

from conftest import cell, compiled, load_schema, run_cell as run
from kernels import reduce_convergent, reduce_grid_stride as grid_stride

CPU = {"CUDALAB_BACKEND": "cpu"}


FIRST = "%%kernel --for reduce --name first --block 128\n" + reduce_convergent("first", 1024)
# 100003 elements in sections of 256: 391 partials, more than one block of 64 threads covers in its section
RUN = "%reduce --size 100003 --variant first --reps 1 --warmup 0"


@pytest.fixture
def kc(start_kernel):
    kc = start_kernel(env=CPU)[1]
    assert compiled(kc, FIRST)[0]["status"] == "ok"
    return kc


def only_run(doc: dict) -> dict:
    assert len(doc["runs"]) == 1, doc["runs"]
    return doc["runs"][0]


def test_one_grid_stride_kernel_does_both_passes(kc):
    c, _, _ = compiled(kc, "%%kernel --for reduce --name both\n" + grid_stride("both"))
    assert c["status"] == "ok", c
    c, text, doc = cell(kc, "%reduce --size 100003 --variant both --second both --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    jsonschema.validate(doc, load_schema("reduce"))
    r = only_run(doc)
    assert r["check"]["passed"] is True and r["second"] == "both", r
    assert r["launch_final"]["grid"] == [1, 1, 1] and r["launch_final"]["block"] == [256, 1, 1], r
    assert r["check"]["partials"] == 196 and "then both over its partials" in r["impl"], r
    # the device's float result, not the host's double sum of the partials: within the check's bound only
    assert abs(r["value"] - r["check"]["reference"]) <= r["check"]["tolerance"] * r["check"]["scale"]
    # and without --second the same kernel's partials are added on the host
    c, _, doc = cell(kc, "%reduce --size 100003 --variant both --reps 1 --warmup 0")
    assert c["status"] == "ok" and only_run(doc)["launch_final"] is None and only_run(doc)["second"] is None


def test_the_second_kernel_keeps_its_own_block(kc):
    assert compiled(kc, "%%kernel --for reduce --name final --block 64\n" + grid_stride("final"))[0]["status"] == "ok"
    c, _, doc = cell(kc, RUN + " --second final --block 128")
    assert c["status"] == "ok", c
    r = only_run(doc)
    assert r["check"]["passed"] is True and r["check"]["partials"] == 391, r
    assert r["launch"]["block"] == [128, 1, 1] and r["launch_final"]["block"] == [64, 1, 1], r


@pytest.mark.parametrize("second, why", [
    # the lecture's tree of one section: one block of 128 threads reaches the first 256 of 391 partials
    (reduce_convergent("final", 1024), "does one block of 128 threads reach every partial"),
    # ignores its input: the sum of nothing
    ("__global__ void final(const float *input, float *partial, int n) {\n"
     "    if (threadIdx.x == 0) partial[0] = 0.0f;\n}\n", "returned 0"),
    # never writes its result: the poison, NaN
    ("__global__ void final(const float *input, float *partial, int n) { }\n", "returned nan, expected"),
])
def test_a_wrong_second_pass_fails_the_check_naming_it(kc, second, why):
    assert compiled(kc, "%%kernel --for reduce --name final --block 128 --no-check\n" + second)[0]["status"] == "ok"
    c, text, doc = cell(kc, RUN + " --second final")
    assert c["status"] == "error", c
    jsonschema.validate(doc, load_schema("reduce"))
    r = only_run(doc)
    assert r["check"]["passed"] is False and r["check"]["wrong"]["count"] == 1, r
    # the first pass is right: the failure names the second
    assert "your second pass final over the 391 partials" in r["check"]["first_wrong"], r["check"]
    assert why in r["check"]["first_wrong"], r["check"]
    assert ("never written?" in r["check"]["first_wrong"]) == ("nan" in why), r["check"]


def assert_runner_names(kc, final: str, *words: str) -> None:
    """The second pass FINAL run after the first: the CPU runner's KernelError, its traceback naming
    --second and WORDS."""
    assert compiled(kc, "%%kernel --for reduce --name final --no-check\n" + final)[0]["status"] == "ok"
    c, text, _ = cell(kc, RUN + " --second final")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    tb = "\n".join(c["traceback"])
    assert "--second final" in tb and all(w in tb for w in words), tb


def test_a_second_pass_writing_past_its_result_is_named(kc):
    past = ("__global__ void final(const float *input, float *partial, int n) {\n"
            "    if (threadIdx.x < 2) partial[threadIdx.x] = 1.0f;\n}\n")
    assert_runner_names(kc, past, "partial", "line 3")


def test_a_second_pass_reading_past_the_partials_is_named(kc):
    """Reading beyond n (a fixed 1024 partials, not the 391 there are) would add what lies past them:
    the CPU runner names the read, with its line (on a GPU the sentinels past them make the sum NaN)."""
    over = ("__global__ void final(const float *input, float *partial, int n) {\n"
            "    float x = 0.0f;\n"
            "    if (threadIdx.x == 0) { for (int i = 0; i < 1024; i++) x += input[i]; partial[0] = x; }\n}\n")
    assert_runner_names(kc, over, "input", "line 4")


@pytest.mark.parametrize("line, needles", [
    ("%reduce --size 1000 --variant first --second nosuch", ["UsageError", "--second nosuch", "no %%kernel --for reduce"]),
    ("%reduce --size 1000 --variant convergent --second first", ["UsageError", "--second", "name one of them"]),
])
def test_refusals(kc, line, needles):
    c, _, _ = cell(kc, line)
    assert c["status"] == "error", c
    text = c["ename"] + ": " + c["evalue"]
    for n in needles:
        assert n in text, text


def test_a_kernel_of_another_family_is_refused(kc):
    vec = ("%%kernel --for vecadd --name myadd\n__global__ void myadd(const float *A, const float *B, float *C, "
           "int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) C[i] = A[i] + B[i];\n}\n")
    assert compiled(kc, vec)[0]["status"] == "ok"
    c, _, _ = cell(kc, "%reduce --size 1000 --variant first --second myadd")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "--second myadd" in c["evalue"], c


def test_help_documents_it():
    rc, _, out, err = run("%help reduce", json_mode=False)
    assert rc == 0, err
    assert "--second" in out and "one block of NAME2's threads" in out
