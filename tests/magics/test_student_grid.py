"""The picture kernel as a student's %grid kernel without a GPU (the CPU backend): %%kernel --for grid
compiles, reports and quick-checks it on the CPU runner; a wrong signature names the picture kernel's;
it runs beside map on the plan shown (the runner's findings: tests/magics/test_cpu_runner_grid.py; on a
GPU: tests/gpu/test_student_grid_gpu.py); --variant map still runs ours with --run. NVRTC is part of
the CUDA toolkit: without it the compile tests are skipped, the others still run."""
from __future__ import annotations

import pytest

from conftest import cell, compiled
from kernels import picture

PICTURE = "%%kernel --for grid --name mypic\n" + picture("mypic")
SIGNATURE = "const float *Pin, float *Pout, int width, int height"


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def test_compiles_and_reports(kc):
    c, text, doc = compiled(kc, PICTURE)
    assert c["status"] == "ok", c
    assert doc["for"] == "grid" and doc["name"] == "mypic" and doc["block"] == [16, 16, 1]
    assert doc["resources"]["registers"] > 0 and "%grid --variant mypic" in text
    assert doc["check"]["passed"] is True and doc["quick_check"].startswith("%grid --data 67x33")


def test_signature_mismatch_names_the_picture_kernel(kc):
    c, _, _ = compiled(kc, PICTURE.replace("int width, int height", "int width"))
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert SIGNATURE in c["evalue"] + "\n".join(c["traceback"])


def test_cpu_backend_runs_it_beside_map(kc):
    assert compiled(kc, PICTURE)[0]["status"] == "ok"
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16 --variant map,mypic --reps 1")
    assert c["status"] == "ok", c
    assert [r["variant"] for r in doc["runs"]] == ["map", "mypic"]
    mine = doc["runs"][1]
    assert mine["backend"] == "cpu" and mine["source"] == "student" and mine["check"]["passed"] is True, mine
    assert mine["impl"].startswith("your kernel mypic on the CPU runner")
    assert mine["launch"]["grid"] == doc["grid"] and mine["launch"]["block"] == doc["block"] == [16, 16, 1]
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16 --variant map --run --reps 1")
    assert c["status"] == "ok", c
    assert [r["variant"] for r in doc["runs"]] == ["map"] and doc["runs"][0]["check"]["passed"] is True
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16")
    assert c["status"] == "ok" and doc["runs"] == []


def test_help_shows_the_picture_kernel(kc):
    c, text, _ = cell(kc, "%help grid")
    assert c["status"] == "ok", c
    assert f"__global__ void NAME({SIGNATURE})" in text and "quick check: %grid --data 67x33" in text
