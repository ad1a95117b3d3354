"""%vecadd on a CUDA device: both ops with pageable and pinned host memory at odd sizes and every
block size, the exact check, the three phases' timings and the launch.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1: then it fails loudly. Standard library and pytest only:
`python3 -m pytest --noconftest tests/gpu/test_vecadd_gpu.py` runs it on a GPU machine."""
from __future__ import annotations

import pytest

from gpu_cli import assert_all_passed, gpu, magic_doc, run  # noqa: F401  (gpu is the fixture)


@pytest.mark.parametrize("size", [1, 1000003, 2 ** 22 + 1])
def test_ops_and_memory(gpu, size):
    doc = magic_doc("vecadd", f"%vecadd --size {size} --op add,daxpy --memory pageable,pinned --reps 3 --warmup 1")
    assert_all_passed(doc)
    assert len(doc["runs"]) == 4
    for r in doc["runs"]:
        assert r["backend"] == "cuda" and r["impl"].startswith("CUDA: ")
        assert r["launch"]["grid"][0] == (size + 255) // 256 and r["launch"]["regs_per_thread"] > 0
        assert r["check"]["wrong"]["count"] == 0 and r["check"]["tolerance"] == 0
        for p in ("h2d", "kernel", "d2h"):
            assert r[f"{p}_ms"]["median"] > 0 and r[f"{p}_gbs"] > 0
        assert 0 < r["transfer_pct"] < 100


def test_every_block(gpu):
    doc = magic_doc("vecadd", "%vecadd --size 1000003 --op add,daxpy --block 32,64,96,128,256,512,1024 "
                    "--memory pinned --reps 2 --warmup 0")
    assert_all_passed(doc)
    assert len(doc["runs"]) == 14


def test_absurd_size_names_the_device(gpu):
    rc, _, err = run("%vecadd --size 2^40")
    assert rc == 1 and "MemoryError" in err and "of device memory" in err and "largest size that fits" in err
