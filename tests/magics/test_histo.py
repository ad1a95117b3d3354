"""%histo through the command line on the CPU backend: every variant, input and bin kind, every
flag, sweeps, the textbook's example, determinism, every error path, and the result document
against tests/schemas/histo.schema.json.

Runs `cudalab --run CELL --json` (one JSON document per line; exit 1 on a command error with
"ENAME: evalue" on stderr, 2 on a usage error) with CUDALAB_BACKEND=cpu, so it tests the same
thing on a laptop, in CI and on a GPU machine (tests/gpu/test_histo_gpu.py covers the GPU)."""
from __future__ import annotations

import collections
import json
import time

import jsonschema
import pytest

from conftest import load_schema, magic_doc, run_cell as run

SCHEMA = load_schema("histo")
VARIANTS = ["cpu", "sectioned", "interleaved", "privatized", "warp", "fast", "cub"]
QUICK = "--reps 2 --warmup 0"
LECTURE = "programming massively parallel processors"
TEXTBOOK = {"a-d": 5, "e-h": 5, "i-l": 6, "m-p": 10, "q-t": 10, "u-x": 1, "y-z": 1}


def histo_doc(cell: str) -> dict:
    return magic_doc("histo", cell, SCHEMA)


def letter_counts(text: str, width: int) -> dict[str, int]:
    """The letters histogram computed here, independently of cudalab."""
    labels = []
    for first in range(0, 26, width):
        last = min(first + width - 1, 25)
        labels.append(chr(97 + first) if first == last else f"{chr(97 + first)}-{chr(97 + last)}")
    c = collections.Counter((ord(ch) - 97) // width for ch in text.lower() if "a" <= ch <= "z")
    return {label: c.get(i, 0) for i, label in enumerate(labels)}


# ---------------------------------------------------------------- results

def test_textbook_example():
    assert letter_counts(LECTURE, 4) == TEXTBOOK          # the hand count agrees with Python's
    doc = histo_doc(f'%histo --text "{LECTURE}" --bin-width 4 {QUICK}')
    assert [r["variant"] for r in doc["runs"]] == VARIANTS  # the default is every variant
    for r in doc["runs"]:
        assert r["bins"] == TEXTBOOK, r["variant"]
        assert list(r["bins"]) == list(TEXTBOOK)         # in bin order
        assert r["check"]["passed"] is True and r["check"]["expected_total"] == 38
        assert r["input"] == "text" and r["dist"] is None and r["size"] == len(LECTURE)
        assert r["bin_mode"] == "letters" and r["bin_width"] == 4 and r["nbins"] == 7
    assert doc["params"]["bins"] == "letters" and doc["params"]["text"] == LECTURE


def test_textbook_example_text_view():
    rc, _, out, err = run(f'%histo --text "{LECTURE}" --variant fast {QUICK}', json_mode=False)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("Bins of the first run (fast)"))
    rows = [l.split() for l in lines[i + 3:i + 10]]
    assert [(r[0], int(r[1])) for r in rows] == list(TEXTBOOK.items())
    assert "█" in lines[i + 6]                            # m-p has the longest bar
    assert lines.index(next(l for l in lines if l.startswith("variant"))) > i + 9


@pytest.mark.parametrize("dist", ["uniform", "text", "skewed"])
@pytest.mark.parametrize("bins", ["bytes", "letters"])
def test_every_variant_checked(dist, bins):
    doc = histo_doc(f"%histo --size 1,17,100003 --variant all --dist {dist} --bins {bins} {QUICK}")
    runs = doc["runs"]
    assert len(runs) == 3 * len(VARIANTS)
    assert doc["sweep"]["varying"] == ["size", "variant"]
    for size in (1, 17, 100003):
        group = [r for r in runs if r["size"] == size]
        assert [r["variant"] for r in group] == VARIANTS
        assert len({json.dumps(r["bins"]) for r in group}) == 1    # every variant, the same counts
    for r in runs:
        assert r["check"]["passed"] is True, r
        assert r["backend"] == "cpu" and r["dist"] == dist and r["bin_mode"] == bins
        assert r["time_ms"]["reps"] == 2 and r["gbs"] > 0
        assert r["gbs"] == pytest.approx(r["size"] / (r["time_ms"]["median"] * 1e6), rel=1e-9)
        if r["bandwidth_gbs"]:
            assert r["pct_of_bandwidth"] == pytest.approx(100 * r["gbs"] / r["bandwidth_gbs"], rel=1e-9)
        total = sum(r["bins"]) if bins == "bytes" else sum(r["bins"].values())
        assert total == r["check"]["expected_total"]
        if bins == "bytes":
            assert total == r["size"]


