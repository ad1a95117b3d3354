"""The picture kernel as a student's %grid kernel on the CPU runner (the CPU backend, no GPU), through a
real kernel and jupyter_client: a correct kernel passes (and its %%kernel quick check) on the plan %grid
shows, 2D, 1D and with a rectangular block; --grid overrides the plan's grid (a grid too small leaves
pixels never written, named); the classic bugs are named exactly: without the bounds check the runner
stops a thread reading past the end of Pin and finds two writers of Pout[1][0] (a thread past the last
column writes into the next row), a KernelError naming thread, block and cell line; swapped row and
column indices leave pixels never written, and a transposed write puts the wrong pixel in place, each a
CheckError naming the first wrong pixel as Pout[row][col]; a 3D shape is refused; the host-work limit
holds the picture kernel's run too. NVRTC and g++ are needed (the tests are skipped without NVRTC)."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import cell, compiled, load_schema
from kernels import picture

H = "%%kernel --for grid --name {name}\n"
# line 1 is the %%kernel line: the kernel's lines are numbered from 2, as the cell shows them
PICTURE = H.format(name="mypic") + picture("mypic")
# line 4 reads and writes every thread's pixel, inside the picture or not
NO_BOUNDS = H.format(name="nobound") + picture("nobound").replace(
    "    if (row < height && col < width)\n        Pout", "    Pout")
# x numbers the rows: the grid covers 80 rows of 64 columns, and columns 64..75 are never reached
SWAPPED = H.format(name="swapped") + picture(
    "swapped", index="int row = blockIdx.x * blockDim.x + threadIdx.x, col = blockIdx.y * blockDim.y + threadIdx.y;")
# every pixel written once, in bounds, at the transposed place: only the check sees it
TRANSPOSED = H.format(name="transposed") + picture("transposed", out="Pout[col * height + row]")


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def error_text(c: dict) -> str:
    return c["evalue"] + "\n" + "\n".join(c["traceback"])


def test_correct_kernel_passes_on_the_plan(kc):
    c, _, doc = compiled(kc, PICTURE)
    assert c["status"] == "ok", c
    assert doc["check"]["passed"] is True and doc["quick_check"].startswith("%grid --data 67x33 --block 16x16")
    for line, block, grid in [("--data 76x62 --block 16x16", [16, 16, 1], [5, 4, 1]),
                              ("--data 76x62 --block 32x8", [32, 8, 1], [3, 8, 1]),
                              ("--data 1000 --block 256", [256, 1, 1], [4, 1, 1])]:
        c, _, doc = cell(kc, f"%grid {line} --variant map,mypic --reps 1")
        assert c["status"] == "ok", c
        jsonschema.validate(doc, load_schema("grid"))     # a student's run is a run like ours
        assert doc["block"] == block and doc["grid"] == grid, doc
        assert [r["variant"] for r in doc["runs"]] == ["map", "mypic"]
        mine = doc["runs"][1]
        assert mine["backend"] == "cpu" and mine["source"] == "student", mine
        assert mine["impl"].startswith("your kernel mypic on the CPU runner")
        assert mine["launch"]["grid"] == grid and mine["launch"]["block"] == block, mine   # the plan shown
        assert mine["check"]["passed"] is True and mine["check"]["never_written"] == 0, mine
        assert mine["time_ms"]["reps"] == 1


def test_grid_overrides_the_plan(kc):
    compiled(kc, PICTURE)
    c, _, _ = cell(kc, "%grid --data 76x62 --block 16x16 --variant mypic --grid 2x4 --reps 1")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert c["evalue"] == "your picture kernel mypic computes a wrong picture: Pout[0][32] was never written " \
                          "(expected 0.182656765)", c


def test_no_bounds_check_is_named(kc):
    c, _, _ = compiled(kc, NO_BOUNDS)
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert "(%grid --data 67x33): out-of-bounds access: thread (0,1) of block (0,2) read Pin[33][0] at line 4" in \
        c["evalue"], c
    # compiled, so kept: it runs at the plan's size, and every finding is listed
    c, _, _ = cell(kc, "%grid --data 76x62 --block 16x16 --variant nobound --reps 1")
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert c["evalue"] == (
        "your kernel nobound failed on the CPU runner (%grid --data 76x62): out-of-bounds access: thread (0,14) "
        "of block (0,3) read Pin[62][0] at line 4, past the end of Pin (62×76) (the thread was stopped there, as "
        "a GPU would fault): compare every index with its bound before using it (164 in all)"), c
    assert c["traceback"][2:4] == ["what the CPU runner found (the first of each kind, by block):",
                                   c["evalue"].split(": ", 1)[1]], c["traceback"]
    # blocks (4,0) and (0,0) may run in two of the runner's processes: which wrote first is the host's timing
    assert len(c["traceback"]) == 5 and c["traceback"][4] in [
        f"two writers: {a} and {b} both wrote Pout[1][0] at line 4: each element has one thread; a thread past "
        "the last column writes into the next row (check the column against its bound too) (244 in all)"
        for a, b in [("thread (12,0) of block (4,0)", "thread (0,1) of block (0,0)"),
                     ("thread (0,1) of block (0,0)", "thread (12,0) of block (4,0)")]], c["traceback"]


def test_swapped_row_and_column_leave_pixels_never_written(kc):
    c, _, _ = compiled(kc, SWAPPED)
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16 --variant swapped --reps 1")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert c["evalue"] == "your picture kernel swapped computes a wrong picture: Pout[0][64] was never written " \
                          "(expected -1.05400836)", c
    check = doc["runs"][0]["check"]
    assert check["passed"] is False and check["never_written"] == check["wrong"]["count"] == 12 * 62, check


def test_transposed_write_is_a_wrong_pixel(kc):
    compiled(kc, TRANSPOSED)
    c, _, doc = cell(kc, "%grid --data 76x62 --block 16x16 --variant transposed --reps 1")
    assert c["status"] == "error" and c["ename"] == "CheckError", c
    assert c["evalue"].startswith("your picture kernel transposed computes a wrong picture: Pout[0][1] = "), c
    assert doc["runs"][0]["check"]["never_written"] == 0


def test_3d_refused_and_host_work_held(start_kernel):
    kc = start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": "1e-6"})[1]
    compiled(kc, PICTURE.replace("--name mypic", "--name mypic --no-check"))
    c, _, _ = cell(kc, "%grid --data 8x8x8 --block 8x8 --variant mypic")
    assert c["status"] == "error" and c["ename"] == "UsageError" and "a picture is 2D" in c["evalue"], c
    c, _, _ = cell(kc, "%grid --data 76x62 --block 16x16 --variant mypic --reps 10")
    assert c["status"] == "error" and c["ename"] == "UsageError", c
    assert c["evalue"].startswith("%grid --data 76x62: about ") and "of host work" in c["evalue"], c
