"""Results are deterministic given a seed: every value, bin, size, launch and check outcome of a
command is the same each time it runs, so a regraded notebook gets the same grade; timings (and
the rates and shares computed from them) are the only things that vary.

Each cell runs twice in command-line mode and the documents must be equal once the timed fields
are set aside: on the CPU backend always, and on the GPU (CUDA backend) when there is one (skipped
with the reason otherwise, or failing under CUDALAB_REQUIRE_GPU=1). Standard library and pytest."""
from __future__ import annotations

import pytest

from gpu_cli import gpu, run  # noqa: F401  (gpu is the fixture)

QUICK = "--reps 2 --warmup 0"
CELLS = [
    f"%matmul --m 65 --n 33 --k 17 --variant all {QUICK}",
    f"%matmul --size 512 --variant tiled,fast,cublas --tile 8,16 {QUICK}",
    f"%histo --size 100000 --dist uniform,text,skewed --variant all {QUICK}",
    f"%histo --text \"programming massively parallel processors\" --bin-width 4 {QUICK}",
    f"%reduce --size 1000003 --variant all --op sum,max --dtype float,int {QUICK}",
    f"%stencil --dim 2 --size 64x48 --filter gauss3,laplace8 --variant naive,tiled {QUICK}",
    f"%stencil --radius 1,8 --size 100000 --variant naive,tiled {QUICK}",
    f"%vecadd --size 4096 --op add,daxpy {QUICK}",
    f"%coalesce --size 2^20 --stride 1,4 {QUICK}",
    "%grid --data 76x62 --block 16x16 --run",
    "%occupancy --max-blocks-sm 8 --max-threads-sm 1024 --max-threads-block 512 --threads 64,256",
]
# Fields that are timings, rates and shares computed from timings, the conditions they were taken in
# (the SM clock NVML read), or a choice made from them (whether the sweep's values differ enough for
# a chart).
TIMED_KEYS = {"time_ms", "measured_bandwidth_gbs", "kernel_pct_of_bandwidth", "conditions", "sweep"}
TIMED_SUFFIXES = ("_ms", "_gbs", "gbs", "gflops")
TIMED_PREFIXES = ("pct_",)


def untimed(x):
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items()
                if k not in TIMED_KEYS and not k.endswith(TIMED_SUFFIXES) and not k.startswith(TIMED_PREFIXES)
                and k != "transfer_pct"}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def twice(cell: str, env: dict | None) -> tuple[list, list]:
    rc1, first, err1 = run(cell, env)
    rc2, second, err2 = run(cell, env)
    assert rc1 == 0 and rc2 == 0, err1 + err2
    assert first and err1 == "" and err2 == ""
    return untimed(first), untimed(second)


def differences(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} then {b!r}"]


@pytest.mark.parametrize("cell", CELLS)
def test_cpu_backend(cell):
    first, second = twice(cell, {"CUDALAB_BACKEND": "cpu"})
    assert not differences(first, second), differences(first, second)[:20]


@pytest.mark.parametrize("cell", CELLS)
def test_gpu(gpu, cell):
    first, second = twice(cell, {})
    assert not differences(first, second), differences(first, second)[:20]
