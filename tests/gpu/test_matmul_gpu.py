"""%matmul on a CUDA device: every variant correct at odd sizes, the check methods, the launch
and traffic model of each kernel, TF32 labelled, refusals before allocation; the FP32 ladder, the
corner-turning pair and the WMMA kernels at awkward shapes and at 1024³, each checked with the
tolerance of its input format; Hopper's wgmma-tf32, wgmma-fp16 and wgmma-bf16 correct at awkward
shapes on a compute capability 9.0 GPU and refused clearly on any other; cublas-fp16 and cublas-bf16
(GemmEx, FP32 accumulation) labelled and checked as their format.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1: then they fail loudly. Needs only the CLI (no Jupyter)."""
from __future__ import annotations

import pytest

from gpu_cli import gpu, magic_doc, run  # noqa: F401  (gpu is the fixture)

pytestmark = pytest.mark.usefixtures("gpu")     # every test: skipped, or failing, without a GPU

GPU_VARIANTS = ["naive", "tiled", "fast", "fast64", "cublas", "cublas-tf32"]
OWN_KERNELS = ["naive", "tiled", "fast", "fast64"]
# CL_MATMUL_SM90A: in `all` on a compute capability 9.0 GPU only (input format, tolerance)
WGMMA = {"wgmma-tf32": ("tf32", 5e-3), "wgmma-fp16": ("fp16", 5e-3), "wgmma-bf16": ("bf16", 4e-2)}
HOPPER_ONLY = list(WGMMA)
# the FP32 ladder, the corner-turning pair and the WMMA tensor-core variants (input format, tolerance)
LADDER = ["reg1d", "reg2d", "vec4", "warptile", "swizzle", "async", "async64", "wide"]
CORNER = ["naive-bt", "tiled-bt"]
TENSOR_CORES = {"wmma-tf32": ("tf32", 5e-3), "wmma-fp16": ("fp16", 5e-3), "wmma-bf16": ("bf16", 4e-2)}
# cuBLAS at half precision: the references of the wgmma rungs (GemmEx on converted inputs)
CUBLAS_HALF = {"cublas-fp16": ("fp16", 5e-3), "cublas-bf16": ("bf16", 4e-2)}
NEW_KERNELS = CORNER + LADDER + list(TENSOR_CORES)


def matmul(cell: str) -> dict:
    return magic_doc("matmul", cell)


def hopper(gpu: dict) -> bool:
    return gpu["devices"][0].get("cc") == "9.0"


@pytest.mark.parametrize("dims", ["--size 127", "--m 1000 --n 300 --k 77", "--m 129 --n 65 --k 3",
                                  "--size 1"])
def test_every_variant_correct_at_odd_sizes(dims: str) -> None:
    doc = matmul(f"%matmul {dims} --variant {','.join(GPU_VARIANTS)} --tile 2,4,8,16,32 --reps 2 "
                 f"--warmup 1")
    assert doc["backend"] == "cuda"
    names = [(r["variant"], r["tile"]) for r in doc["runs"]]
    assert names == [("naive", None)] + [("tiled", t) for t in (2, 4, 8, 16, 32)] + \
        [(v, None) for v in GPU_VARIANTS[2:]]
    for r in doc["runs"]:
        assert r["backend"] == "cuda"
        assert r["check"]["passed"] is True, r
        assert r["check"]["method"] == "full fp64 product"
        assert r["time_ms"]["median"] > 0 and r["gflops"] > 0


def test_freivalds_beyond_512_cubed_and_model(gpu: dict) -> None:
    doc = matmul("%matmul --size 640 --variant all --tile 32 --reps 3")
    runs = {r["variant"]: r for r in doc["runs"]}
    assert set(runs) == {"cpu", *GPU_VARIANTS, *NEW_KERNELS, *CUBLAS_HALF, *(HOPPER_ONLY if hopper(gpu) else [])}
    assert runs["cpu"]["backend"] == "cpu" and runs["cpu"]["precision"] == "fp64"
    for v in GPU_VARIANTS:
        assert runs[v]["check"] == {**runs[v]["check"], "passed": True, "method": "freivalds x3"}
    assert runs["naive"]["model"]["cgma"] == pytest.approx(1.0)
    assert runs["tiled"]["model"]["cgma"] == pytest.approx(32.0)
    assert runs["fast"]["model"]["cgma"] == pytest.approx(128.0)
    assert runs["fast64"]["model"]["cgma"] == pytest.approx(64.0)
    assert runs["cublas"]["model"]["global_loads"] is None
    for v in OWN_KERNELS:
        launch = runs[v]["launch"]
        assert launch["regs_per_thread"] > 0, launch
    assert runs["naive"]["launch"]["block"] == [16, 16, 1]
    assert runs["naive"]["launch"]["grid"] == [40, 40, 1]
    assert runs["tiled"]["launch"]["smem_per_block"] == 2 * 32 * 32 * 4
    assert runs["fast"]["launch"]["block"] == [256, 1, 1]
    assert runs["fast"]["launch"]["grid"] == [5, 5, 1]
    # plain FP32 cannot beat the FP32 peak; cuBLAS FP32 is the fastest FP32 here or close to it
    assert 0 < runs["cublas"]["pct_of_peak"] < 100
    assert runs["cublas-tf32"]["precision"] == "tf32"
    assert runs["cublas-tf32"]["check"]["tolerance"] == pytest.approx(5e-3)
    assert runs["cublas"]["check"]["tolerance"] == pytest.approx(1e-6)


