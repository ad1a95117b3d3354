"""On a GPU: %%kernel --for matmul --bt, a student's kernel given B stored transposed (Bt), run by the
harness of the built-in naive-bt and tiled-bt. The corner-turned kernel passes beside tiled-bt at sizes
that fit no tile, at two tiles; a kernel that reads Bt as if it were B fails (the GPU really passes Bt);
the corner-turned kernel without --bt fails (the GPU passes B then). The same kernels as the CPU
backend's tests (tests/magics/test_student_matmul_bt.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from student_session import cell, gpu_doc, kc  # noqa: F401  (gpu_doc, kc: fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "magics"))   # the CPU backend's tests' kernels
from test_student_matmul_bt import ROW_MAJOR_B, SIZES, corner  # noqa: E402


def test_corner_turned_kernel_passes_beside_tiled_bt(kc):
    c, _, doc = cell(kc, corner("mycorner"))
    assert c["status"] == "ok" and doc["bt"] is True and doc["check"]["passed"] is True, c
    c, _, doc = cell(kc, f"%matmul {SIZES} --variant tiled-bt,mycorner --tile 8,16 --reps 3 --warmup 1")
    assert c["status"] == "ok", c
    mine = [r for r in doc["runs"] if r["variant"] == "mycorner"]
    assert [r["tile"] for r in mine] == [8, 16] and all(r["check"]["passed"] for r in doc["runs"])
    assert all(r["source"] == "student" and r["backend"] == "cuda" for r in mine)


def test_the_flag_changes_what_the_gpu_passes(kc):
    for kernel in (ROW_MAJOR_B, corner("nobt", flags="")):
        c, _, _ = cell(kc, kernel)
        assert c["status"] == "error" and c["ename"] == "CheckError" and "C[" in c["evalue"], c
    c, _, doc = cell(kc, f"%matmul {SIZES} --variant tiled --reps 1")      # the session still works
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, c
