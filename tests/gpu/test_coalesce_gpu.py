"""%coalesce on a CUDA device: every stride (powers of two and odd ones) at odd sizes and several
block sizes, the row/col matrix traversal, the exact check of the copied data, and the launch.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1: then it fails loudly. Standard library and pytest only:
`python3 -m pytest --noconftest tests/gpu/test_coalesce_gpu.py` runs it on a GPU machine."""
from __future__ import annotations

from gpu_cli import assert_all_passed, gpu, magic_doc, run  # noqa: F401  (gpu is the fixture)


def test_strides_odd_sizes(gpu):
    doc = magic_doc("coalesce", "%coalesce --stride 1,2,3,4,7,8,16,32,33 --size 33,1000003,2^22 "
                    "--block 32,256,1024 --reps 2 --warmup 0")
    assert_all_passed(doc)
    assert len(doc["runs"]) == 9 * 3 * 3
    for r in doc["runs"]:
        assert r["backend"] == "cuda" and r["impl"].startswith("CUDA: coalesce_copy_")
        assert r["launch"]["regs_per_thread"] > 0 and r["gbs"] > 0


def test_layout(gpu):
    doc = magic_doc("coalesce", "%coalesce --layout row,col --rows 4097 --cols 1000 --reps 3 --warmup 1")
    assert_all_passed(doc)
    row, col = doc["runs"]
    assert row["stride"] == 1 and col["stride"] == 1000


def test_absurd_size(gpu):
    rc, _, err = run("%coalesce --size 2^40")
    assert rc == 1 and "MemoryError" in err and "of device memory" in err
