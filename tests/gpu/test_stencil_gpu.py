"""%stencil on a CUDA device: both variants in 1D (odd sizes, radii up to the block, every block)
and 2D (every lecture filter, explicit weights, odd image sizes, every tile), each checked bit for
bit against the host reference, the launch facts (registers, shared memory), and the CPU analogues
agreeing with the kernels they mimic.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1: then it fails loudly. Standard library and pytest only:
`python3 -m pytest --noconftest tests/gpu/test_stencil_gpu.py`."""
from __future__ import annotations

import json

import pytest

from gpu_cli import gpu, magic_doc, run  # noqa: F401  (gpu is the fixture)

QUICK = "--reps 3 --warmup 1"


def stencil_doc(cell: str, env: dict | None = None) -> dict:
    return magic_doc("stencil", cell, env)


def assert_exact(doc: dict) -> None:
    bad = [r for r in doc["runs"] if r["check"]["passed"] is not True
           or (not r["check"]["sampled"] and r["check"]["bit_exact"] != r["check"]["checked"])]
    assert not bad, json.dumps(bad, indent=1)[:4000]


@pytest.mark.parametrize("size", [1, 33, 1000003, 2 ** 24 + 5])
def test_1d_radii_blocks(gpu, size):
    doc = stencil_doc(f"%stencil --size {size} --radius 1,3,32,128 --block 128,1024 {QUICK}")
    assert_exact(doc)
    assert len(doc["runs"]) == 4 * 2 * 2
    for r in doc["runs"]:
        assert r["backend"] == "cuda" and r["impl"].startswith("CUDA: ")
        assert r["launch"]["regs_per_thread"] > 0 and r["time_ms"]["median"] > 0
        if r["variant"] == "tiled":
            assert r["launch"]["smem_per_block"] == (r["block"] + 2 * r["radius"]) * 4


def test_1d_large_radius_and_weights(gpu):
    assert_exact(stencil_doc(f"%stencil --size 100003 --radius 1024 --block 1024 {QUICK}"))
    assert_exact(stencil_doc(f"%stencil --size 100003 --weights 0.5,-1,2,-1,0.5 --block 32 {QUICK}"))


@pytest.mark.parametrize("size", ["1x1", "67x45", "1920x1080", "4096x4096"])
def test_2d_filters_tiles(gpu, size):
    doc = stencil_doc(f"%stencil --dim 2 --size {size} --filter box,gauss3,gauss5,laplace4,laplace8 "
                      f"--block 8,16,32,32x8 {QUICK}")
    assert_exact(doc)
    assert len(doc["runs"]) == 5 * 4 * 2
    for r in doc["runs"]:
        bx, by, _ = r["block"]
        assert r["launch"]["block"] == [bx, by, 1] and r["launch"]["grid"][:2] == [-(-r["width"] // bx),
                                                                                   -(-r["height"] // by)]
        if r["variant"] == "tiled":
            k = r["k"]
            assert r["launch"]["smem_per_block"] == (bx + k - 1) * (by + k - 1) * 4


def test_2d_custom_15x15(gpu):
    w = ",".join(str((i * 7) % 11 - 5) for i in range(225))
    assert_exact(stencil_doc(f"%stencil --dim 2 --size 999x517 --weights {w} --block 8,32 {QUICK}"))


@pytest.mark.parametrize("size", [1, 33, 1000003, 2 ** 24 + 5])
def test_1d_fast(gpu, size):
    """fast: the unrolled radii (1..16, window in float4s) and the sliding loop beyond (17, 100),
    on sizes that end inside a thread's 4 outputs; bit for bit."""
    doc = stencil_doc(f"%stencil --size {size} --radius 1,3,8,16,17,100 --block 128,1024 --variant fast {QUICK}")
    assert_exact(doc)
    for r in doc["runs"]:
        kernel = f"stencil1d_fast<{r['radius']}>" if r["radius"] <= 16 else "stencil1d_fast_any"
        assert kernel in r["impl"] and r["launch"]["grid"][0] == -(-size // (4 * r["block"]))


@pytest.mark.parametrize("size", ["1x1", "67x45", "1922x1081", "4096x4096"])
def test_2d_fast(gpu, size):
    """fast in 2D: every lecture filter, a 13 x 13 one (r = 6: a window with 8-byte loads at both
    edges and 16-byte ones between, as gauss5's) and a 15 x 15 one, widths not a multiple of 4 (no
    16-byte loads: the rows are not aligned) and heights not a multiple of 4 rows."""
    def custom(k: int) -> str:
        return ",".join(str((i * 7) % 11 - 5) for i in range(k * k))
    for spec in ("--filter box,gauss3,gauss5,laplace4,laplace8", f"--weights {custom(13)}", f"--weights {custom(15)}"):
        doc = stencil_doc(f"%stencil --dim 2 --size {size} {spec} --block 8,16,32x8 --variant fast {QUICK}")
        assert_exact(doc)
        for r in doc["runs"]:
            threads = r["block"][0] * r["block"][1]
            assert f"stencil2d_fast<{r['radius']}, {256 if threads <= 256 else 1024}>" in r["impl"]


def test_cpu_analogue_agrees(gpu):
    cell = "%stencil --dim 2 --size 300x200 --filter gauss5 --reps 1 --warmup 0"
    g = stencil_doc(cell)
    c = stencil_doc(cell, {"CUDALAB_BACKEND": "cpu"})
    assert [r["check"]["bit_exact"] for r in g["runs"]] == [r["check"]["bit_exact"] for r in c["runs"]] == [60000] * 2


def test_memory_refused(gpu):
    rc, _, err = run("%stencil --size 2^40")
    assert rc == 1 and "MemoryError" in err and "device memory" in err and "largest size that fits" in err
