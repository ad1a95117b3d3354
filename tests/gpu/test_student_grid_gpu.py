"""On a GPU: the lecture's picture kernel as a student's %grid kernel. A correct one passes on the plan
%grid shows (beside map, ours, at 1D and 2D shapes and several blocks); the classic bugs are named: no
bounds check (writes past Pout: the guard, or a fault), the transposed pixel read (the first wrong
Pout[row][col]), half the rows never written; a 3D shape is refused. After each failure the next cell
works."""
from __future__ import annotations

import pytest

from kernels import picture
from student_session import cell, failing, gpu_doc, kc, kernel_cell  # noqa: F401  (gpu_doc, kc: fixtures)


def next_cell_works(kc):
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16 --run --reps 1")
    assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"] is True, c


@pytest.mark.parametrize("data, block", [("76x62", "16x16"), ("1000003", "256"), ("67x33", "32x8"), ("1", "1")])
def test_picture_kernel_passes_beside_map(kc, data, block):
    c, _, doc = cell(kc, kernel_cell("grid", "mypic", picture("mypic")))
    assert c["status"] == "ok" and doc["check"]["passed"] is True, c
    c, _, doc = cell(kc, f"%grid --data {data} --block {block} --variant map,mypic --reps 3 --warmup 1")
    assert c["status"] == "ok", c
    ours, mine = doc["runs"]
    assert ours["variant"] == "map" and mine["variant"] == "mypic" and mine["source"] == "student"
    assert ours["check"]["passed"] is True and mine["check"]["passed"] is True
    assert mine["check"]["pixels"] == doc["elements"] and mine["check"]["never_written"] == 0
    assert mine["launch"]["grid"] == doc["grid"] and mine["launch"]["block"] == doc["block"]
    assert mine["time_ms"]["median"] > 0


def test_missing_bounds_check(kc):
    c, _ = failing(kc, "grid", "nobounds", picture("nobounds").replace(
        "if (row < height && col < width)\n        ", ""))
    text = c["evalue"] + "\n".join(c["traceback"])
    assert "wrote outside Pout" in text or "illegal" in text.lower(), text
    next_cell_works(kc)


def test_swapped_rows_and_columns(kc):
    # reading the transposed pixel (Pout and Pin both indexed col * height + row would be a permutation
    # of a correct picture, and right)
    c, _ = failing(kc, "grid", "swapped", picture("swapped").replace(
        "2.0f * Pin[row * width + col]", "2.0f * Pin[col * height + row]"))
    assert c["ename"] == "CheckError" and "Pout[" in c["evalue"] and "expected" in c["evalue"], c
    next_cell_works(kc)


def test_half_the_rows_never_written(kc):
    c, _ = failing(kc, "grid", "half", picture("half").replace("row < height &&", "row < height / 2 &&"))
    assert c["ename"] == "CheckError" and "Pout[16][0] was never written" in c["evalue"], c
    next_cell_works(kc)


def test_3d_data_is_refused(kc):
    assert cell(kc, kernel_cell("grid", "mypic", picture("mypic")))[0]["status"] == "ok"
    c, _, _ = cell(kc, "%grid --data 8x8x8 --block 4x4x4 --variant mypic")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "a picture is 2D" in c["evalue"], c
    next_cell_works(kc)
