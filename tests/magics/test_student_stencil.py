"""Student kernels for %stencil without a GPU (the CPU backend): %%kernel --for stencil compiles a 1D
kernel, and %%kernel --for stencil --dim 2 a 2D one, each checked against its own signature and
quick-checked on the CPU runner; --dim 2 is refused for a family with no 2D shape; the CPU backend runs
them beside ours (the runner's findings: tests/magics/test_cpu_runner_stencil.py; on a GPU:
tests/gpu/test_student_stencil_gpu.py); %help shows both signatures. NVRTC is part of the CUDA toolkit:
without it the compile tests are skipped, the parsing tests still run."""
from __future__ import annotations

import pytest

from conftest import cell, compiled
from kernels import stencil_1d, stencil_2d

STENCIL_1D = "%%kernel --for stencil --name mystencil\n" + stencil_1d("mystencil")
CONV_2D = "%%kernel --for stencil --dim 2 --name myconv\n" + stencil_2d("myconv")
SIG_1D = "const float *in, float *out, const float *w, int n, int R"
SIG_2D = "const float *in, float *out, const float *w, int width, int height, int r"


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def error_text(c: dict) -> str:
    return c["evalue"] + "\n" + "\n".join(c["traceback"])


@pytest.mark.parametrize("code, name, dim, block", [(STENCIL_1D, "mystencil", 1, [256, 1, 1]),
                                                   (CONV_2D, "myconv", 2, [16, 16, 1])])
def test_compiles_and_reports(kc, code, name, dim, block):
    c, text, doc = compiled(kc, code)
    assert c["status"] == "ok", c
    assert doc["for"] == "stencil" and doc["name"] == name and doc["dim"] == dim and doc["block"] == block
    assert doc["resources"]["registers"] > 0 and f"%stencil --variant {name}" in text
    # no GPU: the quick check runs on the CPU runner
    assert doc["check"]["passed"] is True and doc["quick_check"].startswith(f"%stencil {'--dim 2 ' * (dim == 2)}")


@pytest.mark.parametrize("code, expected, unexpected", [
    (STENCIL_1D.replace("int n, int R", "long n, int R"), SIG_1D, SIG_2D),
    # a 2D kernel without --dim 2 is checked against the 1D signature, and names it
    (CONV_2D.replace(" --dim 2", ""), SIG_1D, SIG_2D),
    # and a 1D kernel with --dim 2 against the 2D one
    (STENCIL_1D.replace("--for stencil", "--for stencil --dim 2"), SIG_2D, SIG_1D),
])
def test_signature_mismatch_names_the_expected_one(kc, code, expected, unexpected):
    c, _, _ = compiled(kc, code)
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert expected in error_text(c) and unexpected not in error_text(c), c


def test_dim_2_only_where_a_family_has_a_2d_shape(kc):
    c, _, _ = cell(kc, "%%kernel --for vecadd --dim 2 --name twod\n"
                       "__global__ void twod(const float *A, const float *B, float *C, int n) {}\n")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert "kernels for %vecadd are one-dimensional" in c["evalue"] and "%stencil" in c["evalue"]
    c, _, _ = cell(kc, "%%kernel --for stencil --dim 3 --name k\n__global__ void k() {}\n")
    assert c["status"] == "error" and "--dim" in error_text(c), c


@pytest.mark.parametrize("line, variants", [
    ("%stencil --size 1000 --variant naive,mystencil --reps 1 --warmup 0", ["naive", "mystencil"]),
    ("%stencil --dim 2 --size 50x40 --variant myconv --reps 1 --warmup 0", ["myconv"]),
])
def test_cpu_backend_runs_a_student_kernel(kc, line, variants):
    assert compiled(kc, STENCIL_1D)[0]["status"] == "ok"
    assert compiled(kc, CONV_2D)[0]["status"] == "ok"
    c, _, doc = cell(kc, line)
    assert c["status"] == "ok", c
    assert [r["variant"] for r in doc["runs"]] == variants
    for r in doc["runs"]:
        assert r["backend"] == "cpu" and r["check"]["passed"] is True, r
    mine = doc["runs"][-1]
    assert mine["source"] == "student" and mine["impl"].startswith(f"your kernel {variants[-1]} on the CPU runner")
    assert mine["time_ms"]["reps"] == 1


def test_help_shows_both_shapes(kc):
    c, text, _ = cell(kc, "%help stencil")
    assert c["status"] == "ok", c
    assert f"__global__ void NAME({SIG_1D})" in text and f"__global__ void NAME({SIG_2D})" in text
    assert "%%kernel --for stencil --dim 2" in text and "quick check: %stencil --dim 2 --size 67x33" in text
    c, text, _ = cell(kc, "%help kernel")
    assert f"__global__ void NAME({SIG_2D})" in text


def test_block_flag_takes_dimensions(kc):
    """--block is dimensions: a list of them sweeps, 2D T means TxT, and our variants' rules name the shape."""
    c, _, doc = cell(kc, "%stencil --dim 2 --size 40x30 --block 8,16x4 --variant tiled --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert [r["block"] for r in doc["runs"]] == [[8, 8, 1], [16, 4, 1]]
    assert doc["params"]["block"] == [[8, 8], [16, 4]]          # T is TxT, for your kernels too
    c, _, _ = cell(kc, "%stencil --size 1000 --block 32x4 --reps 1 --warmup 0")
    assert c["status"] == "error" and "our 1D variants take a 1D --block B" in c["evalue"], c


def test_kernels_lists_the_shape(kc):
    assert compiled(kc, STENCIL_1D)[0]["status"] == "ok"
    assert compiled(kc, CONV_2D)[0]["status"] == "ok"
    c, text, doc = cell(kc, "%kernels")
    assert c["status"] == "ok", c
    assert {(k["name"], k["for"], k["dim"]) for k in doc["kernels"]} == {("mystencil", "stencil", 1),
                                                                         ("myconv", "stencil", 2)}
    assert "stencil (2D)" in text
