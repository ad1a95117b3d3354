"""Student kernels for %vecadd and %reduce without a GPU (the CPU backend): %%kernel --for vecadd /
--for reduce compiles with NVRTC and reports, and its quick check runs on the CPU runner; a wrong
signature names the expected one; the kernel runs on the CPU backend beside ours (the CPU runner); --block
is dimensions in both magics, 1D for the built-in variants; a student kernel is refused where it cannot
run (--op daxpy, --op max, --dtype int). NVRTC is part of the CUDA toolkit: without it the compile tests
are skipped, the parsing and refusal tests still run. tests/magics/test_cpu_runner_{vecadd,reduce}.py
explain the bugs; tests/gpu/test_student_{vecadd,reduce}_gpu.py run the kernels on a GPU."""
from __future__ import annotations

import pytest

from conftest import cell, compiled, load_schema, magic_doc, run_cell as run
from kernels import reduce_convergent, vecadd

VECADD = "%%kernel --for vecadd --name myadd\n" + vecadd("myadd")
# an unused dynamic shared array beside the static one
REDUCE = "%%kernel --for reduce --name mysum --block 128\n" + reduce_convergent(
    "mysum", 1024, s="sh", head="    extern __shared__ float s[];\n")


CPU = {"CUDALAB_BACKEND": "cpu"}


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


@pytest.mark.parametrize("code, family, name, block", [(VECADD, "vecadd", "myadd", [256, 1, 1]),
                                                      (REDUCE, "reduce", "mysum", [128, 1, 1])])
def test_compiles_and_reports(kc, code, family, name, block):
    c, text, doc = compiled(kc, code)
    assert c["status"] == "ok", c
    assert doc["for"] == family and doc["name"] == name and doc["block"][0] == block[0]
    assert doc["source"] == "student" and doc["resources"]["registers"] > 0
    # no GPU: the quick check runs on the CPU runner, and says how to run the kernel
    assert doc["check"]["passed"] is True, doc["check"]
    assert f"%{family} --variant {name}" in text


@pytest.mark.parametrize("code, expected", [
    (VECADD.replace("float *C, int n", "float *C, long n"), "const float *A, const float *B, float *C, int n"),
    (REDUCE.replace("float *partial, int n", "double *partial, int n"), "const float *input, float *partial, int n"),
])
def test_signature_mismatch_names_the_expected_one(kc, code, expected):
    c, _, _ = compiled(kc, code)
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert expected in c["evalue"] + "\n".join(c["traceback"]), c


@pytest.mark.parametrize("code, run_line, name", [
    (VECADD, "%vecadd --size 1000 --variant builtin,myadd --reps 1 --warmup 0", "myadd"),
    (REDUCE, "%reduce --size 1000 --variant mysum --reps 1 --warmup 0", "mysum"),
])
def test_cpu_backend_runs_a_student_kernel_on_the_cpu_runner(kc, code, run_line, name):
    assert compiled(kc, code)[0]["status"] == "ok"
    c, text, doc = cell(kc, run_line)
    assert c["status"] == "ok", c
    mine = [r for r in doc["runs"] if r["variant"] == name]
    assert len(mine) == 1 and mine[0]["source"] == "student" and mine[0]["backend"] == "cpu", mine
    assert mine[0]["check"]["passed"] is True and "on the CPU runner" in mine[0]["impl"], mine[0]
    # `all` never includes a student's kernel, and the built-ins still run
    c, _, doc = cell(kc, run_line.replace(f"--variant builtin,{name}", "--variant all")
                              .replace(f"--variant {name}", "--variant all"))
    assert c["status"] == "ok", c
    assert name not in {r["variant"] for r in doc["runs"]}


@pytest.mark.parametrize("cell, needles", [
    ("%vecadd --size 1000 --block 16x16", ["UsageError", "one-dimensional"]),
    ("%vecadd --size 1000 --block 64,48", ["UsageError", "--block 48", "multiple of the warp size"]),
    ("%reduce --size 1000 --block 32x32", ["UsageError", "one-dimensional"]),
    ("%reduce --size 1000 --block 128,96", ["UsageError", "--block 96", "power of two"]),
])
def test_block_refusals_for_builtins(cell, needles):
    rc, _, _, err = run(cell)
    assert rc == 1, err
    for n in needles:
        assert n in err, err


def test_block_dims_parse_and_the_run_keeps_an_integer():
    v = magic_doc("vecadd", "%vecadd --size 1000 --block 64,128 --reps 1 --warmup 0", load_schema("vecadd"))
    assert v["params"]["block"] == [[64], [128]] and [r["block"] for r in v["runs"]] == [64, 128]
    assert v["sweep"]["varying"] == ["block"]
    one = magic_doc("vecadd", "%vecadd --size 1000 --block 128 --reps 1 --warmup 0", load_schema("vecadd"))
    assert one["params"]["block"] == [[128]] and one["runs"][0]["block"] == 128
    r = magic_doc("reduce", "%reduce --size 1000 --variant convergent,cub --block 64,128 --reps 1 --warmup 0",
                  load_schema("reduce"))
    assert r["params"]["block"] == [[64], [128]]
    assert sorted((x["variant"], x["block"]) for x in r["runs"]) == [("convergent", 64), ("convergent", 128),
                                                                      ("cub", None)]
    d = magic_doc("reduce", "%reduce --size 1000 --variant convergent --reps 1 --warmup 0", load_schema("reduce"))
    assert d["params"]["block"] is None and d["runs"][0]["block"] == 256


def test_help_shows_variant_and_student_flags():
    for magic, needles in (("vecadd", ["builtin", "--variant", "int n", "--op add only"]),
                           ("reduce", ["float *partial", "ceil(n/(2B))", "--define"])):
        rc, _, out, err = run(f"%help {magic}", json_mode=False)
        assert rc == 0, err
        for n in needles:
            assert n in out, (magic, n)
