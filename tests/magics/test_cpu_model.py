"""Classrooms without a GPU, through jupyter_client: the CPU backend is one device everywhere (%device,
%grid and %occupancy agree; analogues report their GPU variant's launch; the host loop claims no CGMA;
a float max is not shown as 1), and a sweep's chart is chosen by what it varies, or left out where it
would be noise (the document says which, the SVG and the Vega-Lite spec agree)."""
from __future__ import annotations

import re

import pytest

from conftest import execute, outputs

RESULT = "application/vnd.cudalab.result+json"
VEGALITE = "application/vnd.vegalite.v5+json"
QUICK = "--reps 2 --warmup 0"


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})[1]


def run(kc, code: str) -> tuple[list[dict], list[dict]]:
    """(the result documents, the chart bundles) of one cell that must succeed."""
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    data = [m["content"]["data"] for m in outputs(msgs) if m["msg_type"] in ("display_data", "execute_result")]
    return [d[RESULT] for d in data if RESULT in d], [d for d in data if VEGALITE in d]


def text_of(kc, code: str) -> str:
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    return "\n".join(m["content"]["data"]["text/plain"] for m in outputs(msgs)
                     if m["msg_type"] in ("display_data", "execute_result") and RESULT in m["content"]["data"])


def test_one_device_everywhere(kc):
    [dev], _ = run(kc, "%device")
    d = dev["devices"][0]
    assert (d["warp_size"], d["max_threads_per_block"], d["max_threads_per_sm"]) == (32, 1024, 2048)
    assert d["smem_per_block_bytes"] == 48 * 1024 and d["max_block_dims"] == [1024, 1024, 64]
    [grid], _ = run(kc, "%grid --data 76x62 --block 16x16")
    lim = grid["limits"]
    assert lim["warp_size"] == d["warp_size"] and lim["max_threads_per_block"] == d["max_threads_per_block"]
    assert lim["max_block"] == d["max_block_dims"] and lim["max_grid"] == d["max_grid_dims"]
    [occ], _ = run(kc, "%occupancy --threads 256")
    model = occ["runs"][0]["device_model"]
    assert model["sms"] == d["sms"] and model["max_threads_sm"] == d["max_threads_per_sm"]
    assert model["max_threads_block"] == d["max_threads_per_block"] and model["regs_sm"] == d["regs_per_sm"]
    assert model["smem_sm"] == d["smem_per_sm_bytes"]
    # a block the device model refuses is refused by %grid too, naming the same limit
    reply, _ = execute(kc, "%grid --data 64x64 --block 32x64", timeout=60)
    assert reply["content"]["status"] == "error" and "1024 threads per block" in reply["content"]["evalue"]


def test_analogues_report_the_gpus_launch(kc):
    [doc], _ = run(kc, f"%reduce --size 2^20 --variant convergent,fast {QUICK}")
    by = {r["variant"]: r for r in doc["runs"]}
    assert by["convergent"]["launch"]["smem_per_block"] == 1024      # 256 floats, as the GPU keeps them
    assert by["fast"]["launch"]["smem_per_block"] == 128             # one float per warp slot
    [doc], _ = run(kc, f"%matmul --size 64 --variant cpu,naive {QUICK}")
    by = {r["variant"]: r for r in doc["runs"]}
    assert by["cpu"]["model"]["cgma"] is None and by["naive"]["model"]["cgma"] == pytest.approx(1.0)


def test_float_max_is_not_shown_as_1(kc):
    text = text_of(kc, f"%reduce --size 2^20 --op max --variant cpu {QUICK}")
    row = next(line for line in text.splitlines() if line.startswith("cpu "))
    value = row.split()[-2]
    assert value != "1" and 0.99 < float(value) < 1, row


def svg_height(bundle: dict) -> int:
    return int(re.search(r'<svg [^>]*height="(\d+)"', bundle["image/svg+xml"]).group(1))


def test_chart_chosen_by_what_varies(kc):
    # a numeric flag with 3 values: a line with whole-number ticks, in both pictures
    [doc], [chart] = run(kc, f"%coalesce --size 2^20 --stride 1,2,3 {QUICK}")
    assert doc["sweep"]["chart"] == "line"
    x = chart[VEGALITE]["encoding"]["x"]
    assert x["type"] == "quantitative" and x["axis"] == {"tickMinStep": 1, "format": "d"}
    # the x axis's tick labels: the plain labels on the lowest line (the y axis's, whose range depends on
    # the measured GB/s, may well say 1.5)
    labels = re.findall(r'<text x="[\d.]+" y="([\d.]+)">([^<]*)</text>', chart["image/svg+xml"])
    bottom = max(float(y) for y, _ in labels)
    ticks = [t for y, t in labels if float(y) == bottom]
    assert "1.5" not in ticks and {"1", "2", "3"} <= set(ticks), labels
    # two strides: two numbers, no chart and nothing to explain
    [doc], charts = run(kc, f"%coalesce --size 2^20 --stride 1,2 {QUICK}")
    assert doc["sweep"]["chart"] is None and doc["sweep"]["chart_note"] is None and charts == []
    # variants: bars
    [doc], [chart] = run(kc, f"%reduce --size 2^22 --variant divergent,convergent,fast {QUICK}")
    assert doc["sweep"]["chart"] == "bar" and chart[VEGALITE]["mark"]["type"] == "bar"
    assert svg_height(chart) == 360 and chart[VEGALITE]["encoding"]["x"]["type"] == "nominal"


def test_many_bars_lie_down_and_stay_short(kc):
    # 4 variants x 2 blocks x 2 inputs: 16 bars (two block sizes are no axis)
    [doc], [chart] = run(kc, f"%histo --size 2^21 --variant sectioned,privatized,warp,fast --block 128,256 "
                             f"--dist text,skewed {QUICK}")
    assert doc["sweep"]["chart"] == "bar" and len(doc["runs"]) == 16
    spec = chart[VEGALITE]
    assert spec["encoding"]["y"]["type"] == "nominal" and spec["encoding"]["x"]["type"] == "quantitative"
    assert svg_height(chart) < 360                                     # 16 rows, not a wall of slanted labels
    assert "rotate(-35)" not in chart["image/svg+xml"]


def test_no_chart_where_it_would_be_noise(kc):
    [doc], charts = run(kc, f'%histo --text "the quick brown fox jumps over a lazy dog" --variant all {QUICK}')
    assert charts == [] and doc["sweep"]["chart"] is None
    assert doc["sweep"]["chart_note"].startswith("no chart: every point does less than 2^20 bytes")
    text = text_of(kc, "%occupancy --threads 64,128,256,512")
    assert "note: no chart: every occupancy % is 100" in text
