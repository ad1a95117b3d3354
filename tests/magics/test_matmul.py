"""%matmul through the command line on the CPU backend: every variant and flag, odd sizes, sweeps,
determinism, every error path, and the result document against tests/schemas/matmul.schema.json.

Runs `cudalab --run CELL --json` (one JSON document per line; exit 1 on a command error with
"ENAME: evalue" on stderr, 2 on a usage error) with CUDALAB_BACKEND=cpu, so it tests the same
thing on a laptop, in CI and on a GPU machine (tests/gpu/test_matmul_gpu.py covers the GPU)."""
from __future__ import annotations

import json
import re

import pytest

from conftest import builtin_variants, load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("matmul")
VARIANTS = builtin_variants("matmul")           # the rows of matmul.h, in order: what --variant all runs
TILED = ["tiled", "tiled-bt"]                   # the variants that honour --tile
# the FP32 ladder between tiled and cuBLAS (the rows between the corner-turning ones and the tensor
# cores), and the tensor-core variants with their input formats
LADDER = VARIANTS[VARIANTS.index("tiled-bt") + 1:VARIANTS.index("wmma-tf32")]
TENSOR_CORES = {"wmma-tf32": ("tf32", 5e-3), "wmma-fp16": ("fp16", 5e-3), "wmma-bf16": ("bf16", 4e-2)}
# Hopper's rungs, whose CPU analogues round as the GPU's inputs are rounded (input format, tolerance)
WGMMA = {"wgmma-tf32": ("tf32", 5e-3), "wgmma-fp16": ("fp16", 5e-3), "wgmma-bf16": ("bf16", 4e-2)}
TILES = [2, 4, 8, 16, 32]
QUICK = "--reps 2 --warmup 0"


def matmul_doc(cell: str) -> dict:
    return magic_doc("matmul", cell, SCHEMA)


def error(cell: str, code: int, ename: str, *fragments: str) -> str:
    rc, _, out, err = run(cell)
    assert rc == code, (rc, out, err)
    assert err.startswith(f"{ename}: "), err
    for f in fragments:
        assert f in err, err
    return err


# ---------------------------------------------------------------- results

@pytest.mark.parametrize("dims", ["--size 64", "--size 100", "--size 127", "--m 33 --n 65 --k 17",
                                  "--m 1 --n 200 --k 3", "--size 1"])