def expected(variant: str) -> tuple[str, float]:
    """(precision, tolerance of its full check) of a variant's run."""
    return {**TENSOR_CORES, **CUBLAS_HALF, **WGMMA}.get(variant, ("fp32", 1e-5))


@pytest.mark.parametrize("dims", ["--m 1000 --n 1003 --k 997", "--size 1", "--m 513 --n 257 --k 1025",
                                  "--m 130 --n 67 --k 3", "--m 64 --n 128 --k 64"])
def test_new_kernels_correct_at_awkward_shapes(dims: str) -> None:
    """Every rung of the ladder, the corner-turning pair and the WMMA kernels at shapes no tile divides
    (k and n odd: the scalar paths where rows are not 16-byte aligned), one that all tiles divide, and
    1×1×1; tiled-bt at every TILE_WIDTH."""
    doc = matmul(f"%matmul {dims} --variant {','.join(NEW_KERNELS)} --tile 2,4,8,16,32 --reps 2 --warmup 1")
    runs = doc["runs"]
    assert [(r["variant"], r["tile"]) for r in runs] == \
        [(v, t) for v in NEW_KERNELS for t in ((2, 4, 8, 16, 32) if v == "tiled-bt" else (None,))]
    for r in runs:
        precision, tol = expected(r["variant"])
        assert r["backend"] == "cuda" and r["precision"] == precision, r
        assert r["check"]["passed"] is True, r
        if r["check"]["method"] == "full fp64 product":
            assert r["check"]["tolerance"] == pytest.approx(tol)
        assert r["time_ms"]["median"] > 0 and r["launch"]["regs_per_thread"] > 0, r


def test_new_kernels_at_1024_cubed_and_launches() -> None:
    """At 1024³ (Freivalds' check): every new kernel passes; the launches are the ones the contract
    describes (threads, grid, dynamic shared memory of the cp.async stages) within 128 registers where
    two blocks (or four of 128 threads) must fit on an SM; the tensor cores err as their format does."""
    doc = matmul(f"%matmul --size 1024 --variant {','.join(NEW_KERNELS)} --tile 16 --reps 3")
    runs = {r["variant"]: r for r in doc["runs"]}
    for v, r in runs.items():
        precision, tol = expected(v)
        assert r["check"]["passed"] is True and r["check"]["method"] == "freivalds x3", r
        assert r["precision"] == precision
        if v in TENSOR_CORES:
            assert r["check"]["tolerance"] == pytest.approx(tol) and r["check"]["max_rel_err"] > 1e-6, r
    launches = {"reg1d": (512, 16), "reg2d": (256, 8), "vec4": (256, 8), "warptile": (256, 8), "swizzle": (256, 8),
                "async": (256, 8), "async64": (128, 16), "wmma-tf32": (256, 8), "wmma-fp16": (256, 8),
                "wmma-bf16": (256, 8)}
    for v, (threads, blocks) in launches.items():
        launch = runs[v]["launch"]
        assert launch["block"] == [threads, 1, 1] and launch["grid"] == [blocks, blocks, 1], (v, launch)
    for v in ("warptile", "swizzle", "async", "async64", "wmma-tf32", "wmma-fp16", "wmma-bf16"):
        assert runs[v]["launch"]["regs_per_thread"] <= 128, runs[v]["launch"]
    assert runs["async"]["launch"]["smem_per_block"] == 4 * 16 * 256 * 4
    assert runs["async64"]["launch"]["smem_per_block"] == 4 * 16 * 128 * 4
    assert runs["tiled-bt"]["launch"]["smem_per_block"] == (16 * 16 + 16 * 17) * 4
    assert runs["async"]["model"]["cgma"] == pytest.approx(128.0)
    assert runs["async64"]["model"]["cgma"] == pytest.approx(64.0)
    # wide: 128×256 tiles (1024 divides them: the instance without bounds tests), one block per SM
    wide = runs["wide"]["launch"]
    assert wide["block"] == [256, 1, 1] and wide["grid"] == [4, 8, 1], wide
    assert wide["smem_per_block"] == 2 * 32 * (132 + 256) * 4 and wide["regs_per_thread"] <= 255, wide
    assert "no edges" in runs["wide"]["impl"]
    assert runs["wide"]["model"]["cgma"] == pytest.approx(2 * 128 * 256 / (128 + 256))


