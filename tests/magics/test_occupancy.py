"""%occupancy through the command line on the CPU backend: every worked number of the lecture
exactly (the model), the limiter named, the register allocation granularity, grids spread over the
SMs, sweeps with a chart, --kernel refused with a reason on the CPU, every error path, help and
completion, and the document against tests/schemas/occupancy.schema.json."""
from __future__ import annotations

import pytest

from conftest import completions, load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("occupancy")
LECTURE = "--max-blocks-sm 8 --max-threads-sm 1024 --max-threads-block 512"
REGS = "--sms 16 --regs-sm 32K --regs 48 --threads 100 --grid 4x5x3"


def occ_runs(cell: str) -> list[dict]:
    return magic_doc("occupancy", cell, SCHEMA)["runs"]


def test_lecture_8x8_blocks():
    [r] = occ_runs(f"%occupancy {LECTURE} --block 8x8")
    assert r["threads"] == 64 and r["block"] == [8, 8]
    assert r["blocks_per_sm"] == 8 and r["threads_per_sm"] == 512 and r["warps_per_sm"] == 16
    assert r["limiter"] == "blocks per SM"
    assert r["limits"] == {"threads": 16, "blocks": 8, "registers": None, "shared_memory": None}
    assert r["occupancy_pct"] == 50.0 and r["backend"] == "model"


def test_lecture_16x16_blocks():
    [r] = occ_runs(f"%occupancy {LECTURE} --block 16x16")
    assert r["blocks_per_sm"] == 4 and r["threads_per_sm"] == 1024
    assert r["limiter"] == "threads per SM" and r["occupancy_pct"] == 100.0


def test_lecture_32x32_not_allowed():
    rc, _, out, err = run(f"%occupancy {LECTURE} --block 32x32")
    assert rc == 1
    assert "UsageError" in err and "1024 threads per block exceed the limit of 512" in err
    assert "--max-threads-block" in err


def test_three_blocks_of_256_are_24_warps():
    [r] = occ_runs("%occupancy --threads 256 --grid 3")
    assert r["warps_per_block"] == 8 and r["grid"]["warps"] == 24 and r["grid"]["blocks"] == 3


def test_registers_exercise():
    [r] = occ_runs(f"%occupancy {REGS}")
    g = r["grid"]
    assert g["blocks"] == 60 and g["waves"] == 1
    assert (g["sms_more"], g["more"], g["sms_less"], g["less"]) == (12, 4, 4, 3)
    assert g["spread"] == "12 SMs x 4 + 4 SMs x 3"
    assert r["warps_per_block"] == 4 and r["threads_in_last_warp"] == 4
    assert r["last_warp_idle_pct"] == 87.5
    assert r["regs_per_block"] == 6144 and r["limits"]["registers"] == 5
    assert r["limiter"] == "registers per SM"
    assert g["idle_lanes"] == 60 * 28
    assert r["device_model"]["sms"] == 16 and r["device_model"]["regs_sm"] == 32768


def test_registers_exercise_lecture_product():
    [r] = occ_runs(f"%occupancy {REGS} --reg-alloc thread")
    assert r["regs_per_block"] == 4800 and r["limits"]["registers"] == 6      # 32768 / 4800
    assert r["grid"]["spread"] == "12 SMs x 4 + 4 SMs x 3"


def test_register_granularity():
    [r] = occ_runs("%occupancy --threads 256 --regs 33")
    assert r["regs_per_block"] == 8 * 1280                  # 33 x 32 = 1056 -> 1280 per warp
    assert r["limits"]["registers"] == 4 * ((65536 // 4) // 1280) // 8
    [r] = occ_runs("%occupancy --threads 64 --regs 48")     # 4 x floor(16384 / 1536) = 40 warps, not 42
    assert r["limits"]["registers"] == 20
    [r] = occ_runs("%occupancy --threads 32 --smem 100 --smem-reserved 1K")
    assert r["limits"]["shared_memory"] == (228 * 1024) // 1152      # rounded up to 128 bytes


def test_shared_memory_limit_and_reserve():
    [r] = occ_runs("%occupancy --threads 128 --smem 48K --smem-reserved 1K")
    assert r["limits"]["shared_memory"] == (228 * 1024) // (49 * 1024)
    assert r["limiter"] == "shared memory per SM"


def test_waves():
    [r] = occ_runs("%occupancy --sms 4 --max-blocks-sm 2 --threads 64 --grid 19")
    g = r["grid"]
    assert (g["waves"], g["full_waves"], g["last_wave_blocks"]) == (3, 2, 3)
    assert "last of 3 waves" in g["spread"]


def test_sweep_table_and_chart():
    rc, docs, out, err = run("%occupancy --threads 32,64,128,256,512,1024 --regs 64 --smem 8K")
    assert rc == 0 and err == ""
    doc = next(d for d in docs if d and d.get("magic") == "occupancy")
    assert [r["threads"] for r in doc["runs"]] == [32, 64, 128, 256, 512, 1024]
    assert doc["sweep"]["varying"] == ["threads"]
    assert [r["blocks_per_sm"] for r in doc["runs"]] == [28, 16, 8, 4, 2, 1]
    rc, _, text, err = run("%occupancy --threads 32,64,128,256,512,1024 --regs 64 --smem 8K", json_mode=False)
    assert "occupancy % by threads" in text and "limited by" in text
    # the title names the SM that was modelled, not the host CPU the CPU backend runs on
    assert text.startswith("Occupancy of an sm_90 (H100) SM, one per logical CPU in the CPU device model\n"), text[:200]
    rc, _, text, _ = run("%occupancy --max-threads-sm 1024 --threads 256", json_mode=False)
    assert text.startswith("Occupancy of an SM given by flags"), text[:200]


def test_kernel_needs_cuda_on_cpu():
    rc, _, out, err = run("%occupancy --kernel reduce.fast --threads 256")
    assert rc == 1 and "needs the CUDA backend" in err and "--regs" in err


@pytest.mark.parametrize("cell, code, needles", [
    ("%occupancy --threads 256 --block 16x16", 1, ["UsageError", "either --threads or --block"]),
    ("%occupancy --threads 2048", 1, ["UsageError", "limit of 1024 threads per block"]),
    ("%occupancy --threads 1024 --regs 255", 1, ["UsageError", "registers"]),
    ("%occupancy --threads 64 --regs 300", 1, ["UsageError", "per thread"]),
    ("%occupancy --threads 64 --smem 300K", 1, ["UsageError", "shared memory"]),
    ("%occupancy --kernel reduce.fats", 2, ["UsageError", "did you mean 'reduce.fast'"]),
    ("%occupancy --threads 0", 2, ["UsageError", "--threads"]),
    ("%occupancy --reg-alloc block", 2, ["UsageError", "warp, thread"]),
    ("%occupancy --thread 64", 2, ["UsageError", "--threads"]),
])
def test_usage_errors(cell, code, needles):
    rc, _, out, err = run(cell)
    assert rc == code, (out, err)
    for n in needles:
        assert n in err, (n, err)


def test_help():
    rc, _, out, err = run("%help occupancy", json_mode=False)
    assert rc == 0, err
    for word in ["--max-threads-sm", "--regs-sm", "--kernel", "256", "87.5%", "12 SMs", "limiter",
                 "cudaOccupancyMaxActiveBlocksPerMultiprocessor"]:
        assert word in out, word


def test_completion(kernel):
    _, kc = kernel
    matches = completions(kc, "%occupancy --kernel reduce.f")
    assert any("reduce.fast" in m for m in matches) and any("reduce.final" in m for m in matches), matches