def test_distributions_look_right():
    doc = histo_doc(f"%histo --size 2^20 --variant fast --dist uniform,text,skewed {QUICK}")
    uniform, text, skewed = (r["bins"] for r in doc["runs"])
    assert min(uniform) > 0.8 * 2 ** 20 / 256
    assert {i for i, c in enumerate(text) if c} == {32} | set(range(97, 123))
    assert text[ord("e")] > text[ord("t")] > text[ord("z")]
    assert 0.88 < skewed[ord("e")] / 2 ** 20 < 0.92


def test_letters_widths_and_case():
    body = "The Quick Brown Fox Jumps Over The Lazy Dog, 42 times!"
    for width in (1, 2, 5, 13, 26):
        rc, docs, _, err = run(f"%%histo --bin-width {width} {QUICK}\n{body}")
        assert rc == 0 and err == "", err
        doc = docs[0]
        jsonschema.validate(doc, SCHEMA)
        for r in doc["runs"]:
            assert r["bins"] == letter_counts(body, width), (width, r["variant"])
            assert r["check"]["passed"] is True


def test_cell_body_byte_bins_and_multiline():
    body = "line one\nline two\n\tÄ"
    rc, docs, _, err = run(f"%%histo --bins bytes --variant privatized,cub {QUICK}\n{body}")
    assert rc == 0, err
    for r in docs[0]["runs"]:
        data = body.encode()
        assert r["size"] == len(data)
        assert r["bins"] == [data.count(bytes([b])) for b in range(256)]


def test_block_and_grid_sweeps():
    doc = histo_doc(f"%histo --size 65537 --variant sectioned,fast,cub --block 32,96,1024 --grid 0,3 {QUICK}")
    assert doc["sweep"]["varying"] == ["variant", "block", "grid"]
    names = [r["variant"] for r in doc["runs"]]
    assert names.count("sectioned") == 6 and names.count("fast") == 6 and names.count("cub") == 1
    for r in doc["runs"]:
        assert r["check"]["passed"] is True
        if r["variant"] != "cub":
            assert r["launch"]["block"] == [r["block"], 1, 1]
            assert r["launch"]["grid"] == [r["grid"], 1, 1]
    assert {r["grid"] for r in doc["runs"] if r["variant"] == "fast"} >= {3}


def test_launch_configuration():
    doc = histo_doc(f"%histo --size 5000 --block 128 --grid 5 {QUICK}")
    by = {r["variant"]: r for r in doc["runs"]}
    assert by["cpu"]["launch"]["grid"] == [1, 1, 1] and by["cpu"]["block"] == 1
    assert by["privatized"]["launch"]["smem_per_block"] == 256 * 4
    # the GPU kernels' figures: the private bins (counting bytes, no byte-to-bin table)
    assert by["warp"]["launch"]["smem_per_block"] == 4 * 256 * 4
    assert by["fast"]["launch"]["smem_per_block"] == 32 * 256 * 4
    assert by["sectioned"]["launch"]["smem_per_block"] == 0
    # counting letters, warp and fast also keep the byte-to-bin table lut[256] in shared memory
    letters = {r["variant"]: r for r in histo_doc(f"%histo --size 5000 --bins letters --bin-width 4 --block 128 "
                                                  f"--grid 5 --variant warp,fast {QUICK}")["runs"]}
    assert letters["warp"]["launch"]["smem_per_block"] == 4 * 7 * 4 + 256
    assert letters["fast"]["launch"]["smem_per_block"] == 32 * 7 * 4 + 256
    for v in ("sectioned", "interleaved", "privatized", "warp", "fast"):
        assert by[v]["grid"] == 5 and by[v]["block"] == 128
        assert by[v]["implementation"].startswith("CPU analogue")
    assert "reference" in by["cub"]["implementation"]


