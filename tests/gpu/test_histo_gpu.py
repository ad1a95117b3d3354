"""%histo on a CUDA device: every variant on every input distribution and bin kind at odd sizes,
every block size, explicit grids, the textbook's example, text input (H2D timed), the metrics, the
refusals that depend on device memory, and the kernels agreeing bin for bin with the CPU backend.

Skipped (with the reason %device gives) when `cudalab --run '%device' --json` reports the CPU
backend, unless CUDALAB_REQUIRE_GPU=1 (what `make test-gpu` sets): then it fails loudly.
Uses only the standard library and pytest (no conftest helpers), so it also runs on a GPU machine
with plain python3: `python3 -m pytest --noconftest tests/gpu/test_histo_gpu.py`."""
from __future__ import annotations

import json

import pytest

VARIANTS = ["cpu", "sectioned", "interleaved", "privatized", "warp", "fast", "cub"]
GPU_VARIANTS = [v for v in VARIANTS if v != "cpu"]
TEXTBOOK = {"a-d": 5, "e-h": 5, "i-l": 6, "m-p": 10, "q-t": 10, "u-x": 1, "y-z": 1}

from gpu_cli import gpu, magic_doc, run  # noqa: E402,F401  (gpu is the fixture)


def histo_doc(cell: str, env: dict | None = None) -> dict:
    return magic_doc("histo", cell, env)


def assert_all_passed(doc: dict) -> None:
    bad = [(r["variant"], r.get("size"), r.get("dist"), r["check"]) for r in doc["runs"]
           if r["check"]["passed"] is not True]
    assert not bad, bad


def counts(run: dict) -> list[int]:
    b = run["bins"]
    return b if isinstance(b, list) else list(b.values())


@pytest.mark.parametrize("bins", ["bytes", "letters"])
@pytest.mark.parametrize("dist", ["uniform", "text", "skewed"])
def test_every_variant_odd_sizes(gpu, dist, bins):
    doc = histo_doc(f"%histo --variant all --size 1,15,17,4099,1000003 --dist {dist} --bins {bins} "
                    f"--reps 2 --warmup 1")
    assert len(doc["runs"]) == 5 * len(VARIANTS)
    assert_all_passed(doc)
    for r in doc["runs"]:
        assert sum(counts(r)) == r["check"]["expected_total"]
        assert r["backend"] == ("cpu" if r["variant"] == "cpu" else "cuda")


def test_every_block_size(gpu):
    doc = histo_doc("%histo --variant sectioned,interleaved,privatized,warp,fast "
                    f"--block 32,64,96,128,256,512,1024 --size {2**20 + 3} --reps 2 --warmup 1")
    assert_all_passed(doc)
    for r in doc["runs"]:
        assert r["launch"]["block"][0] == r["block"]


def test_explicit_grids(gpu):
    doc = histo_doc("%histo --variant sectioned,interleaved,privatized,warp,fast --grid 1,7,100000 "
                    "--size 3000017 --dist skewed --reps 2 --warmup 0")
    assert_all_passed(doc)
    assert sorted({r["grid"] for r in doc["runs"]}) == [1, 7, 100000]


def test_auto_grid_fills_the_device(gpu):
    doc = histo_doc("%histo --variant fast --size 2^24 --reps 3")
    r = doc["runs"][0]
    sms = gpu["devices"][0]["sms"]
    assert r["grid"] % sms == 0 and r["grid"] >= sms
    assert r["launch"]["smem_per_block"] >= 256 * 32 * 4
    assert r["launch"]["regs_per_thread"] > 0


def test_textbook_example(gpu):
    doc = histo_doc('%histo --text "programming massively parallel processors" --bin-width 4 '
                    '--variant all --reps 2 --warmup 1')
    assert_all_passed(doc)
    for r in doc["runs"]:
        assert r["bins"] == TEXTBOOK, r["variant"]
        assert r["input"] == "text" and r["dist"] is None and r["size"] == 41
    gpu_runs = [r for r in doc["runs"] if r["backend"] == "cuda"]
    assert all(r["h2d_ms"] > 0 for r in gpu_runs)


def test_cell_body_letters_widths(gpu):
    body = "The Quick Brown Fox Jumps Over The Lazy Dog! 0123 ÄÖÜ"
    for width in (1, 3, 26):
        rc, docs, err = run(f"%%histo --variant all --bin-width {width} --reps 1 --warmup 0\n{body}")
        assert rc == 0, err
        doc = next(d for d in docs if d.get("magic") == "histo")
        assert_all_passed(doc)
        assert len({json.dumps(r["bins"]) for r in doc["runs"]}) == 1


def test_metrics(gpu):
    doc = histo_doc("%histo --variant fast,cub --size 2^26 --reps 5")
    for r in doc["runs"]:
        t = r["time_ms"]
        assert 0 < t["min"] <= t["median"] <= t["max"] and t["reps"] == 5
        assert abs(r["gbs"] - r["size"] / (t["median"] * 1e6)) < 1e-6 * r["gbs"]
        assert r["pct_of_bandwidth"] is None or 0 < r["pct_of_bandwidth"] < 200
        assert r["h2d_ms"] is None
        assert r["implementation"].startswith("CUDA:")


def test_agrees_with_cpu_backend(gpu):
    cell = "%histo --variant fast --size 777777 --dist text --bins letters --bin-width 3 --reps 1 --seed 9"
    on_gpu = histo_doc(cell)["runs"][0]["bins"]
    on_cpu = histo_doc(cell, env={"CUDALAB_BACKEND": "cpu"})["runs"][0]["bins"]
    assert on_gpu == on_cpu


def test_absurd_sizes_refused(gpu):
    rc, _, err = run("%histo --size 2^40")
    assert rc == 1 and "MemoryError" in err and "device memory" in err and "--size 2^" in err
    free = gpu["devices"][0]["mem_free_bytes"]
    if free > 2**31 + 2**30:
        rc, _, err = run("%histo --size 2^31")
        assert rc == 1 and "ValueError" in err and "2147483647" in err
