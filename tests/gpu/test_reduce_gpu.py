"""%reduce on a CUDA device: every variant, op and dtype at odd sizes, every block size, sizes past
2^31 elements, the metrics, and the CPU analogues agreeing bit for bit with the kernels they mimic.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1 (what `make test-gpu` sets): then it fails loudly.
Uses only the standard library and pytest (no conftest helpers), so it also runs on a GPU machine
with plain python3: `python3 -m pytest --noconftest tests/gpu/test_reduce_gpu.py`."""
from __future__ import annotations

import pytest

VARIANTS = ["cpu", "divergent", "convergent", "multiblock", "fast", "cub"]

from gpu_cli import assert_all_passed, gpu, magic_doc, run  # noqa: E402,F401  (gpu is the fixture)


def reduce_doc(cell: str, env: dict | None = None) -> dict:
    return magic_doc("reduce", cell, env)


@pytest.mark.parametrize("size", ["1", "1000003", "2^22+1"])
def test_every_variant_op_dtype(gpu, size):
    n = 2 ** 22 + 1 if size == "2^22+1" else int(size)
    doc = reduce_doc(f"%reduce --size {n} --variant all --dtype float,int --op sum,max,min --reps 3 --warmup 1")
    assert_all_passed(doc)
    assert len(doc["runs"]) == 2 * 3 * len(VARIANTS)
    for r in doc["runs"]:
        assert r["backend"] == ("cpu" if r["variant"] == "cpu" else "cuda")
        assert r["time_ms"]["median"] > 0 and r["gbs"] > 0
        if r["variant"] not in ("cpu", "cub"):
            assert r["launch"]["regs_per_thread"] > 0
            assert r["impl"].startswith("CUDA: ")
        if r["variant"] == "cub":
            assert "cub::DeviceReduce" in r["impl"]


def test_every_block_size(gpu):
    doc = reduce_doc("%reduce --size 1000003 --variant divergent,convergent,multiblock,fast --dtype int,float "
                     "--block 32,64,128,256,512,1024 --reps 2 --warmup 0")
    assert_all_passed(doc)
    assert len(doc["runs"]) == 2 * 6 * 4


def test_past_int32_elements(gpu):
    """2^31 + 5 ints (8 GiB): 64-bit indices, the int64 sum, CUB with a 64-bit count."""
    doc = reduce_doc("%reduce --size 2147483653 --variant convergent,fast,cub --dtype int --reps 2 --warmup 1")
    assert_all_passed(doc)
    assert len({r["value"] for r in doc["runs"]}) == 1


def test_analogues_are_faithful(gpu):
    """The CPU analogues add in the kernels' order: the same float sums, bit for bit."""
    cell = ("%reduce --size 1000003 --variant divergent,convergent,multiblock --dtype float --op sum "
            "--block 64,256 --reps 1 --warmup 0")
    on_gpu = reduce_doc(cell)["runs"]
    on_cpu = reduce_doc(cell, env={"CUDALAB_BACKEND": "cpu"})["runs"]
    assert [r["backend"] for r in on_cpu] == ["cpu"] * len(on_cpu)
    assert [r["value"] for r in on_gpu] == [r["value"] for r in on_cpu]


def test_bandwidth_metrics(gpu):
    doc = reduce_doc("%reduce --size 2^26 --variant fast,cub --reps 10")
    assert_all_passed(doc)
    bw = doc["device"]["measured_bandwidth_gbs"]
    assert bw and bw > 500
    for r in doc["runs"]:
        assert r["bandwidth_gbs"] == bw
        assert r["gbs"] == pytest.approx(2 ** 26 * 4 / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        assert 20 < r["pct_of_bandwidth"] < 150, r


def test_absurd_size_refused(gpu):
    rc, _, err = run("%reduce --size 2^40 --variant fast")
    assert rc == 1
    assert err.startswith("MemoryError: --size 2^40 needs")
    assert "of device memory; this device has" in err and "largest size that fits" in err
    rc, docs, err = run("%reduce --size 1000 --variant fast --reps 1")
    assert rc == 0 and docs[0]["runs"][0]["check"]["passed"] is True
