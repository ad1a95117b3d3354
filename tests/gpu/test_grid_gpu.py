"""%grid --run and %occupancy --kernel on a real GPU: the mapping kernel visits every element
exactly once (1D, 2D, 3D, ragged shapes), the limits come from the device, and the occupancy API
agrees with the model for our kernels. Skipped without a GPU; fails under CUDALAB_REQUIRE_GPU=1."""
from __future__ import annotations

import pytest

from gpu_cli import gpu, magic_doc, run  # noqa: F401 - gpu is a fixture


@pytest.mark.parametrize("data, block", [
    ("76x62", "16x16"), ("1000003", "256"), ("4096x4096", "32x32"), ("33x17x5", "8x4x2"),
    ("100", "100"), ("1", "1"), ("2^28", "1024"),
])
def test_mapping_visits_every_element_once(gpu, data, block):
    d = magic_doc("grid", f"%grid --data {data} --block {block} --run --reps 5 --warmup 1")
    assert d["backend"] == "cuda"
    assert "this device" in d["limits"]["source"]
    [r] = d["runs"]
    assert r["variant"] == "map"
    c = r["check"]
    assert c["passed"] is True, c
    assert c["visited_once"] == d["elements"] and c["never"] == 0 and c["multiple"] == 0
    assert c["idle_threads"] == d["idle_threads"]
    assert r["launch"]["regs_per_thread"] > 0 and r["time_ms"]["median"] > 0


def test_picture_example_on_gpu(gpu):
    d = magic_doc("grid", "%grid --data 76x62 --block 16x16")
    assert d["grid"] == [5, 4, 1] and d["threads"] == 5120 and d["idle_threads"] == 408


def test_block_over_device_limit(gpu):
    rc, _, err = run("%grid --data 64x64 --block 32x64")
    assert rc == 1 and "1024 threads per block" in err


@pytest.mark.parametrize("kernel", ["matmul.naive", "matmul.tiled16", "matmul.tiled32",
                                    "histo.privatized", "histo.warp", "histo.fast",
                                    "reduce.divergent", "reduce.convergent", "reduce.multiblock",
                                    "reduce.fast", "reduce.final", "grid.map"])
def test_occupancy_api_matches_model(gpu, kernel):
    d = magic_doc("occupancy", f"%occupancy --kernel {kernel} --threads 64,128,256,512,1024")
    assert len(d["runs"]) == 5
    for r in d["runs"]:
        assert r["backend"] == "cuda" and r["regs"] > 0
        assert r["api_blocks_per_sm"] >= 1
        assert r["model_agrees"] is True, r


def test_lecture_model_on_gpu(gpu):
    d = magic_doc("occupancy", "%occupancy --sms 16 --regs-sm 32K --regs 48 --threads 100 --grid 4x5x3")
    r = d["runs"][0]
    assert r["grid"]["spread"] == "12 SMs x 4 + 4 SMs x 3" and r["last_warp_idle_pct"] == 87.5


@pytest.mark.parametrize("kernel, threads", [("matmul.tiled32", 1024), ("matmul.tiled16", 256),
                                             ("reduce.fast", 256)])
def test_occupancy_kernel_defaults_to_its_launch(gpu, kernel, threads):
    """Without --threads, a kernel of ours is asked about the block our magics launch it with."""
    d = magic_doc("occupancy", f"%occupancy --kernel {kernel}")
    (run,) = d["runs"]
    assert run["threads"] == threads and run["model_agrees"] is True, run