def test_results_deterministic_given_seed() -> None:
    cell = "%matmul --m 300 --n 200 --k 100 --variant fast,tiled --reps 1 --warmup 0 --seed 7"
    a, b = matmul(cell), matmul(cell)
    errs = [[r["check"]["max_rel_err"] for r in d["runs"]] for d in (a, b)]
    assert errs[0] == errs[1]
    other = matmul(cell.replace("--seed 7", "--seed 8"))
    assert [r["check"]["max_rel_err"] for r in other["runs"]] != errs[0]


def test_absurd_size_refused_before_allocation() -> None:
    rc, _, err = run("%matmul --size 2^40 --variant fast")
    assert rc == 1
    assert "MemoryError" in err and "device memory" in err and "largest square size" in err


def test_grid_too_tall_is_a_clear_error() -> None:
    rc, _, err = run("%matmul --m 300000 --n 1 --k 1 --variant tiled --tile 2 --reps 1")
    assert rc == 1
    assert "exceeds this device" in err


def test_reps_auto_until_the_median_settles_and_the_conditions_beside() -> None:
    """The default --reps auto: at least 10 reps, at most 1000, the median's 95% interval reported
    (and settled, or the table says which runs did not); a fixed --reps is taken as asked. Each run
    has its conditions: the SM clock NVML read between its reps (or "unavailable: why"), and the
    empty event pair's time subtracted from each rep."""
    doc = matmul("%matmul --size 1024 --variant tiled,cublas")
    assert doc["params"]["reps"] == "auto"
    for r in doc["runs"]:
        t, c = r["time_ms"], r["conditions"]
        assert 10 <= t["reps"] <= 1000 and t["ci95_rel"] >= 0, t
        assert t["settled"] == (t["ci95_rel"] <= 0.01), t
        assert 0 < c["event_overhead_ms"] < 0.05, c          # microseconds, not a kernel's time
        if c["clocks"] == "nvml":
            lo, hi = c["sm_clock_mhz"]["min"], c["sm_clock_mhz"]["max"]
            assert 0 < lo <= hi <= c["sm_clock_limit_mhz"] * 1.001, c
            assert c["mem_clock_mhz"] > 0 and isinstance(c["slowed"], bool), c
        else:
            assert c["clocks"].startswith("unavailable: ") and len(c["clocks"]) > 14, c
    fixed = matmul("%matmul --size 256 --variant tiled --reps 7")
    assert fixed["params"]["reps"] == 7 and fixed["runs"][0]["time_ms"]["reps"] == 7


# ---------------------------------------------------------------- cuBLAS at half precision

@pytest.mark.parametrize("dims", ["--m 1000 --n 300 --k 77", "--size 1", "--m 129 --n 65 --k 3", "--size 640"])
def test_cublas_half_precision_correct(dims: str) -> None:
    """GemmEx on FP16 and BF16 copies of A and B: odd element counts (the conversion's scalar tail),
    1×1×1, and Freivalds at 640³; labelled and checked as their format, more wrong than FP32."""
    doc = matmul(f"%matmul {dims} --variant cublas,{','.join(CUBLAS_HALF)} --reps 2 --warmup 1")
    runs = {r["variant"]: r for r in doc["runs"]}
    for v, (precision, tol) in CUBLAS_HALF.items():
        r = runs[v]
        assert r["backend"] == "cuda" and r["precision"] == precision, r
        assert r["check"]["passed"] is True, r["check"]
        assert "cublasGemmEx" in r["impl"] and r["launch"]["kernels"] == 3, r
        if r["check"]["method"] == "full fp64 product":
            assert r["check"]["tolerance"] == pytest.approx(tol)
        if r["k"] > 3:              # 10 or 7 mantissa bits instead of 23: visibly less exact
            assert r["check"]["max_rel_err"] > 10 * runs["cublas"]["check"]["max_rel_err"], r["check"]


# ---------------------------------------------------------------- wgmma (Hopper, sm_90a)

