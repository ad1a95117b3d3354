"""On a GPU: students' %stencil kernels, 1D and 2D (%%kernel --dim 2), run beside ours on the same input
with the same check: a direct kernel and a tiled one with its halo in dynamic shared memory (sized by
the family unless --smem) pass at awkward sizes, radii, filters and block shapes; the classic bugs are
named: a missing bounds check (writes past the output: the CPU runner's run, and the guard without it),
row and column swapped (the first wrong out[row][col]), half the output never written, a sum accumulated
in half precision, a missing __syncthreads() in the tiled kernel (the CPU runner's run; racecheck, or the
check, without it); a 2D kernel run in 1D is refused. After
each failure the next cell works."""
from __future__ import annotations

from kernels import stencil_1d, stencil_1d_tiled, stencil_2d, stencil_2d_tiled
from student_session import cell, defined, failing, gpu_doc, kc, kernel_cell  # noqa: F401  (gpu_doc, kc: fixtures)

DIRECT_1D = stencil_1d("direct")
TILED_1D = stencil_1d_tiled("halo")
DIRECT_2D = stencil_2d("conv")
TILED_2D = stencil_2d_tiled("tconv")


def next_cell_works(kc):
    c, _, doc = cell(kc, "%stencil --size 10007 --radius 3 --variant tiled --reps 1 --warmup 0")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, c


def test_1d_kernels_pass_beside_ours(kc):
    defined(kc, "stencil", "direct", DIRECT_1D)
    _, doc = defined(kc, "stencil", "halo", TILED_1D)
    assert doc["resources"]["static_smem"] == 0
    # racecheck ran on the kernel with shared memory
    assert doc["check"]["tools"]["racecheck"]["status"] in ("passed", "unavailable"), doc["check"]
    c, _, doc = cell(kc, "%stencil --size 100003 --radius 1,7,64 --block 128,256 "
                         "--variant naive,tiled,direct,halo --reps 2 --warmup 1")
    assert c["status"] == "ok", c
    assert len(doc["runs"]) == 3 * 2 * 4
    for r in doc["runs"]:
        assert r["check"]["passed"] is True, r
        assert r["time_ms"]["median"] > 0 and r["gbs"] > 0
        assert r["launch"]["block"] == [r["block"], 1, 1]
        assert r["launch"]["grid"][0] == -(-100003 // r["block"])
        if r["variant"] in ("direct", "halo"):
            assert r["source"] == "student" and len(r["source_hash"]) == 64
            assert r["model"]["global_reads_per_output"] is None
            # the family sized the dynamic shared memory (without --smem): the block plus two halos
            assert r["launch"]["smem_per_block"] == (r["block"] + 2 * r["radius"]) * 4
        else:
            assert "source" not in r and r["check"]["bit_exact"] == 100003


def test_2d_kernels_pass_at_every_block_shape(kc):
    defined(kc, "stencil", "conv", DIRECT_2D, "--dim 2")
    defined(kc, "stencil", "tconv", TILED_2D, "--dim 2")
    c, _, doc = cell(kc, "%stencil --dim 2 --size 67x45,1000x3 --filter gauss3,gauss5 --block 16,32x8,8x32 "
                         "--variant tiled,conv,tconv --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert len(doc["runs"]) == 2 * 2 * 3 * 3
    for r in doc["runs"]:
        assert r["check"]["passed"] is True, r
        bx, by, _ = r["block"]
        assert r["launch"]["grid"] == [-(-r["width"] // bx), -(-r["height"] // by), 1]
        if r["variant"] == "tconv":
            assert r["launch"]["smem_per_block"] == (bx + r["k"] - 1) * (by + r["k"] - 1) * 4


def test_2d_kernel_in_1d_is_refused(kc):
    defined(kc, "stencil", "conv", DIRECT_2D, "--dim 2")
    c, _, _ = cell(kc, "%stencil --size 1000 --variant naive,conv --reps 1 --warmup 0")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert "conv is a 2D kernel" in c["evalue"] and "--dim 2" in c["evalue"]
    next_cell_works(kc)


def test_missing_bounds_check_is_named(kc):
    """By the CPU runner's run of the kernel (bug parity: the element, thread and line), and by the GPU's
    own guard where that run is off (--no-cpu-check)."""
    body = DIRECT_1D.replace("    if (i >= n) return;\n", "").replace("direct(", "nobounds(")
    c, _ = failing(kc, "stencil", "nobounds", body)
    assert c["ename"] == "KernelError" and "out[100003]" in c["evalue"] and "past the end of out" in c["evalue"], c
    c, _ = failing(kc, "stencil", "nobounds", body, "--no-cpu-check")
    text = c["evalue"] + "\n".join(c["traceback"])
    assert "wrote outside out" in text or "illegal" in text.lower(), text
    next_cell_works(kc)


def test_swapped_row_and_col_names_the_first_wrong_pixel(kc):
    body = DIRECT_2D.replace("conv(", "swapped(").replace("out[row * width + col]", "out[col * height + row]")
    c, doc = failing(kc, "stencil", "swapped", body, "--dim 2")
    assert c["ename"] == "CheckError" and "out[" in c["evalue"] and "expected" in c["evalue"], c
    next_cell_works(kc)


def test_half_the_output_never_written(kc):
    body = DIRECT_2D.replace("conv(", "half(").replace("if (row >= height", "if (row >= height / 2")
    c, _ = failing(kc, "stencil", "half", body, "--dim 2")
    assert c["ename"] == "CheckError" and "was never written" in c["evalue"], c
    assert "out[16][0]" in c["evalue"], c       # 67x33: rows 0..15 written, 16 is the first missing
    next_cell_works(kc)


def test_half_precision_accumulation_is_rejected(kc):
    body = ("#include <cuda_fp16.h>\n" + DIRECT_1D.replace("direct(", "fp16(")
            .replace("float acc = 0.0f;", "__half acc = __float2half(0.0f);")
            .replace("acc += w[j + R] * in[i + j];", "acc = __hadd(acc, __float2half(w[j + R] * in[i + j]));")
            .replace("out[i] = acc;", "out[i] = __half2float(acc);"))
    c, _ = failing(kc, "stencil", "fp16", body)
    assert c["ename"] == "CheckError" and "expected" in c["evalue"], c
    next_cell_works(kc)


def test_missing_syncthreads_in_the_tiled_kernel(kc):
    """The CPU runner's run finds the race every time (bug parity); the GPU alone (--no-cpu-check) may pass
    it by luck, where racecheck is the only witness."""
    body = TILED_1D.replace("halo(", "racy(").replace("    __syncthreads();\n", "")
    c, _ = failing(kc, "stencil", "racy", body)
    assert c["ename"] == "KernelError" and "data race" in c["evalue"], c
    c, _, doc = cell(kc, kernel_cell("stencil", "racy", body, "--no-cpu-check"))
    race = doc["check"].get("tools", {}).get("racecheck", {}).get("status")
    if c["status"] == "ok":                         # passed by luck, and no racecheck on this machine
        assert race == "unavailable", doc["check"]
    else:                                           # a wrong result, or racecheck names the race
        assert c["ename"] == "CheckError", c
        assert doc["check"]["passed"] is False or race == "failed", doc["check"]
    next_cell_works(kc)


def test_too_much_shared_memory_is_a_clear_error(kc):
    defined(kc, "stencil", "halo", TILED_1D)
    c, _, _ = cell(kc, "%stencil --size 10007 --radius 3 --variant halo --smem 1000000 --reps 1 --warmup 0")
    assert c["status"] == "error" and "shared memory" in c["evalue"], c
    next_cell_works(kc)
