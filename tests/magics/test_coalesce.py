"""%coalesce through the command line on the CPU backend: the stride experiment (default strides,
odd sizes, blocks), the matrix experiment (--layout row,col), --variant (ours by default, named by
the experiment: stride, or row and col under --layout), the sector model, the exact check, every error
path, and the result document against tests/schemas/coalesce.schema.json.
tests/gpu/test_coalesce_gpu.py covers the GPU; students' kernels: test_student_coalesce.py."""
from __future__ import annotations

import pytest

from conftest import load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("coalesce")
QUICK = "--reps 2 --warmup 0"


def coalesce_doc(cell: str) -> dict:
    return magic_doc("coalesce", cell, SCHEMA)


def test_default_strides():
    doc = coalesce_doc(f"%coalesce --size 2^18 {QUICK}")
    runs = doc["runs"]
    assert [r["stride"] for r in runs] == [1, 2, 4, 8, 16, 32]
    assert [r["model"]["sectors_per_warp"] for r in runs] == [4, 8, 16, 32, 32, 32]
    assert [r["model"]["traffic_per_useful_byte"] for r in runs] == [1, 2, 4, 8, 8, 8]
    for r in runs:
        assert r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0
        assert r["variant"] == "stride" and r["layout"] is None and r["size"] == 2 ** 18
        assert r["gbs"] == pytest.approx(8 * 2 ** 18 / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        if r["bandwidth_gbs"]:
            assert r["pct_of_bandwidth"] == pytest.approx(100 * r["gbs"] / r["bandwidth_gbs"], rel=1e-9)
        assert "cache lines" in r["impl"]
    assert doc["params"]["layout"] is None and doc["sweep"]["varying"] == ["stride"]
    assert doc["params"]["variant"] == "stride"
    for r in runs:
        assert "source" not in r and "first_wrong" not in r["check"] and "never_written" not in r["check"]


def test_odd_sizes_strides_blocks():
    doc = coalesce_doc(f"%coalesce --stride 1,3,7,33 --size 33,1000003 --block 32,1024 {QUICK}")
    assert len(doc["runs"]) == 4 * 2 * 2
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert doc["sweep"]["varying"] == ["stride", "size", "block"]


def test_stride_1_launch():
    """Our stride-1 copy gives a thread 8 elements (coalesce.h says why), the strided ones one: the
    launch each reports is the one the GPU runs, and the copy stays exact past a partial block."""
    doc = coalesce_doc(f"%coalesce --stride 1,2 --size 100003 --block 256 {QUICK}")
    one, two = doc["runs"]
    assert one["launch"]["grid"] == [-(-100003 // (8 * 256)), 1, 1]
    assert two["launch"]["grid"] == [-(-100004 // 256), 1, 1]
    assert one["check"]["passed"] and two["check"]["passed"]


def test_layout_row_col():
    doc = coalesce_doc(f"%coalesce --layout row,col --rows 1000 --cols 777 {QUICK}")
    row, col = doc["runs"]
    assert (row["variant"], row["stride"], col["variant"], col["stride"]) == ("row", 1, "col", 777)
    assert row["size"] == col["size"] == 777000 and row["rows"] == 1000 and col["cols"] == 777
    assert row["check"]["passed"] and col["check"]["passed"]
    assert doc["params"]["stride"] is None and doc["params"]["size"] == 777000
    assert doc["params"]["variant"] is None and doc["sweep"] == {"varying": ["layout"], "points": 2, "chart": None, "chart_note": None}


@pytest.mark.parametrize("flags", ["", "--variant stride", "--variant all", "-v stride"])
def test_variant_stride_is_the_default(flags):
    """Naming ours, or all, runs what the default runs: the same document but for --variant itself."""
    doc = coalesce_doc(f"%coalesce --stride 1,4 --size 1000 {flags} {QUICK}")
    assert [(r["variant"], r["stride"]) for r in doc["runs"]] == [("stride", 1), ("stride", 4)]
    assert doc["params"]["variant"] == "stride" and doc["sweep"]["varying"] == ["stride"]


@pytest.mark.parametrize("flags, ran", [
    ("--layout row,col --variant all", [("row", "row"), ("col", "col")]),
    ("--layout row,col --variant col,row", [("row", "row"), ("col", "col")]),
    # a built-in traversal runs at its own layout only
    ("--layout row,col --variant col", [("col", "col")]),
    ("--layout col --variant col", [("col", "col")]),
])
def test_variant_under_layout(flags, ran):
    doc = coalesce_doc(f"%coalesce {flags} --rows 30 --cols 7 {QUICK}")
    assert [(r["layout"], r["variant"]) for r in doc["runs"]] == ran
    assert all(r["check"]["passed"] for r in doc["runs"])


def test_table_and_chart():
    rc, _, out, err = run(f"%coalesce --size 2^18 {QUICK}", json_mode=False)
    assert rc == 0, err
    assert "GB/s by stride" in out and "% of copy BW" in out and "32B sectors / warp" in out
    assert "no chart" not in out


def test_no_chart_where_it_would_be_noise():
    """A copy of 256 KiB times a launch, not the memory: the table, a note saying why, and no chart; two
    strides are two numbers, read off the table."""
    rc, docs, _, err = run(f"%coalesce --size 2^15 --stride 1,2,4,8 {QUICK}")
    assert rc == 0, err
    [doc] = docs
    assert doc["sweep"]["chart"] is None and "less than 2^20 bytes" in doc["sweep"]["chart_note"]
    rc, _, out, _ = run(f"%coalesce --size 2^15 --stride 1,2,4,8 {QUICK}", json_mode=False)
    assert "note: no chart: every point does less than 2^20 bytes of work" in out and "GB/s by stride" not in out
    rc, docs, out, _ = run(f"%coalesce --size 2^20 --stride 1,2 {QUICK}")
    assert docs[0]["sweep"]["chart"] is None and docs[0]["sweep"]["chart_note"] is None
    # three strides far apart (a sector per element at 32), so that a loaded machine's noise cannot bring
    # their rates within 5% of each other, where the chart would be dropped as noise
    rc, docs, out, _ = run(f"%coalesce --size 2^20 --stride 1,8,32 {QUICK}")
    assert docs[0]["sweep"]["chart"] == "line", docs[0]["sweep"]["chart_note"]


def test_no_check_and_help():
    doc = coalesce_doc(f"%coalesce --size 1000 --stride 4 --no-check {QUICK}")
    assert doc["runs"][0]["check"]["passed"] is None
    rc, _, out, _ = run("%help coalesce", json_mode=False)
    assert rc == 0 and "--layout" in out and "sectors" in out and "%coalesce --layout row,col" in out


@pytest.mark.parametrize("cell, code, needles", [
    ("%coalesce --block 100", 1, ["UsageError", "multiple of the warp size"]),
    ("%coalesce --block 32x4", 1, ["UsageError", "one-dimensional", "--block B"]),
    ("%coalesce --size 16 --stride 32", 1, ["UsageError", "larger than --size 16"]),
    ("%coalesce --stride 2 --layout col", 1, ["UsageError", "two experiments"]),
    ("%coalesce --layout diagonal", 2, ["UsageError", "--layout"]),
    ("%coalesce --stride 0", 2, ["UsageError", "--stride"]),
    ("%coalesce --size 2^50", 1, ["MemoryError", "needs", "largest size that fits"]),
    ("%coalesce --layout col --rows 2^30 --cols 2^30", 1, ["MemoryError", "matrix"]),
    ("%coalesc", 2, ["coalesce"]),
    ("%coalesce --variant strid", 2, ["UsageError", "did you mean 'stride'", "stride, row, col, all"]),
    ("%coalesce --variant col", 1, ["UsageError", "--variant col", "matrix experiment", "--layout col",
                                    "own is stride"]),
    ("%coalesce --layout row --variant stride", 1, ["UsageError", "--variant stride", "row, col"]),
    ("%coalesce --layout row --variant col", 1, ["UsageError", "--variant col runs at --layout col"]),
])
def test_errors(cell, code, needles):
    rc, _, _, err = run(cell)
    assert rc == code, err
    for n in needles:
        assert n in err, err
