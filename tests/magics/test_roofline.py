"""--roofline through jupyter_client on the CPU backend: the roofs are the device document's own FP32
peak and measured copy bandwidth, each run's point and bound follow from them exactly (bound = min(peak,
bandwidth × intensity), memory-bound left of the ridge point), the intensities are the families' models
(matmul's CGMA / 4, a float sum's (n - 1) / 4n, vector add's 1 / 12, a stencil's 2 FLOPs a term over its
modelled loads and store), the chart is an SVG and a Vega-Lite spec with the roofs and each run labelled,
and runs with no FP32 work are left off with one note saying why. Counted intensities (--counters on a
GPU) and a device with only a theoretical bandwidth are covered by tests/unit/test_matmul.c
(magic_roofline), with a fake backend that counts."""
from __future__ import annotations

import re

import jsonschema
import pytest

from conftest import execute, load_schema, outputs, run_cell

RESULT = "application/vnd.cudalab.result+json"
VEGALITE = "application/vnd.vegalite.v5+json"
SVG = "image/svg+xml"
QUICK = "--reps 1 --warmup 0 --roofline"
EXACT = 1e-9            # numbers travel with 12 significant digits


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def run(kc, code: str) -> tuple[dict, list[dict], str]:
    """(the one result document, the chart bundles, the text of the result) of a cell that must succeed;
    the document valid against its family's schema."""
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    data = [m["content"]["data"] for m in outputs(msgs) if m["msg_type"] in ("display_data", "execute_result")]
    [doc] = [d[RESULT] for d in data if RESULT in d]
    jsonschema.validate(doc, load_schema(doc["magic"]))
    text = "\n".join(d["text/plain"] for d in data if RESULT in d)
    return doc, [d for d in data if VEGALITE in d], text


def roofline_chart(charts: list[dict]) -> dict:
    [chart] = [c for c in charts if c[VEGALITE].get("title", "").startswith("Roofline on ")]
    return chart


def check_roofs_and_bounds(doc: dict) -> list[dict]:
    """The roofs are the device's numbers, every placed run's bound and class follow from them; returns the
    placed runs' roofline objects."""
    dev, roofs = doc["device"], doc["roofline"]
    peak, bw = roofs["peak_fp32_gflops"], roofs["bandwidth_gbs"]
    assert peak == dev["peak_fp32_gflops"]
    assert roofs["bandwidth_source"] == "measured" and bw == dev["measured_bandwidth_gbs"]
    assert roofs["ridge_intensity"] == pytest.approx(peak / bw, rel=EXACT)
    placed = [r["roofline"] for r in doc["runs"] if "intensity" in r["roofline"]]
    for r in placed:
        assert r["bound_gflops"] == pytest.approx(min(peak, bw * r["intensity"]), rel=EXACT)
        assert r["pct_of_bound"] == pytest.approx(100 * r["gflops"] / r["bound_gflops"], rel=EXACT)
        assert r["bound"] == ("memory" if bw * r["intensity"] < peak else "compute")
        assert r["bound"] == ("memory" if r["intensity"] < roofs["ridge_intensity"] else "compute")
    return placed