@pytest.mark.parametrize("dims", ["--size 2048", "--m 1000 --n 1003 --k 997", "--size 1", "--m 1000 --n 1002 --k 1000",
                                  "--m 513 --n 257 --k 1025", "--m 129 --n 65 --k 3",
                                  "--m 300 --n 200 --k 6", "--m 200 --n 300 --k 100",
                                  "--m 4097 --n 1 --k 33", "--m 1100 --n 2600 --k 40",
                                  "--m 3000 --n 3000 --k 70"])
def test_wgmma_correct_at_awkward_shapes(gpu: dict, dims: str) -> None:
    """Partial tiles in every direction, k below one slice, k a multiple of 4 or 8 but not of the
    slice (TMA's zeros past k), k not a multiple of 4 (A padded), n not a multiple of 4 (TF32's B
    padded) with k a multiple of 4, an odd number of row tiles (a cluster's second block outside C),
    odd n (C written element by element), more
    column tiles than one group of 8 and a last group of 3 (mmw_tile's order), more cluster tiles (144 at
    3000×3000) than clusters run at once on an H100 or H200 (the persistent walk); every input format."""
    if not hopper(gpu):
        pytest.skip(f"the wgmma rungs need a compute capability 9.0 GPU; this is {gpu['devices'][0].get('cc')}")
    doc = matmul(f"%matmul {dims} --variant {','.join(WGMMA)} --reps 2 --warmup 1")
    assert [r["variant"] for r in doc["runs"]] == list(WGMMA)
    for r in doc["runs"]:
        precision, tol = WGMMA[r["variant"]]
        assert r["backend"] == "cuda" and r["precision"] == precision, r
        assert r["check"]["passed"] is True, (r["variant"], r["check"])
        if r["check"]["method"] == "full fp64 product":
            assert r["check"]["tolerance"] == pytest.approx(tol)
        assert r["launch"]["block"] == [384, 1, 1] and r["launch"]["smem_per_block"] >= 4 * 48 * 1024
        # the staging passes are timed too: FP16 and BF16 convert A and make Bᵀ; TF32 reads A and B as
        # they are (B into registers, no transpose) and pads A where k, B where n, is not a multiple of 4
        staged = 2 if precision != "tf32" else (r["k"] % 4 != 0) + (r["n"] % 4 != 0)
        assert r["launch"]["kernels"] == 1 + staged, r
        assert ("from registers" in r["impl"]) == (precision == "tf32"), r["impl"]
        # persistent: clusters of 2 along y, at most one per cluster tile (256 × 256 of C)
        grid = r["launch"]["grid"]
        assert grid[0] == 1 and grid[2] == 1 and grid[1] % 2 == 0, grid
        assert 2 <= grid[1] <= 2 * -(-r["n"] // 256) * -(-r["m"] // 256), grid
        assert r["model"]["global_loads"] > 0


def test_wgmma_beside_cublas_at_4096(gpu: dict) -> None:
    """The issue's size: each wgmma rung and cuBLAS at its precision pass that format's check
    (bench/matmul.py compares their speed)."""
    if not hopper(gpu):
        pytest.skip(f"the wgmma rungs need a compute capability 9.0 GPU; this is {gpu['devices'][0].get('cc')}")
    doc = matmul(f"%matmul --size 4096 --variant {','.join(WGMMA)},cublas-tf32,{','.join(CUBLAS_HALF)} --reps 3")
    runs = {r["variant"]: r for r in doc["runs"]}
    for v, r in runs.items():
        precision, tol = expected(v) if v != "cublas-tf32" else ("tf32", 5e-3)
        assert r["precision"] == precision and r["check"]["passed"] is True, (v, r["check"])
        assert r["check"]["method"] == "freivalds x3" and r["check"]["tolerance"] == pytest.approx(tol)
        assert r["gflops"] > 0


@pytest.mark.parametrize("variant", list(WGMMA))
def test_wgmma_refused_clearly_off_hopper(gpu: dict, variant: str) -> None:
    """Named on another GPU: an error naming what it needs and what this is; `all` leaves it out."""
    if hopper(gpu):
        pytest.skip(f"a compute capability 9.0 GPU runs {variant}")
    rc, _, err = run(f"%matmul --size 64 --variant {variant} --reps 1")
    assert rc == 1, err
    assert "CudaError" in err and f"{variant} needs a Hopper GPU (sm_90a); this is sm_" in err, err
    doc = matmul("%matmul --size 64 --variant all --reps 1 --warmup 0")
    assert variant not in {r["variant"] for r in doc["runs"]}
