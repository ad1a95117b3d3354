"""%vecadd through the command line on the CPU backend: both ops, both memory kinds, block sizes,
the three timed phases and their GB/s, the headline share of time spent moving data, the exact
check, determinism, every error path, and the result document against
tests/schemas/vecadd.schema.json. tests/gpu/test_vecadd_gpu.py covers the GPU."""
from __future__ import annotations

import pytest

from conftest import load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("vecadd")
QUICK = "--reps 2 --warmup 0"


def vecadd_doc(cell: str) -> dict:
    return magic_doc("vecadd", cell, SCHEMA)


@pytest.mark.parametrize("op", ["add", "daxpy"])
@pytest.mark.parametrize("memory", ["pageable", "pinned"])
def test_op_and_memory(op, memory):
    doc = vecadd_doc(f"%vecadd --size 100003 --op {op} --memory {memory} {QUICK}")
    (r,) = doc["runs"]
    assert r["check"]["passed"] is True and r["check"]["wrong"]["count"] == 0
    assert r["check"]["tolerance"] == 0 and "exact" in r["check"]["method"]
    assert r["op"] == op and r["variant"] == "builtin" and r["memory"] == memory and r["backend"] == "cpu"
    assert "memcpy stands in" in r["impl"]
    elem_in, elem_out = (16, 8) if op == "daxpy" else (8, 4)
    assert r["bytes"] == {"h2d": elem_in * 100003, "kernel": (elem_in + elem_out) * 100003, "d2h": elem_out * 100003}
    h, k, d = (r[f"{p}_ms"]["median"] for p in ("h2d", "kernel", "d2h"))
    assert r["h2d_gbs"] == pytest.approx(elem_in * 100003 / (h * 1e6), rel=1e-9)
    assert r["kernel_gbs"] == pytest.approx((elem_in + elem_out) * 100003 / (k * 1e6), rel=1e-9)
    assert r["d2h_gbs"] == pytest.approx(elem_out * 100003 / (d * 1e6), rel=1e-9)
    assert r["transfer_pct"] == pytest.approx(100 * (h + d) / (h + k + d), rel=1e-9)
    assert r["time_ms"]["reps"] == 2
    assert ("alpha" in r) == (op == "daxpy")


def test_odd_sizes_and_blocks():
    doc = vecadd_doc(f"%vecadd --size 1,31,33,1000003 --op add,daxpy --block 32,96,1024 {QUICK}")
    assert len(doc["runs"]) == 4 * 2 * 3
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert doc["sweep"]["varying"] == ["size", "op", "block"]


def test_headline_in_the_view():
    rc, _, out, err = run(f"%vecadd --size 2^16 --memory pageable,pinned {QUICK}", json_mode=False)
    assert rc == 0, err
    assert "Vector add: moving data took" in out and "% of the time" in out
    assert "% moving data" in out and "H2D GB/s" in out


def test_alpha_and_no_check_and_seed():
    a = vecadd_doc(f"%vecadd --size 1000 --op daxpy --alpha -0.5 --seed 7 {QUICK}")
    assert a["runs"][0]["alpha"] == -0.5 and a["runs"][0]["check"]["passed"] is True
    b = vecadd_doc(f"%vecadd --size 1000 --no-check {QUICK}")
    assert b["runs"][0]["check"]["passed"] is None and "skipped" in b["runs"][0]["check"]["method"]


def test_help_and_sort():
    rc, _, out, err = run("%help vecadd", json_mode=False)
    assert rc == 0 and "pinned" in out and "daxpy" in out and "%vecadd --size" in out
    doc = vecadd_doc(f"%vecadd --size 1000,100000 --sort {QUICK}")
    assert doc["params"]["sort"] is True


@pytest.mark.parametrize("cell, code, needles", [
    ("%vecadd --block 48", 1, ["UsageError", "multiple of the warp size 32"]),
    ("%vecadd --block 2048", 2, ["UsageError", "--block"]),
    ("%vecadd --op sub", 2, ["UsageError", "--op"]),
    ("%vecadd --memory unified", 2, ["UsageError", "--memory"]),
    ("%vecadd --size 0", 2, ["UsageError", "--size"]),
    ("%vecadd --size 2^50", 1, ["MemoryError", "--size 2^50 needs", "of host memory", "largest size that fits"]),
    ("%vecadd --size 2^50 --op daxpy", 1, ["MemoryError", "largest size that fits"]),
    ("%vecadd --reps 0", 2, ["UsageError", "--reps"]),
    ("%vecad --size 10", 2, ["vecadd"]),
])
def test_errors(cell, code, needles):
    rc, _, _, err = run(cell)
    assert rc == code, err
    for n in needles:
        assert n in err, err