def test_defaults():
    doc = histo_doc("%histo --variant cpu --reps 1 --warmup 0")
    p = doc["params"]
    # 2^24 on a GPU; on the CPU backend 2^22, said in the note (issue 16: a default cell under 2 s)
    assert p["size"] == 2 ** 22 and p["dist"] == "uniform" and p["bins"] == "bytes"
    assert doc["backend_note"].endswith("CPU defaults: --size 2^22 (2^24 on a GPU)")
    assert p["bin_width"] is None and p["block"] == 256 and p["grid"] == 0 and p["seed"] == 1
    assert p["check"] is True and p["sort"] is False and p["text"] is None
    r = doc["runs"][0]
    assert r["check"]["passed"] is True and sum(r["bins"]) == 2 ** 22
    # the size given, or a text's, is no CPU default
    for cell in ("%histo --size 2^24 --variant cpu --reps 1 --warmup 0",
                 "%histo --text 'abc' --variant cpu --reps 1 --warmup 0"):
        doc = histo_doc(cell)
        assert doc["params"]["size"] in (2 ** 24, 3) and "--size" not in (doc["backend_note"] or "")
    rc, docs, _, err = run("%histo --size 1000 --variant fast")
    assert rc == 0, err
    # the CPU backend's defaults (auto and 3 on a GPU), said in the note
    assert docs[0]["params"]["reps"] == 5 and docs[0]["params"]["warmup"] == 1
    assert docs[0]["runs"][0]["time_ms"]["reps"] == 5
    assert "CPU defaults: --reps 5 (auto on a GPU), --warmup 1 (3 on a GPU)" in docs[0]["backend_note"]
    rc, docs, _, err = run("%histo --size 1000 --variant fast --reps 20")
    assert rc == 0 and docs[0]["runs"][0]["time_ms"]["reps"] == 20 and docs[0]["params"]["warmup"] == 1
    assert "--reps" not in docs[0]["backend_note"]


def test_deterministic_given_seed():
    cell = "%histo --size 100003 --variant fast,cub --dist text,skewed --reps 1 --warmup 0 --seed {}"
    a, b, c = (histo_doc(cell.format(s))["runs"] for s in (7, 7, 8))
    assert [r["bins"] for r in a] == [r["bins"] for r in b]
    assert [r["check"] for r in a] == [r["check"] for r in b]
    assert [r["bins"] for r in a] != [r["bins"] for r in c]


def test_no_check():
    doc = histo_doc(f"%histo --size 1000 --variant fast --no-check {QUICK}")
    c = doc["runs"][0]["check"]
    assert c["passed"] is None and "--no-check" in c["method"]


def test_text_table_sort_and_top_bins():
    rc, _, out, err = run(f"%histo --size 50000 --variant interleaved,fast,cub --sort {QUICK}", json_mode=False)
    assert rc == 0 and err == ""
    assert "GB/s" in out and "median ms" in out and "CPU backend" in out
    assert "the 16 largest of 256 non-zero" in out
    lines = [l for l in out.splitlines() if l.split()[:1] and l.split()[0] in VARIANTS]
    gbs = [float(l.split()[6]) for l in lines[:3]]
    assert gbs == sorted(gbs, reverse=True)


