"""%stencil through the command line on the CPU backend: both variants in 1D and 2D, every
filter, explicit weights (as given and --normalize), sweeps, the reads-per-output model, the
check, every error path, completion and %help, and the result document against
tests/schemas/stencil.schema.json. tests/gpu/test_stencil_gpu.py covers the GPU."""
from __future__ import annotations

import pytest

from conftest import completions, load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("stencil")
QUICK = "--reps 2 --warmup 0"
FILTERS = ["box", "gauss3", "gauss5", "laplace4", "laplace8"]


def stencil_doc(cell: str) -> dict:
    return magic_doc("stencil", cell, SCHEMA)


def assert_exact(r: dict) -> None:
    c = r["check"]
    assert c["passed"] is True, r
    assert c["wrong"] == {"count": 0, "first": None} and c["checked"] == c["elements"] == r["width"] * r["height"]
    assert c["bit_exact"] == c["checked"], c        # same order, same fmaf: bit for bit
    assert c["max_abs_err"] == 0 and c["sampled"] is False


# ---------------------------------------------------------------- 1D

@pytest.mark.parametrize("size", [1, 7, 255, 257, 100003])
def test_1d_both_variants(size):
    doc = stencil_doc(f"%stencil --size {size} --radius 3 {QUICK}")
    runs = doc["runs"]
    assert [r["variant"] for r in runs] == ["naive", "tiled"]
    for r in runs:
        assert_exact(r)
        assert r["dim"] == 1 and r["size"] == size and r["radius"] == 3 and r["k"] == 7
        assert r["filter"] == "box" and r["weights"] == pytest.approx([1 / 7] * 7)
        assert r["boundary"] == "zero padding: ghost cells are 0"
        assert r["backend"] == "cpu" and r["bytes"] == 8 * size
        assert r["gbs"] == pytest.approx(8 * size / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        if r["bandwidth_gbs"]:
            assert r["pct_of_bandwidth"] == pytest.approx(100 * r["gbs"] / r["bandwidth_gbs"], rel=1e-9)
    naive, tiled = runs
    assert naive["model"]["global_reads_per_output"] == 7
    assert tiled["model"]["global_reads_per_output"] == pytest.approx((256 + 6) / 256)
    assert tiled["model"]["smem_per_block"] == (256 + 6) * 4 == tiled["launch"]["smem_per_block"]
    assert naive["model"]["smem_per_block"] == 0
    assert tiled["launch"]["block"] == [256, 1, 1]
    assert tiled["launch"]["grid"] == [(size + 255) // 256, 1, 1]


def test_1d_sweep_radius_block():
    doc = stencil_doc(f"%stencil --size 5000 --radius 1,32,64 --block 64,128 --variant tiled {QUICK}")
    assert doc["sweep"]["varying"] == ["radius", "block"]
    runs = doc["runs"]
    assert [(r["radius"], r["block"]) for r in runs] == [(1, 64), (1, 128), (32, 64), (32, 128), (64, 64), (64, 128)]
    for r in runs:
        assert_exact(r)
        assert r["model"]["global_reads_per_output"] == pytest.approx((r["block"] + 2 * r["radius"]) / r["block"])
        assert r["model"]["naive_reads_per_output"] == 2 * r["radius"] + 1


def test_1d_explicit_weights():
    doc = stencil_doc(f"%stencil --size 1000 --weights 1,2,3,2,1 {QUICK}")
    for r in doc["runs"]:
        assert_exact(r)
        assert r["radius"] == 2 and r["filter"] == "custom" and r["normalized"] is False
        assert r["weights"] == [1, 2, 3, 2, 1]
    doc = stencil_doc(f"%stencil --size 1000 --weights 1,2,3,2,1 --normalize {QUICK}")
    assert doc["runs"][0]["weights"] == pytest.approx([1 / 9, 2 / 9, 3 / 9, 2 / 9, 1 / 9])
    assert doc["runs"][0]["normalized"] is True


def test_deterministic_and_seeded():
    cell = "%stencil --size 2000 --radius 5 --reps 1 --warmup 0"
    a, b = stencil_doc(cell), stencil_doc(cell)
    strip = lambda d: [{k: v for k, v in r.items() if k not in ("time_ms", "gbs", "pct_of_bandwidth", "bandwidth_gbs")}
                       for r in d["runs"]]
    assert strip(a) == strip(b)
    assert stencil_doc(cell + " --seed 9")["params"]["seed"] == 9


def test_no_check():
    doc = stencil_doc(f"%stencil --size 1000 --no-check {QUICK}")
    assert all(r["check"] == {"passed": None, "method": "skipped (--no-check)"} for r in doc["runs"])


def test_sort_and_table():
    rc, _, out, err = run(f"%stencil --size 3000 --radius 1,8 --sort {QUICK}", json_mode=False)
    assert rc == 0 and err == ""
    for word in ["naive", "tiled", "reads/output", "smem B", "% of copy BW", "ok"]:
        assert word in out, word


# ---------------------------------------------------------------- fast

FAST_VX, FAST_ROWS = 4, 4       # stencil.h: a fast thread's outputs along x, and rows in 2D


@pytest.mark.parametrize("size,radius", [(1, 1), (7, 3), (1021, 8), (100003, 17), (4099, 40)])
def test_1d_fast(size, radius):
    """fast runs on the CPU backend too, checked bit for bit as the others; its blocks hold a
    thread's 4 outputs (ceil(n / 4B) of them) and the model counts a thread's window, (4 + 2R) / 4."""
    doc = stencil_doc(f"%stencil --size {size} --radius {radius} --variant naive,tiled,fast {QUICK}")
    assert [r["variant"] for r in doc["runs"]] == ["naive", "tiled", "fast"]
    fast = doc["runs"][2]
    for r in doc["runs"]:
        assert_exact(r)
    assert fast["model"]["global_reads_per_output"] == pytest.approx((FAST_VX + 2 * radius) / FAST_VX)
    assert fast["model"]["smem_per_block"] == 0 == fast["launch"]["smem_per_block"]
    assert fast["launch"]["block"] == [256, 1, 1]
    assert fast["launch"]["grid"] == [-(-size // (FAST_VX * 256)), 1, 1]


@pytest.mark.parametrize("size,block", [("67x45", "16"), ("1x1", "8"), ("130x37", "32x8")])
def test_2d_fast(size, block):
    """fast in 2D, every lecture filter and a 15 x 15 one, on sizes no block divides: a thread's
    4 x 4 outputs make the blocks (4 BX) x (4 BY) outputs."""
    w, h = map(int, size.split("x"))
    custom = ",".join(str((i * 7) % 11 - 5) for i in range(225))
    for spec in ("--filter box,gauss3,gauss5,laplace4,laplace8", f"--weights {custom}"):
        doc = stencil_doc(f"%stencil --dim 2 --size {size} {spec} --block {block} --variant fast {QUICK}")
        for r in doc["runs"]:
            assert_exact(r)
            bx, by, _ = r["block"]
            k = r["k"]
            assert r["launch"]["grid"] == [-(-w // (FAST_VX * bx)), -(-h // (FAST_ROWS * by)), 1]
            assert r["model"]["global_reads_per_output"] == pytest.approx(
                (FAST_VX + k - 1) * (FAST_ROWS + k - 1) / (FAST_VX * FAST_ROWS))


def test_fast_named_not_default():
    """The lesson's pair runs by default; fast runs when named, and with all."""
    assert [r["variant"] for r in stencil_doc(f"%stencil --size 100 {QUICK}")["runs"]] == ["naive", "tiled"]
    assert [r["variant"] for r in stencil_doc(f"%stencil --size 100 --variant all {QUICK}")["runs"]] == \
        ["naive", "tiled", "fast"]


# ---------------------------------------------------------------- 2D

@pytest.mark.parametrize("flt,k,reads", [("box", 3, 9), ("gauss3", 3, 9), ("gauss5", 5, 25),
                                        ("laplace4", 3, 9), ("laplace8", 3, 9)])
def test_2d_filters(flt, k, reads):
    doc = stencil_doc(f"%stencil --dim 2 --size 67x45 --filter {flt} {QUICK}")
    for r in doc["runs"]:
        assert_exact(r)
        assert r["size"] == "67x45" and r["width"] == 67 and r["height"] == 45
        assert r["filter"] == flt and r["k"] == k and r["radius"] == (k - 1) // 2
        assert len(r["weights"]) == k * k and r["normalized"] is True
        assert r["launch"]["block"] == [16, 16, 1] and r["launch"]["grid"] == [5, 3, 1]
    naive, tiled = doc["runs"]
    assert naive["model"]["global_reads_per_output"] == reads
    assert tiled["model"]["global_reads_per_output"] == pytest.approx((16 + k - 1) ** 2 / 256)
    assert tiled["model"]["smem_per_block"] == (16 + k - 1) ** 2 * 4


def test_2d_lecture_weights():
    doc = stencil_doc(f"%stencil --dim 2 --size 40x40 --filter gauss3,gauss5,laplace4,laplace8,box --variant naive {QUICK}")
    w = {r["filter"]: r["weights"] for r in doc["runs"]}
    assert w["gauss3"] == pytest.approx([x / 16 for x in [1, 2, 1, 2, 4, 2, 1, 2, 1]])
    b = [1, 4, 6, 4, 1]
    assert w["gauss5"] == pytest.approx([x * y / 256 for x in b for y in b])
    assert w["laplace4"] == [0, 1, 0, 1, -4, 1, 0, 1, 0]
    assert w["laplace8"] == [1, 1, 1, 1, -8, 1, 1, 1, 1]
    assert w["box"] == pytest.approx([1 / 9] * 9)


def test_2d_explicit_weights_and_tiles():
    doc = stencil_doc(f"%stencil --dim 2 --size 50 --weights 1,2,1,2,4,2,1,2,1 --block 4,8,32 {QUICK}")
    assert len(doc["runs"]) == 6
    for r in doc["runs"]:
        assert_exact(r)
        assert r["size"] == "50x50" and r["filter"] == "custom" and r["normalized"] is False
        assert r["weights"] == [1, 2, 1, 2, 4, 2, 1, 2, 1]
        T = r["block"][0]
        assert r["block"] == [T, T, 1] == r["launch"]["block"]     # --block T in 2D: a T x T block
        if r["variant"] == "tiled":
            assert r["model"]["global_reads_per_output"] == pytest.approx((T + 2) ** 2 / T ** 2)
    doc = stencil_doc(f"%stencil --dim 2 --size 20x30 --weights '1 2 1 2 4 2 1 2 1' --normalize {QUICK}")
    assert doc["runs"][0]["weights"] == pytest.approx([x / 16 for x in [1, 2, 1, 2, 4, 2, 1, 2, 1]])


def test_2d_rectangular_blocks():
    """--block is dimensions in 2D too: a 32x8 block covers 32 columns and 8 rows, and the tiled
    variant loads a (32+2r) x (8+2r) tile."""
    doc = stencil_doc(f"%stencil --dim 2 --size 67x45 --filter gauss5 --block 32x8,8x32 {QUICK}")
    assert doc["sweep"]["varying"] == ["block", "variant"]
    for r in doc["runs"]:
        assert_exact(r)
        bx, by, _ = r["block"]
        assert r["launch"]["block"] == [bx, by, 1] and r["launch"]["grid"] == [-(-67 // bx), -(-45 // by), 1]
        if r["variant"] == "tiled":
            assert r["model"]["smem_per_block"] == (bx + 4) * (by + 4) * 4
            assert r["model"]["global_reads_per_output"] == pytest.approx((bx + 4) * (by + 4) / (bx * by))
    assert {tuple(r["block"]) for r in doc["runs"]} == {(32, 8, 1), (8, 32, 1)}


def test_2d_size_list():
    doc = stencil_doc(f"%stencil --dim 2 --size 10x20,33 --variant tiled {QUICK}")
    assert [r["size"] for r in doc["runs"]] == ["10x20", "33x33"]
    assert doc["params"]["size"] == ["10x20", "33x33"]


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("cell,code,needles", [
    ("%stencil --radius 64 --block 32", 1, ["--radius 64 needs --block >= 64", "halo must fit"]),
    ("%stencil --block 48", 1, ["multiple of 32"]),
    ("%stencil --block 2048", 2, ["--block"]),
    ("%stencil --radius 0", 2, ["--radius"]),
    ("%stencil --radius 2000", 2, ["--radius"]),
    ("%stencil --dim 3", 2, ["--dim"]),
    ("%stencil --dim 2 --block 64", 1, ["4..32"]),
    ("%stencil --dim 2 --block 64x4", 1, ["4..32"]),
    ("%stencil --dim 2 --filter gauss5 --block 32x1", 1, ["4..32"]),
    ("%stencil --dim 2 --block 32x4 --weights " + ",".join(["1"] * 121), 1, ["halo 5", "--block 32x4"]),
    ("%stencil --block 32x2", 1, ["our 1D variants take a 1D --block B"]),
    ("%stencil --dim 2 --block 8x8x2", 1, ["our 2D variants take a 2D --block BXxBY"]),
    ("%stencil --dim 2 --weights 1,2,3,4", 1, ["odd side"]),
    ("%stencil --dim 2 --weights " + ",".join(["1"] * 289), 1, ["larger than 15x15"]),
    ("%stencil --dim 2 --weights 1,2,oops", 1, ["'oops' is not a number"]),
    ("%stencil --weights 1,2", 1, ["odd count"]),
    ("%stencil --weights 1,2,1 --radius 3", 1, ["radius-1 stencil"]),
    ("%stencil --filter box", 1, ["--filter is for --dim 2"]),
    ("%stencil --dim 2 --radius 2", 1, ["--radius is for --dim 1"]),
    ("%stencil --dim 2 --filter box --weights 1", 1, ["not both"]),
    ("%stencil --dim 2 --weights 0,1,0,1,-4,1,0,1,0 --normalize", 1, ["sum to 0"]),
    ("%stencil --normalize", 1, ["--normalize applies to --weights"]),
    ("%stencil --size 4x4", 1, ["--dim 2"]),
    ("%stencil --dim 2 --size 4x4x4", 1, ["3D is not supported"]),
    ("%stencil --dim 2 --size 100x2000000 --block 4", 1, ["gridDim.y <= 65535"]),
    ("%stencil --variant tiledd", 2, ["did you mean 'tiled'"]),
    ("%stencil --dim 2 --filter gaus3", 2, ["did you mean 'gauss3'"]),
    ("%stencil --size 0", 2, ["--size"]),
    ("%stencil --size 2^40", 1, ["MemoryError", "needs 16.0 TiB of host memory", "largest size that fits"]),
    ("%stencil --dim 2 --size 1000000x1000000", 1, ["MemoryError", "largest square that fits"]),
])
def test_usage_errors(cell, code, needles):
    rc, _, _, err = run(cell)
    assert rc == code, err
    for n in needles:
        assert n in err, (n, err)


def test_absurd_size_refused_quickly():
    import time
    t0 = time.monotonic()
    rc, _, _, err = run("%stencil --size 2^45")
    assert rc == 1 and "MemoryError" in err
    assert time.monotonic() - t0 < 10


def test_next_cell_works_after_error():
    rc, docs, _, err = run(f"%stencil --block 48\n%stencil --size 100 {QUICK}")
    assert rc == 1
    rc, docs, _, err = run(f"%stencil --size 100 {QUICK}")
    assert rc == 0 and docs


# ---------------------------------------------------------------- help, completion

def test_help_teaches():
    rc, _, out, err = run("%help stencil", json_mode=False)
    assert rc == 0, err
    for word in ["ghost cells are 0", "zero padding", "halo", "__syncthreads", "__constant__", "(T+k-1)²",
                 "2R+1", "gauss5", "laplace8", "not normalised", "--normalize", "bit-exact",
                 "%stencil --dim 2 --filter box,gauss3,gauss5,laplace4,laplace8 --size 4096x4096"]:
        assert word in out, word


def test_completion(kernel):
    _, kc = kernel
    assert "--filter" in completions(kc, "%stencil --fil")
    assert any("stencil" in m for m in completions(kc, "%sten"))
