"""%reduce through the command line on the CPU backend: every variant, op, dtype and flag,
sweeps, determinism, every error path, and the result document against
tests/schemas/reduce.schema.json.

Runs `cudalab --run CELL --json` (one JSON document per line; exit 1 on a command error with
"ENAME: evalue" on stderr, 2 on a usage error) with CUDALAB_BACKEND=cpu, so it tests the same
thing on a laptop, in CI and on a GPU machine (tests/gpu/test_reduce_gpu.py covers the GPU)."""
from __future__ import annotations

import json
import time

import pytest

from conftest import load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("reduce")
VARIANTS = ["cpu", "divergent", "convergent", "multiblock", "fast", "cub"]
QUICK = "--reps 2 --warmup 0"
CPU = {"CUDALAB_BACKEND": "cpu"}


def reduce_doc(cell: str) -> dict:
    return magic_doc("reduce", cell, SCHEMA)


# ---------------------------------------------------------------- results

@pytest.mark.parametrize("dtype", ["float", "int"])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_every_variant_checked(dtype, op):
    doc = reduce_doc(f"%reduce --size 100003 --variant all --dtype {dtype} --op {op} {QUICK}")
    runs = doc["runs"]
    assert [r["variant"] for r in runs] == VARIANTS
    values = set()
    for r in runs:
        assert r["check"]["passed"] is True, r
        assert r["backend"] == "cpu"
        assert r["size"] == 100003 and r["dtype"] == dtype and r["op"] == op
        assert r["gbs"] > 0 and r["time_ms"]["reps"] == 2
        assert r["gbs"] == pytest.approx(100003 * 4 / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        if r["bandwidth_gbs"]:
            assert r["pct_of_bandwidth"] == pytest.approx(100 * r["gbs"] / r["bandwidth_gbs"], rel=1e-9)
        values.add(r["value"])
    if dtype == "int" or op != "sum":
        assert len(values) == 1, values        # exact for int and for max/min
    if dtype == "int":
        assert all(isinstance(r["value"], int) for r in runs)
        ref = runs[0]["check"]["reference"]
        assert all(r["value"] == ref for r in runs)
        if op == "max":
            assert ref <= 1000
        if op == "min":
            assert ref >= -1000


def test_float_sum_tolerance_is_reported():
    doc = reduce_doc(f"%reduce --size 2^16 --variant divergent,fast --dtype float {QUICK}")
    for r in doc["runs"]:
        c = r["check"]
        assert c["tolerance"] == pytest.approx(1e-5 * 16)
        assert c["abs_err"] <= c["tolerance"] * c["scale"]
        assert "rtol" in c["method"]


def test_odd_sizes_and_blocks():
    doc = reduce_doc(f"%reduce --size 1,2,3,33,1000,65537 --block 32,1024 --variant divergent,convergent,"
                     f"multiblock,fast --dtype int {QUICK}")
    assert len(doc["runs"]) == 6 * 2 * 4
    assert all(r["check"]["passed"] for r in doc["runs"])
    assert doc["sweep"]["varying"] == ["size", "block", "variant"]
    sizes = [r["size"] for r in doc["runs"]]
    assert sizes == sorted(sizes)              # size is the outer loop, variant the inner one


def test_launch_configuration():
    doc = reduce_doc(f"%reduce --size 100000 --block 128 --variant divergent,convergent,multiblock,fast,cpu,cub {QUICK}")
    by = {r["variant"]: r for r in doc["runs"]}
    for v in ("divergent", "convergent"):
        assert by[v]["launch"]["grid"] == [(100000 + 255) // 256, 1, 1]
        assert by[v]["launch"]["block"] == [128, 1, 1]
        assert by[v]["launch"]["kernels"] == 2
        assert by[v]["launch_final"]["block"] == [1024, 1, 1]
    assert by["multiblock"]["launch"]["grid"] == [(100000 + 2047) // 2048, 1, 1]
    assert by["fast"]["launch"]["block"] == [128, 1, 1]
    assert by["cpu"]["block"] is None and by["cub"]["block"] is None
    assert "CPU reference" in by["cub"]["impl"]
    assert by["cpu"]["impl"].startswith("CPU: host loop")
    assert all("config" in r["launch"] for r in doc["runs"])
    # the GPU kernels' shared memory for these parameters, not the emulation's doubles:
    # one float per thread for the trees, one per warp slot (32) for the shuffles
    for v in ("divergent", "convergent", "multiblock"):
        assert by[v]["launch"]["smem_per_block"] == 128 * 4
        assert by[v]["launch_final"]["smem_per_block"] == 1024 * 4
    assert by["fast"]["launch"]["smem_per_block"] == 32 * 4 == by["fast"]["launch_final"]["smem_per_block"]
    assert by["cpu"]["launch"]["smem_per_block"] == 0
    ints = reduce_doc(f"%reduce --size 2^20 --dtype int --variant convergent {QUICK}")["runs"][0]
    assert ints["launch"]["smem_per_block"] == 256 * 8        # integer sums add in int64
    # one block's segment: no second pass
    one = reduce_doc(f"%reduce --size 512 --block 256 --variant convergent {QUICK}")["runs"][0]
    assert one["launch"]["kernels"] == 1 and one["launch_final"] is None


def test_block_flag_runs_cpu_and_cub_once():
    doc = reduce_doc(f"%reduce --size 4096 --variant cpu,fast,cub --block 32,64,128 {QUICK}")
    names = [r["variant"] for r in doc["runs"]]
    assert names.count("cpu") == 1 and names.count("cub") == 1 and names.count("fast") == 3


def test_defaults():
    doc = reduce_doc("%reduce --variant cpu --reps 1 --warmup 0")
    p = doc["params"]
    assert p["size"] == 2 ** 24 and p["op"] == "sum" and p["dtype"] == "float" and p["block"] is None
    assert doc["runs"][0]["block"] is None     # cpu takes no block; fast runs 1024 and the trees 256 when none is given
    assert p["seed"] == 1 and p["check"] is True and p["sort"] is False
    assert doc["runs"][0]["check"]["passed"] is True
    # the variant default is every variant; reps and warmup default to 5 and 1 on the CPU (20 and 3 on a GPU)
    rc, docs, _, err = run("%reduce --size 1000")
    assert rc == 0, err
    d = docs[0]
    assert d["params"]["variant"] == VARIANTS and d["params"]["reps"] == 5 and d["params"]["warmup"] == 1
    assert all(r["time_ms"]["reps"] == 5 for r in d["runs"])
    # without --block: fast's own 1024, the trees 256; a --block given is every variant's
    blocks = {r["variant"]: r["block"] for r in d["runs"]}
    assert blocks["fast"] == 1024 and blocks["convergent"] == 256 and blocks["cub"] is None
    d = reduce_doc(f"%reduce --size 1000 --variant fast,convergent --block 128 {QUICK}")
    assert [r["block"] for r in d["runs"]] == [128, 128]


def test_deterministic_given_seed():
    cell = "%reduce --size 100003 --variant all --dtype float,int --op sum,min --reps 1 --warmup 0 --seed {}"
    a = reduce_doc(cell.format(7))["runs"]
    b = reduce_doc(cell.format(7))["runs"]
    c = reduce_doc(cell.format(8))["runs"]
    assert [r["value"] for r in a] == [r["value"] for r in b]
    assert [r["check"] for r in a] == [r["check"] for r in b]
    assert [r["value"] for r in a if r["op"] == "sum"] != [r["value"] for r in c if r["op"] == "sum"]


def test_float_max_is_not_shown_as_1():
    """The inputs lie in [-1, 1): their max is below 1, and the table must not say it is 1."""
    doc = reduce_doc(f"%reduce --size 2^20 --op max,min --variant cpu {QUICK}")
    top, bottom = (r["value"] for r in doc["runs"])
    assert 0.99 < top < 1 and -1 <= bottom < -0.99
    rc, _, text, _ = run(f"%reduce --size 2^20 --op max,min --variant cpu {QUICK}", json_mode=False)
    assert rc == 0
    values = [line.split()[-2] for line in text.splitlines() if line.startswith("cpu ")]
    assert len(values) == 2 and values[0] != "1" and float(values[0]) < 1, values
    assert float(values[0]) == pytest.approx(top, abs=1e-6) and values[1] != "-1", values


def test_no_check():
    doc = reduce_doc(f"%reduce --size 1000 --variant fast --no-check {QUICK}")
    c = doc["runs"][0]["check"]
    assert c["passed"] is None and "skipped" in c["method"]


def test_text_table_and_sort():
    rc, _, out, err = run(f"%reduce --size 50000 --variant divergent,fast,cub --sort {QUICK}", json_mode=False)
    assert rc == 0 and err == ""
    assert "GB/s" in out and "median ms" in out and "CPU backend" in out
    lines = [l for l in out.splitlines() if l.split()[:1] and l.split()[0] in VARIANTS]
    gbs = [float(l.split()[6]) for l in lines[:3]]
    assert gbs == sorted(gbs, reverse=True)


def test_help():
    rc, _, out, err = run("%help reduce", json_mode=False)
    assert rc == 0, err
    for word in VARIANTS + ["--block", "__shfl_down_sync", "second kernel", "rtol"]:
        assert word in out, word


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("cell, code, needles", [
    ("%reduce --size 100 --block 48", 1, ["UsageError", "--block 48", "power of two"]),
    ("%reduce --size 100 --block 64,100", 1, ["UsageError", "--block 100"]),
    ("%reduce --size 100 --block 2048", 2, ["UsageError", "--block"]),
    ("%reduce --size 100 --block 16", 1, ["UsageError", "--block 16", "power of two"]),
    ("%reduce --size 100 --block 16x2", 1, ["UsageError", "one-dimensional"]),
    ("%reduce --size 0", 2, ["UsageError", "--size"]),
    ("%reduce --size -5", 2, ["--size"]),
    ("%reduce --size lots", 2, ["--size"]),
    ("%reduce --op prod", 2, ["UsageError", "sum, max, min"]),
    ("%reduce --dtype double", 2, ["UsageError", "float, int"]),
    ("%reduce --variant divergnt", 2, ["UsageError", "did you mean 'divergent'"]),
    ("%reduce --variant fast,shuffle", 2, ["UsageError", "shuffle"]),
    ("%reduce --reps 0", 2, ["UsageError", "--reps"]),
    ("%reduce --warmup 101", 2, ["UsageError", "--warmup"]),
    ("%reduce --blok 64", 2, ["UsageError", "--block"]),
])
def test_usage_errors(cell, code, needles):
    rc, _, out, err = run(cell)
    assert rc == code, (out, err)
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("size", ["2^50", "2^62", "9223372036854775807"])
def test_absurd_sizes_refused_before_allocation(size):
    t0 = time.monotonic()
    rc, _, out, err = run(f"%reduce --size {size} --variant fast")
    assert rc == 1, (out, err)
    assert err.startswith("MemoryError: --size")
    assert "of host memory" in err and "largest size that fits" in err
    assert time.monotonic() - t0 < 20, "the refusal must not allocate or compute first"


def test_absurd_size_in_a_list_refused_before_any_point():
    rc, _, out, err = run("%reduce --size 1000,2^50 --variant fast")
    assert rc == 1 and out == ""
    assert "2^50" in err


def test_next_cell_works_after_error():
    rc, _, _, err = run("%reduce --size 2^50\n%reduce --size 10")
    assert rc == 1 and "MemoryError" in err
    doc = reduce_doc(f"%reduce --size 10 --variant fast {QUICK}")
    assert doc["runs"][0]["value"] is not None


def test_sort_ranks_the_bars_too():
    """--sort orders the table by GB/s, and the bar chart below it in the same order."""
    rc, _, text, err = run(f"%reduce --size 2^20 --variant divergent,convergent,fast,cub --sort {QUICK}",
                           json_mode=False)
    assert rc == 0, err
    table, chart = text.split("GB/s by variant")
    names = {"divergent", "convergent", "fast", "cub"}
    table_order = [l.split()[0] for l in table.splitlines() if l.split()[:1] and l.split()[0] in names]
    chart_order = [l.split()[0] for l in chart.splitlines() if l.split()[:1] and l.split()[0] in names]
    assert table_order == chart_order and sorted(table_order) == sorted(names), text
    rates = [float(l.split()[1]) for l in chart.splitlines() if l.split()[:1] and l.split()[0] in names]
    assert rates == sorted(rates, reverse=True)
