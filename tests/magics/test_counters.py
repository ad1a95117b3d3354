"""--counters on the CPU backend (no GPU, no CUPTI): every timed family takes the flag, and each run of
its built-in variants (CPU analogues, which the CPU runner does not run) says "unavailable: <why>"
under the one set of names (tests/schemas/counters.schema.json, valid inside each family's schema),
the table says it once and grows no empty columns, and the text output stays on stdout. The counts
themselves are checked against independent expectations on a GPU (tests/gpu/test_counters_gpu.py),
with a fake backend that counts in the C unit tests (tests/unit/test_matmul.c: magic_counters), and
as the CPU runner simulates them for students' kernels in tests/magics/test_cpu_runner_counters.py."""
from __future__ import annotations

import jsonschema
import pytest

from conftest import load_schema, magic_doc, run_cell

CELLS = {
    "matmul": "%matmul --size 32 --variant naive,tiled --reps 1 --counters",
    "histo": "%histo --size 4096 --variant privatized --reps 1 --counters",
    "reduce": "%reduce --size 4096 --variant fast --reps 1 --counters",
    "stencil": "%stencil --size 4096 --variant naive --reps 1 --counters",
    "coalesce": "%coalesce --size 4096 --stride 1 --reps 1 --counters",
    "vecadd": "%vecadd --size 4096 --reps 1 --counters",
}
SHARED = load_schema("counters")


@pytest.mark.parametrize("magic", sorted(CELLS))
def test_every_timed_family_says_why_nothing_was_counted(magic):
    family = load_schema(magic)
    doc = magic_doc(magic, CELLS[magic], family)
    assert doc["runs"]
    for run in doc["runs"]:
        jsonschema.validate(run["counters"], SHARED)
        assert list(run["counters"]) == ["source"]
        assert run["counters"]["source"].startswith("unavailable: the CPU backend has no hardware counters, and "
                                                    "simulates them only for kernels on its CPU runner")
    rc, _, text, err = run_cell(CELLS[magic], json_mode=False)
    assert rc == 0 and err == ""
    assert text.count("counters unavailable: the CPU backend has no hardware counters") == 1
    assert "DRAM read MB" not in text and "CGMA (DRAM)" not in text and "sectors/load" not in text


def test_without_the_flag_runs_have_no_counters():
    doc = magic_doc("matmul", "%matmul --size 32 --variant naive --reps 1", load_schema("matmul"))
    assert "counters" not in doc["runs"][0]


def test_the_lectures_bound_at_a_stated_bandwidth():
    """The material's arithmetic: 150 GB/s ÷ 4 B × CGMA; 37.5 GFLOP/s for the naive kernel (CGMA 1)."""
    doc = magic_doc("matmul", "%matmul --size 64 --variant naive,tiled --tile 16 --bandwidth 150 --reps 1",
                    load_schema("matmul"))
    naive, tiled = doc["runs"]
    assert naive["model"]["bound_gflops"] == 37.5 and naive["model"]["bandwidth_gbs"] == 150
    assert tiled["model"]["bound_gflops"] == 150 / 4 * 16
    rc, _, text, _ = run_cell("%matmul --size 64 --variant naive --bandwidth 150 --reps 1", json_mode=False)
    assert rc == 0 and "bound GFLOP/s" in text and "37.5" in text
    rc, _, text, _ = run_cell("%matmul --size 64 --variant naive --reps 1", json_mode=False)
    assert rc == 0 and "bound GFLOP/s" not in text


def test_help_names_the_flag():
    rc, _, text, _ = run_cell("%help matmul", json_mode=False)
    assert rc == 0 and "--counters" in text and "performance counters (CUPTI)" in text