def test_every_variant_and_tile_checked(dims):
    assert VARIANTS[:5] == ["cpu", "naive", "naive-bt", "tiled", "tiled-bt"] and "cublas" in VARIANTS, VARIANTS
    doc = matmul_doc(f"%matmul {dims} --variant all --tile {','.join(map(str, TILES))} {QUICK}")
    runs = doc["runs"]
    assert [(r["variant"], r["tile"]) for r in runs] == \
        [(v, t) for v in VARIANTS for t in (TILES if v in TILED else [None])]
    for r in runs:
        assert r["backend"] == "cpu"
        assert r["check"]["passed"] is True, r
        assert r["check"]["method"] == "full fp64 product"
        precision, tol = {**TENSOR_CORES, **WGMMA}.get(r["variant"], (r["precision"], 1e-5))
        assert r["precision"] == precision
        assert r["check"]["tolerance"] == pytest.approx(tol)
        assert r["check"]["max_rel_err"] <= tol
        assert r["time_ms"]["reps"] == 2
        flops = 2.0 * r["m"] * r["n"] * r["k"]
        assert r["gflops"] == pytest.approx(flops / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        assert r["pct_of_peak"] is None or r["pct_of_peak"] == \
            pytest.approx(100 * r["gflops"] / doc["device"]["peak_fp32_gflops"], rel=1e-9)


def test_no_run_is_over_the_hosts_peak():
    """The host's peak counts its SIMD lanes and FMA (cpu/common/cpu_simd.c) as a GPU's counts its lanes,
    so no run, the system's BLAS (cublas) included, reaches 100% of it (one without SIMD read 449%)."""
    doc = matmul_doc(f"%matmul --size 256 --variant tiled,fast,cublas {QUICK}")
    assert doc["device"]["peak_fp32_gflops"] > 0
    for r in doc["runs"]:
        assert 0 < r["pct_of_peak"] < 100, r


def test_traffic_model_and_launch():
    doc = matmul_doc(f"%matmul --size 256 --variant naive,tiled,fast,fast64,cublas --tile 16 {QUICK}")
    runs = {r["variant"]: r for r in doc["runs"]}
    mnk2 = 2.0 * 256 ** 3
    assert runs["naive"]["model"]["global_loads"] == pytest.approx(mnk2)
    assert runs["naive"]["model"]["cgma"] == pytest.approx(1.0)
    assert runs["tiled"]["model"]["global_loads"] == pytest.approx(mnk2 / 16)
    assert runs["tiled"]["model"]["cgma"] == pytest.approx(16.0)
    assert runs["tiled"]["model"]["smem_per_block"] == 2 * 16 * 16 * 4
    assert runs["tiled"]["launch"]["grid"] == [16, 16, 1] and runs["tiled"]["launch"]["block"] == [16, 16, 1]
    assert runs["naive"]["launch"]["block"] == [16, 16, 1]
    assert runs["fast"]["model"]["cgma"] == pytest.approx(128.0)
    assert runs["fast64"]["model"]["cgma"] == pytest.approx(64.0)
    assert runs["fast"]["launch"]["grid"] == [2, 2, 1]
    assert runs["cublas"]["model"]["global_loads"] is None and runs["cublas"]["model"]["cgma"] is None
    assert "FP32" in runs["cublas"]["launch"]["config"]
    assert "cblas_sgemm of OpenBLAS" in runs["cublas"]["impl"] and runs["cublas"]["precision"] == "fp32"
    for r in runs.values():
        assert r["launch"]["config"]


def test_cublas_tensor_core_rows_on_cpu_are_the_labelled_blas():
    """cublas-tf32, -fp16 and -bf16 on the CPU: the FP32 BLAS, saying the CPU has no such format."""
    doc = matmul_doc(f"%matmul --size 40 --variant cublas-tf32,cublas-fp16,cublas-bf16 {QUICK}")
    runs = {r["variant"]: r for r in doc["runs"]}
    for v, missing in (("cublas-tf32", "no TF32"), ("cublas-fp16", "no FP16"), ("cublas-bf16", "no BF16")):
        r = runs[v]
        assert "cblas_sgemm" in r["impl"] and missing in r["launch"]["config"] and r["precision"] == "fp32", r
        assert r["check"]["passed"] is True


@pytest.mark.parametrize("dims", ["--size 1", "--m 100 --n 103 --k 97", "--m 129 --n 257 --k 33",
                                  "--m 70 --n 300 --k 3"])
def test_wgmma_analogues_round_to_their_format(dims):
    """The CPU analogues of Hopper's wgmma variants multiply A and B rounded to TF32, FP16 or BF16 in
    float, so each is labelled with its format, checked with its tolerance, and less exact than the
    FP32 variants."""
    doc = matmul_doc(f"%matmul {dims} --variant {','.join(WGMMA)},fast {QUICK}")
    runs = {r["variant"]: r for r in doc["runs"]}
    for v, (precision, tol) in WGMMA.items():
        r = runs[v]
        assert r["backend"] == "cpu" and r["precision"] == precision
        assert r["check"]["passed"] is True and r["check"]["tolerance"] == pytest.approx(tol), r["check"]
        assert precision in r["impl"].lower() and precision.upper() in r["launch"]["config"]
        assert r["launch"]["block"] == [384, 1, 1]
        assert r["model"]["global_loads"] > 0
        if r["k"] > 1:              # 10 or 7 mantissa bits instead of 23: visibly less exact
            assert r["check"]["max_rel_err"] > 10 * runs["fast"]["check"]["max_rel_err"], (v, r["check"])


def test_wgmma_in_help():
    rc, _, out, err = run("%help matmul", json_mode=False)
    assert rc == 0 and err == ""
    assert all(v in out for v in [*WGMMA, "cublas-fp16", "cublas-bf16"]) and "warpgroup MMA" in out


def test_ladder_traffic_model_and_launch():
    """Each rung reports its GPU kernel's launch (block tile, threads, shared memory) and the traffic
    model of its block tile: CGMA = 2·BM·BN/(BM+BN) where the tiles divide."""
    doc = matmul_doc(f"%matmul --size 256 --variant {','.join(LADDER)} {QUICK}")
    runs = {r["variant"]: r for r in doc["runs"]}
    tiles = {"reg1d": (64, 64), "fast64": (64, 64), "async64": (64, 64), "wide": (128, 256)}   # BM, BN
    threads = {"reg1d": 512, "fast64": 64, "async64": 128}
    smem = {"async": 4 * 16 * 256 * 4, "async64": 4 * 16 * 128 * 4, "swizzle": 2 * 8 * 256 * 4,
            "wide": 2 * 32 * (132 + 256) * 4}
    for v in LADDER:
        r, (bm, bn) = runs[v], tiles.get(v, (128, 128))
        assert r["precision"] == "fp32" and r["check"]["passed"] is True, r
        assert r["model"]["cgma"] == pytest.approx(2 * bm * bn / (bm + bn)), v
        assert r["launch"]["grid"] == [256 // bn, 256 // bm, 1], v
        assert r["launch"]["block"] == [threads.get(v, 256), 1, 1], v
        if v in smem:
            assert r["launch"]["smem_per_block"] == smem[v], v
        assert r["launch"]["config"], v


@pytest.mark.parametrize("variant", sorted(TENSOR_CORES))
def test_tensor_core_analogues_lose_their_formats_precision(variant):
    """The wmma analogues round A and B to the format as tiles are copied: the run says its precision,
    the check uses that format's tolerance (about 10 unit roundoffs), and the error is real: far above
    what FP32 would be allowed."""
    precision, tol = TENSOR_CORES[variant]
    doc = matmul_doc(f"%matmul --m 96 --n 80 --k 200 --variant {variant},fast {QUICK}")
    r, fp32 = doc["runs"]
    assert r["precision"] == precision and f"rounded to {precision}" in r["impl"], r
    assert r["check"]["passed"] is True and r["check"]["tolerance"] == pytest.approx(tol)
    assert r["check"]["max_rel_err"] > 2 * 1e-5, r["check"]       # FP32's tolerance would fail it
    assert fp32["check"]["max_rel_err"] < 1e-5 and fp32["check"]["tolerance"] == pytest.approx(1e-5)
    # bf16 keeps 3 bits fewer than fp16: its error is several times larger
    if variant == "wmma-bf16":
        half = matmul_doc(f"%matmul --m 96 --n 80 --k 200 --variant wmma-fp16 {QUICK}")["runs"][0]
        assert r["check"]["max_rel_err"] > 3 * half["check"]["max_rel_err"]


def test_corner_turning_variants():
    """naive-bt and tiled-bt read Bᵀ, made from the same generator: the same product and check; tiled-bt
    honours --tile, and its tile of B has a padding column."""
    doc = matmul_doc(f"%matmul --m 50 --n 70 --k 90 --variant naive-bt,tiled-bt,tiled --tile 8,16 {QUICK}")
    runs = {(r["variant"], r["tile"]): r for r in doc["runs"]}
    assert set(runs) == {("naive-bt", None), ("tiled-bt", 8), ("tiled-bt", 16), ("tiled", 8), ("tiled", 16)}
    for r in runs.values():
        assert r["check"]["passed"] is True and r["check"]["max_rel_err"] < 1e-5 and r["precision"] == "fp32"
    assert runs[("naive-bt", None)]["model"]["cgma"] == pytest.approx(1.0)
    for t in (8, 16):
        bt, tiled = runs[("tiled-bt", t)], runs[("tiled", t)]
        assert bt["model"]["global_loads"] == pytest.approx(tiled["model"]["global_loads"])
        assert bt["launch"]["smem_per_block"] == (t * t + t * (t + 1)) * 4
        assert "Bᵀ" in bt["launch"]["config"]


@pytest.mark.parametrize("blas", ["none", "/nonexistent/libblas.so"])
def test_without_a_blas_the_reference_stands_in_and_says_so(blas):
    doc = magic_doc("matmul", f"%matmul --size 70 --variant cublas {QUICK}", SCHEMA, env={"CUDALAB_BLAS": blas})
    r = doc["runs"][0]
    assert r["impl"].startswith("no BLAS library (CUDALAB_BLAS): the CPU reference product stands in"), r["impl"]
    assert r["precision"] == "fp64" and r["check"]["passed"] is True
    # the launch's words say the same: no BLAS, so no FP32 cblas_sgemm
    assert "FP32" not in r["launch"]["config"] and "no BLAS" in r["launch"]["config"], r["launch"]["config"]


def test_host_loop_claims_no_cgma():
    """The lecture's traffic model counts a GPU thread's global loads; the host loop has none."""
    doc = matmul_doc(f"%matmul --size 40 --variant cpu,naive {QUICK}")
    runs = {r["variant"]: r for r in doc["runs"]}
    assert runs["cpu"]["model"]["cgma"] is None and runs["cpu"]["model"]["global_loads"] is None
    assert runs["naive"]["model"]["cgma"] == pytest.approx(1.0)
    rc, _, text, _ = run(f"%matmul --size 40 --variant cpu {QUICK}", json_mode=False)
    row = next(line for line in text.splitlines() if line.startswith("cpu "))
    assert row.split()[-2:] == ["-", "ok"], row      # the CGMA column: nothing claimed


def test_freivalds_beyond_512_cubed():
    doc = matmul_doc("%matmul --m 600 --n 520 --k 450 --variant fast --reps 1 --warmup 0")
    c = doc["runs"][0]["check"]
    assert c["method"] == "freivalds x3" and c["passed"] is True
    assert c["tolerance"] == pytest.approx(1e-6) and len(c["worst"]) == 1


def test_m_n_k_override_size():
    doc = matmul_doc(f"%matmul --size 20 --m 7 --variant naive {QUICK}")
    r = doc["runs"][0]
    assert (r["m"], r["n"], r["k"]) == (7, 20, 20)
    doc = matmul_doc(f"%matmul --size 20 --m 7 --n 9 --k 11 --variant naive {QUICK}")
    r = doc["runs"][0]
    assert (r["m"], r["n"], r["k"]) == (7, 9, 11)


def test_sweep_over_sizes_and_variants():
    doc = matmul_doc(f"%matmul --size 16,33 -v naive,fast --tile 8,16 {QUICK}")
    assert doc["sweep"]["points"] == 8
    assert set(doc["sweep"]["varying"]) == {"size", "variant", "tile"}
    # untiled variants run once per size, not once per TILE_WIDTH
    assert [(r["m"], r["variant"]) for r in doc["runs"]] == [(16, "naive"), (16, "fast"), (33, "naive"), (33, "fast")]
    doc = matmul_doc(f"%matmul --size 40 --variant tiled --tile 2,4,8,16,32 {QUICK}")
    assert [r["tile"] for r in doc["runs"]] == TILES
    assert [r["model"]["cgma"] for r in doc["runs"]] == pytest.approx([2 * 40 ** 3 / (2 * 40 * 40 * -(-40 // t)) for t in TILES])


def test_params_recorded():
    doc = matmul_doc("%matmul --size 24 --variant all --seed 9 --reps 3 --warmup 1 --sort")
    p = doc["params"]
    assert p["size"] == 24 and p["seed"] == 9 and p["reps"] == 3 and p["warmup"] == 1 and p["sort"] is True
    assert p["variant"] == VARIANTS                         # `all` as it was expanded
    assert all(r["time_ms"]["reps"] == 3 for r in doc["runs"])


def test_deterministic_given_seed():
    cell = "%matmul --m 50 --n 31 --k 29 --variant naive,tiled,fast --reps 1 --warmup 0 --seed {}"
    a, b, c = (matmul_doc(cell.format(s)) for s in (3, 3, 4))
    errs = lambda d: [r["check"]["max_rel_err"] for r in d["runs"]]
    assert errs(a) == errs(b)
    assert errs(a) != errs(c)
    strip = lambda d: [{k: v for k, v in r.items() if k not in ("time_ms", "gflops", "pct_of_peak")} for r in d["runs"]]
    assert strip(a) == strip(b)


def test_no_check():
    doc = matmul_doc(f"%matmul --size 30 --variant fast --no-check {QUICK}")
    assert doc["params"]["check"] is False
    assert doc["runs"][0]["check"] == {"passed": None, "method": "skipped (--no-check)"}


def test_text_table_and_sort():
    rc, _, out, err = run(f"%matmul --size 48 --variant naive,tiled,fast,cublas --sort {QUICK}", json_mode=False)
    assert rc == 0 and err == ""
    assert "Matrix multiplication" in out and "GFLOP/s" in out and "CGMA" in out
    lines = [l for l in out.splitlines() if re.match(r"^(naive|tiled|fast|cublas)\s", l)]
    header = next(l for l in out.splitlines() if l.startswith("variant"))
    col = header.index("GFLOP/s") + len("GFLOP/s")
    values = [float(l[:col].split()[-1].replace(",", "")) for l in lines[:4]]
    assert values == sorted(values, reverse=True)


def test_help():
    rc, _, out, err = run("%help matmul", json_mode=False)
    assert rc == 0 and err == ""
    for word in ("--size", "--tile", "--variant", "Freivalds", "CGMA", "cublas-tf32", "--no-check",
                 "corner turning", "XOR swizzle", "cp.async", "warptiling", "WMMA"):
        assert word in out, word
    for v in VARIANTS:
        assert re.search(rf"^\s*{re.escape(v)}\s", out, re.M), v


# ---------------------------------------------------------------- errors

def test_bad_tile():
    error("%matmul --size 8 --tile 12", 1, "UsageError", "--tile 12", "2, 4, 8, 16 and 32")
    error("%matmul --size 8 --tile 3", 1, "UsageError", "--tile 3")
    error("%matmul --size 8 --tile 64", 2, "UsageError", "--tile", "2 and 32")
    error("%matmul --size 8 --tile 0", 2, "UsageError", "--tile")
    error("%matmul --size 8 --tile 16,x", 2, "UsageError", "--tile")


def test_unknown_variant_suggests():
    error("%matmul --variant tield", 2, "UsageError", "did you mean 'tiled'", "cublas-tf32")
    error("%matmul --variant cublass", 2, "UsageError", "did you mean 'cublas'")
    error("%matmul --variant naive,,fast", 2, "UsageError", "empty item")


def test_unknown_flag():
    rc, _, _, err = run("%matmul --sizes 64")
    assert rc == 2 and "--size" in err


def test_bad_sizes():
    error("%matmul --size 0", 2, "UsageError", "--size")
    error("%matmul --size -5", 2, "UsageError", "--size")
    error("%matmul --size 1.5", 2, "UsageError", "--size")
    error("%matmul --size big", 2, "UsageError", "--size")
    error("%matmul --m 0 --size 8", 2, "UsageError", "--m")
    error("%matmul --reps 0", 2, "UsageError", "--reps")
    error("%matmul --warmup 101", 2, "UsageError", "--warmup")


def test_absurd_sizes_refused_before_allocation():
    err = error("%matmul --size 2^40", 1, "MemoryError", "--size 1099511627776", "host memory",
                "largest square size that fits")
    err = error("%matmul --size 2^20 --variant naive --no-check", 1, "MemoryError", "memory")
    # int range: fits in memory, but C would have 2^31 elements or more
    rc, _, _, err = run("%matmul --m 46341 --n 46341 --k 1 --variant naive --no-check")
    assert rc == 1 and ("32-bit" in err or "memory" in err), err


def test_host_work_limit():
    # the framework's one estimate (tests/magics/test_host_work.py covers every family)
    error("%matmul --size 2048 --variant cpu", 1, "UsageError", "%matmul --size 2048: about",
          "of host work", "the limit is 30 s (CUDALAB_HOST_WORK_LIMIT)", "--force")
    error("%matmul --size 4096 --variant naive,fast", 1, "UsageError", "--size 4096 --variant naive")
    # a sweep is refused as a whole, before its first point runs
    rc, _, out, err = run("%matmul --size 8,4096 --variant naive --reps 20")
    assert rc == 1 and out == "" and "--size 4096" in err
