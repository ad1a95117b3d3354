"""%grid through the command line on the CPU backend: the lecture's worked example exactly, 1D/2D/3D
shapes, the index formulas, validation against CUDA's limits (named in the error), --run's CPU
analogue visiting every element once, help and completion, and the document against
tests/schemas/grid.schema.json (tests/gpu/test_grid_gpu.py covers the GPU)."""
from __future__ import annotations

import pytest

from conftest import completions, load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("grid")


def grid_doc(cell: str) -> dict:
    return magic_doc("grid", cell, SCHEMA)


def test_picture_example_exact():
    d = grid_doc("%grid --data 76x62 --block 16x16")
    assert d["grid"] == [5, 4, 1] and d["block"] == [16, 16, 1] and d["data"] == [76, 62, 1]
    assert d["blocks"] == 20 and d["threads"] == 5120 and d["elements"] == 4712
    assert d["idle_threads"] == 408 and round(d["idle_pct"], 2) == 7.97
    assert d["warps_per_block"] == 8 and d["partial_warps_per_block"] == 0 and d["warps"] == 160
    assert d["warps_with_idle"] == 36 and d["warps_all_idle"] == 5 and d["warps_divergent"] == 31
    assert d["index"]["row"] == "row = blockIdx.y * blockDim.y + threadIdx.y"
    assert d["index"]["col"] == "col = blockIdx.x * blockDim.x + threadIdx.x"
    assert d["index"]["bounds_check"] == "if (row < 62 && col < 76)"
    assert d["limits"]["max_threads_per_block"] == 1024
    assert d["limits"]["max_block"] == [1024, 1024, 64]
    assert d["limits"]["max_grid"] == [2147483647, 65535, 65535]
    assert d["limits"]["warp_size"] == 32
    # the CPU device model, the same one %device shows (warp size, threads per block)
    assert "CPU device model" in d["limits"]["source"]
    assert d["runs"] == [] and d["backend"] == "cpu"


def test_text_output():
    rc, _, out, err = run("%grid --data 76x62 --block 16x16", json_mode=False)
    assert rc == 0 and err == ""
    for s in ["5x4 = 20 blocks", "16x16 = 256 threads", "5120 for 4712 elements", "408 (7.97%)",
              "if (row < 62 && col < 76)", "CPU device model", "(the last holds 32 of 32 threads)"]:
        assert s in out, s


def test_one_dimension():
    d = grid_doc("%grid --data 1000000 --block 256")
    assert d["dims"] == 1 and d["grid"] == [3907, 1, 1]
    assert d["idle_threads"] == 3907 * 256 - 1000000
    assert d["index"]["i"] == "i = blockIdx.x * blockDim.x + threadIdx.x"
    assert d["index"]["bounds_check"] == "if (i < 1000000)"


def test_partial_warp():
    d = grid_doc("%grid --data 100 --block 100")
    assert d["warps_per_block"] == 4 and d["threads_in_last_warp"] == 4
    assert d["partial_warps_per_block"] == 1 and d["idle_threads"] == 0


def test_three_dimensions():
    d = grid_doc("%grid --data 10x10x10 --block 4x4x4")
    assert d["dims"] == 3 and d["grid"] == [3, 3, 3] and d["blocks"] == 27
    assert d["idle_threads"] == 27 * 64 - 1000
    assert d["index"]["plane"] == "plane = blockIdx.z * blockDim.z + threadIdx.z"
    assert d["index"]["bounds_check"] == "if (plane < 10 && row < 10 && col < 10)"


@pytest.mark.parametrize("cell", [
    "%grid --data 76x62 --block 16x16 --run --reps 3 --warmup 1",
    "%grid --data 1000 --block 256 --run --reps 2",
    "%grid --data 33x17x5 --block 8x4x2 --run --reps 2",
    "%grid --data 1 --block 1 --run --reps 1 --warmup 0",
    "%grid --data 100 --block 100 --run --reps 1",
])
def test_run_visits_every_element_once(cell):
    d = grid_doc(cell)
    [r] = d["runs"]
    assert r["variant"] == "map"
    c = r["check"]
    assert c["passed"] is True
    assert c["visited_once"] == d["elements"] and c["never"] == 0 and c["multiple"] == 0
    assert c["idle_threads"] == c["idle_expected"] == d["idle_threads"]
    assert r["backend"] == "cpu" and "CPU analogue" in r["impl"]
    assert r["launch"]["grid"] == d["grid"] and r["launch"]["block"] == d["block"]
    assert r["time_ms"]["reps"] == d["params"]["reps"]


def test_run_no_check():
    d = grid_doc("%grid --data 76x62 --block 16x16 --run --reps 1 --no-check")
    assert d["runs"][0]["check"]["passed"] is None and "skipped" in d["runs"][0]["check"]["method"]


def test_deterministic():
    a = grid_doc("%grid --data 76x62 --block 16x16")
    b = grid_doc("%grid --data 76x62 --block 16x16")
    assert a == {**b, "device": a["device"]}


@pytest.mark.parametrize("cell, code, needles", [
    ("%grid --data 64x64 --block 32x64", 1, ["UsageError", "2048 threads", "1024 threads per block"]),
    ("%grid --data 4096 --block 2048", 1, ["UsageError", "blockDim.x = 2048", "limit of 1024"]),
    ("%grid --data 8x8x128 --block 1x1x128", 1, ["UsageError", "blockDim.z = 128", "limit of 64"]),
    ("%grid --data 1x70000 --block 1x1", 1, ["UsageError", "dimGrid.y", "65535"]),
    ("%grid --block 16x16", 2, ["UsageError", "--data"]),
    ("%grid --data 0x5", 2, ["UsageError", "--data"]),
    ("%grid --data 1x2x3x4", 2, ["UsageError", "--data"]),
    ("%grid --data 76x62 --blok 16", 2, ["UsageError", "--block"]),
    ("%grid --data 76x62 --reps 0", 2, ["UsageError", "--reps"]),
])
def test_usage_errors(cell, code, needles):
    rc, _, out, err = run(cell)
    assert rc == code, (out, err)
    for n in needles:
        assert n in err, (n, err)


def test_absurd_run_refused_before_allocation():
    rc, _, out, err = run("%grid --data 2000000000x60000 --block 1024 --run")
    assert rc == 1 and "MemoryError" in err and "count array" in err, err


def test_help():
    rc, _, out, err = run("%help grid", json_mode=False)
    assert rc == 0, err
    for word in ["--data", "--block", "--run", "dimGrid", "bounds check", "1024 threads per block",
                 "%grid --data 76x62 --block 16x16"]:
        assert word in out, word


def test_completion(kernel):
    _, kc = kernel
    assert "--data" in completions(kc, "%grid --da")