def test_one_matmul_run(kc):
    doc, charts, text = run(kc, f"%matmul --size 64 --variant tiled --tile 16 --bandwidth 150 {QUICK}")
    [r] = check_roofs_and_bounds(doc)
    run_ = doc["runs"][0]
    assert r["intensity_source"] == "model"
    assert r["intensity"] == pytest.approx(2 * 64 ** 3 / (4 * run_["model"]["global_loads"]), rel=EXACT)
    assert r["intensity"] == pytest.approx(run_["model"]["cgma"] / 4, rel=EXACT) == 4     # tiles of 16
    assert r["gflops"] == pytest.approx(run_["gflops"], rel=EXACT)
    # the lecture's 150 GB/s ÷ 4 B × CGMA is the memory roof's slope at the stated bandwidth
    assert run_["model"]["bound_gflops"] == pytest.approx(150 * r["intensity"], rel=EXACT) == 600
    assert "% of roof" in text and "bound GFLOP/s" in text and "roofline: roofs at the FP32 peak" in text
    assert "measured copy bandwidth" in text
    chart = roofline_chart(charts)
    svg = chart[SVG]
    bw = doc["roofline"]["bandwidth_gbs"]
    assert "Roofline on " in svg and "(FP32 peak, measured bandwidth)" in svg
    assert ">memory roof: " in svg and ">FP32 peak: " in svg                          # the roofs, in the legend
    assert svg.count('stroke-linejoin="round" d="M') == 2                              # two roof lines, no other
    assert ">tiled</text>" in svg and 'r="4"><title>model\ntiled\n' in svg              # the run, labelled
    spec = chart[VEGALITE]
    assert spec["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    assert spec["encoding"]["y"]["scale"] == {"type": "log", "base": 2}
    values = spec["data"]["values"]
    roof = [v for v in values if v["mark"] == "line"]
    assert len(roof) == 4 and all(v["y"] == pytest.approx(min(doc["roofline"]["peak_fp32_gflops"], bw * v["x"]),
                                                          rel=EXACT) for v in roof)
    [point] = [v for v in values if v["mark"] == "point"]
    assert (point["series"], point["label"]) == ("model", "tiled")
    assert (point["x"], point["y"]) == pytest.approx((r["intensity"], r["gflops"]), rel=EXACT)


def test_a_matmul_sweep(kc):
    doc, charts, text = run(kc, f"%matmul --size 64 --variant naive,tiled --tile 8,16 {QUICK}")
    placed = check_roofs_and_bounds(doc)
    assert [r["intensity"] for r in placed] == pytest.approx([0.25, 2, 4], rel=EXACT)      # CGMA 1, 8, 16 over 4 B
    assert [r["pct_of_bound"] for r in placed] == pytest.approx(
        [float(row.split()[-1]) for row in text.splitlines() if row.startswith(("naive ", "tiled "))], rel=1e-3)
    svg = roofline_chart(charts)[SVG]
    labels = re.findall(r'<text x="[\d.]+" y="[\d.]+"(?: text-anchor="end")?>([^<]*)</text>', svg)
    assert {"naive", "tiled, 8", "tiled, 16"} <= set(labels), labels                   # naive uses no tile
    assert svg.count('r="4"><title>model\n') == 3
    # the roofline comes last, after the sweep's own chart where there is one
    assert charts[-1][VEGALITE]["title"].startswith("Roofline on ")


def test_reduce_and_vecadd_models(kc):
    n = 2 ** 16
    doc, _, text = run(kc, f"%reduce --size {n} --dtype float,int --op sum,max --variant fast {QUICK}")
    check_roofs_and_bounds(doc)
    by = {(r["dtype"], r["op"]): r for r in doc["runs"]}
    r = by["float", "sum"]["roofline"]
    assert r["intensity"] == pytest.approx((n - 1) / (4 * n), rel=EXACT)                   # n - 1 adds, n floats
    assert r["gflops"] == pytest.approx((n - 1) / (by["float", "sum"]["time_ms"]["median"] * 1e6), rel=EXACT)
    assert by["int", "sum"]["roofline"] == {"left_off": "an integer reduction: no floating-point work"}
    assert "compares" in by["float", "max"]["roofline"]["left_off"]
    assert text.count("left off the roofline for fast: an integer reduction") == 1

    doc, _, text = run(kc, f"%vecadd --size {n} --op add,daxpy {QUICK}")
    check_roofs_and_bounds(doc)
    add, daxpy = doc["runs"]
    assert add["roofline"]["intensity"] == pytest.approx(n / add["bytes"]["kernel"], rel=EXACT) \
        == pytest.approx(1 / 12, rel=EXACT)                                                 # 2 floats in, 1 out
    assert add["roofline"]["gflops"] == pytest.approx(n / (add["kernel_ms"]["median"] * 1e6), rel=EXACT)
    assert "double" in daxpy["roofline"]["left_off"]


def test_stencil_model(kc):
    n = 2 ** 16
    doc, _, _ = run(kc, f"%stencil --size {n} --radius 3 --variant naive,tiled {QUICK}")
    check_roofs_and_bounds(doc)
    for r in doc["runs"]:
        reads = r["model"]["global_reads_per_output"]                                      # 7, then (B + 6) / B
        assert r["roofline"]["intensity"] == pytest.approx(2 * 7 / ((reads + 1) * 4), rel=EXACT)
    naive, tiled = doc["runs"]
    assert naive["roofline"]["intensity"] == pytest.approx(14 / 32, rel=EXACT)
    assert tiled["roofline"]["intensity"] > 3 * naive["roofline"]["intensity"]              # tiling raises it


@pytest.mark.parametrize("magic,cell", [
    ("histo", "%histo --size 4096 --variant privatized,fast"),
    ("coalesce", "%coalesce --size 4096 --stride 1,2"),
])
def test_no_flops_left_off_with_one_note(kc, magic, cell):
    doc, charts, text = run(kc, f"{cell} {QUICK}")
    why = f"%{magic} does no floating-point work: no FLOPs to place it by (its GB/s against the bandwidth is its measure)"
    assert all(r["roofline"] == {"left_off": why} for r in doc["runs"])
    assert text.count(why) == 1 and f"left off the roofline: {why}" in text
    assert "roofline: roofs at" not in text and "% of roof" not in text                     # nothing to put under them
    assert not [c for c in charts if c[VEGALITE].get("title", "").startswith("Roofline")]
    assert doc["roofline"]["peak_fp32_gflops"] == doc["device"]["peak_fp32_gflops"]


def test_command_line_and_help():
    rc, _, text, err = run_cell(f"%matmul --size 64 --variant naive {QUICK}", json_mode=False)
    assert rc == 0 and err == ""
    assert "% of roof" in text and "Roofline on " in text and "memory roof: " in text
    rc, _, text, _ = run_cell("%help matmul", json_mode=False)
    assert rc == 0 and "--roofline" in text and "roofs" in text
    rc, docs, _, _ = run_cell("%matmul --size 64 --variant naive --reps 1 --warmup 0")
    assert rc == 0 and "roofline" not in docs[0] and "roofline" not in docs[0]["runs"][0]


def test_only_timed_families_take_it(kc):
    """%grid and %occupancy time nothing under the roofs: the flag is unknown there, and the error names it."""
    reply, _ = execute(kc, "%occupancy --threads 256 --roofline", timeout=60)
    assert reply["content"]["status"] == "error" and "--roofline" in reply["content"]["evalue"]