def test_help():
    rc, _, out, err = run("%help histo", json_mode=False)
    assert rc == 0, err
    for word in VARIANTS + ["--bin-width", "--dist", "--text", "coalesced", "shared memory", "bank",
                            "aggregation", "HistogramEven", "%%histo", LECTURE]:
        assert word in out, word


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("cell, code, needles", [
    ("%histo --size 100 --block 48", 1, ["UsageError", "--block 48", "multiple of the warp size 32"]),
    ("%histo --size 100 --block 64,100", 1, ["UsageError", "--block 100"]),
    ("%histo --size 100 --block 2048", 2, ["UsageError", "--block"]),
    ("%histo --size 100 --block 16", 1, ["UsageError", "--block 16", "multiple of the warp size 32 (e.g. 32)"]),
    ("%histo --size 100 --block 16x16", 1, ["UsageError", "--block 16x16x1", "1D blocks", "only your kernels"]),
    ("%histo --size 100 --block 256,64x2 --variant cub", 1, ["UsageError", "--block 64x2x1"]),
    ("%histo --size 100 --block 0", 2, ["UsageError", "--block"]),
    ("%histo --size 100 --grid -1", 2, ["UsageError", "--grid"]),
    ("%histo --size 0", 2, ["UsageError", "--size"]),
    ("%histo --size lots", 2, ["--size"]),
    ("%histo --dist gaussian", 2, ["UsageError", "uniform, text, skewed"]),
    ("%histo --bins words", 2, ["UsageError", "bytes, letters"]),
    ("%histo --bin-width 0", 2, ["UsageError", "--bin-width"]),
    ("%histo --bin-width 27", 2, ["UsageError", "--bin-width"]),
    ("%histo --bin-width 2,4", 2, ["UsageError", "not a list"]),
    ("%histo --variant privatised", 2, ["UsageError", "did you mean 'privatized'"]),
    ("%histo --variant fast,shared", 2, ["UsageError", "shared"]),
    ("%histo --reps 0", 2, ["UsageError", "--reps"]),
    ("%histo --warmup 101", 2, ["UsageError", "--warmup"]),
    ("%histo --sise 64", 2, ["UsageError", "--size"]),
    ("%histo --text abc --size 100", 1, ["UsageError", "--size", "text itself (3 bytes)"]),
    ("%histo --text abc --dist text", 1, ["UsageError", "--dist"]),
    ('%histo --text ""', 1, ["UsageError", "--text is empty"]),
    ("%%histo --text abc\nxyz", 1, ["UsageError", "not both"]),
    ("%%histo --bins letters", 1, ["UsageError", "cell body is empty"]),
])
def test_usage_errors(cell, code, needles):
    rc, _, out, err = run(cell)
    assert rc == code, (out, err)
    assert out == ""
    for n in needles:
        assert n in err, (n, err)


@pytest.mark.parametrize("size", ["2^50", "2^45", "1125899906842624"])
def test_absurd_sizes_refused_before_allocation(size):
    t0 = time.monotonic()
    rc, _, out, err = run(f"%histo --size {size} --variant fast")
    assert rc == 1, (out, err)
    assert err.startswith("MemoryError: --size")
    assert "of host memory" in err and "largest power of two that fits: --size 2^" in err
    assert time.monotonic() - t0 < 20, "the refusal must not allocate or compute first"


def test_cpu_analogue_refuses_huge_grids():
    rc, _, out, err = run("%histo --size 1000 --variant interleaved --grid 2147483647")
    assert rc == 1 and "RuntimeError" in err and "at most 2^26" in err
    # cpu and cub do not simulate a grid: they still run
    doc = histo_doc(f"%histo --size 1000 --variant cpu,cub --grid 2147483647 {QUICK}")
    assert all(r["check"]["passed"] for r in doc["runs"])


def test_beyond_flag_range():
    rc, _, out, err = run("%histo --size 2^51")
    assert rc == 2 and "--size" in err


def test_absurd_size_in_a_list_refused_before_any_point():
    rc, _, out, err = run("%histo --size 1000,2^50 --variant fast")
    assert rc == 1 and out == "" and "MemoryError" in err


def test_next_cell_works_after_an_error():
    assert run("%histo --size 2^50")[0] == 1
    doc = histo_doc(f"%histo --size 100 --variant fast {QUICK}")
    assert doc["runs"][0]["check"]["passed"] is True
