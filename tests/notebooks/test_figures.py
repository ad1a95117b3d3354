"""The figures the lecture notebooks quote hold against their recordings (scripts/figures.py).

Every lecture notebook passes `figures.py check`; the checker itself is tried on a small notebook
and recording made here: a figure off by more than 10%, a quote that is not in the text, an
untagged figure in a sentence naming a GPU, a selector that matches two runs, a pending figure
before and after `refresh`.
"""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import figures  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
MATMUL = "%matmul --size 512 --variant naive,tiled"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_quoted_figure_holds_against_its_recording(path):
    assert figures.problems(path) == []


def recording(gflops=(4447.8, 6009.0), extra_runs=()):
    runs = [{"variant": v, "gflops": g} for v, g in zip(("naive", "tiled"), gflops)] + list(extra_runs)
    return {"device": {"name": "NVIDIA H200", "peak_fp32_gflops": 66908.16},
            "commands": [{"key": MATMUL, "results": [{"doc": {"runs": runs}}]}]}


def notebook(tmp_path, text, tags, rec=None):
    folder = tmp_path / "recorded" / "h200"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nb.json").write_text(json.dumps(rec or recording()))
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {"cudalab": {"figures": tags}}, "source": text},
        {"cell_type": "code", "metadata": {}, "source": MATMUL, "outputs": []}]}))
    return path


def tiled(value, quote=None, **more):
    return {"quote": quote or f"{value} TFLOP/s", "gpu": "h200", "value": value, "scale": 0.001,
            "read": {"command": MATMUL, "path": "runs[variant=tiled].gflops"}, **more}


def test_a_figure_within_ten_percent_holds(tmp_path):
    assert figures.problems(notebook(tmp_path, "On an H200 tiled reaches 5.8 TFLOP/s.", [tiled(5.8)])) == []


def test_a_figure_off_by_more_than_ten_percent_names_the_recorded_one(tmp_path):
    found = figures.problems(notebook(tmp_path, "On an H200 tiled reaches 6.7 TFLOP/s.", [tiled(6.7)]))
    assert len(found) == 1 and "recording says 6.009" in found[0] and "c0" in found[0]


def test_a_ratio_read_per_another_run(tmp_path):
    tag = {"quote": "1.35×", "gpu": "h200", "value": 1.35,
           "read": {"command": MATMUL, "path": "runs[variant=tiled].gflops"},
           "per": {"command": MATMUL, "path": "runs[variant=naive].gflops"}}
    assert figures.problems(notebook(tmp_path, "The GPU runs tiled 1.35× faster.", [tag])) == []
    tag["value"], tag["quote"] = 2.0, "2.0×"
    assert "more than 10%" in figures.problems(notebook(tmp_path, "The GPU runs tiled 2.0× faster.", [tag]))[0]


def test_a_figure_of_the_file_itself_without_a_command(tmp_path):
    tag = {"quote": "66.9 TFLOP/s", "gpu": "h200", "value": 66.9, "scale": 0.001,
           "read": {"path": "device.peak_fp32_gflops"}}
    assert figures.problems(notebook(tmp_path, "An H200's FP32 peak is 66.9 TFLOP/s.", [tag])) == []


@pytest.mark.parametrize("text", [
    "On an H200 tiled reaches 5.8 TFLOP/s and naive 4.4 TFLOP/s.",
    "The recorded rates are 4.4 and 5.8 TFLOP/s.",
    "A GPU copies at 3.9 TB/s.",
    "On a GPU it is 26% slower.",
    "The GPU gains 1.4× here.",
])
def test_an_untagged_figure_in_a_sentence_naming_a_gpu_fails(tmp_path, text):
    found = figures.problems(notebook(tmp_path, text, [tiled(5.8)] if "5.8" in text else []))
    assert len(found) == 1 and "untagged figure" in found[0]


@pytest.mark.parametrize("text", [
    "The host loop reaches 1.6 GFLOP/s.",                  # names no GPU
    "On a GPU run `%matmul --reps 5 --time 3 ms` to see.",  # inline code is not prose
    "A GPU block of 16 × 16 threads and 16×16 tiles, 4 × floor(8192 / 1536) warps.",  # products
])
def test_what_is_not_a_gpu_figure_needs_no_tag(tmp_path, text):
    assert figures.problems(notebook(tmp_path, text, [])) == []


def test_a_quote_not_in_the_text_and_a_value_not_written_fail(tmp_path):
    assert "not in the cell's text" in figures.problems(
        notebook(tmp_path, "Tiled reaches 5.8 TFLOP/s.", [tiled(5.8, quote="5.9 TFLOP/s")]))[0]
    assert "not the number written" in figures.problems(
        notebook(tmp_path, "Tiled reaches 5.8 TFLOP/s.", [tiled(6.0, quote="5.8 TFLOP/s")]))[0]


def test_a_selector_must_match_one_run(tmp_path):
    rec = recording(extra_runs=[{"variant": "tiled", "gflops": 7000.0}])
    found = figures.problems(notebook(tmp_path, "Tiled reaches 5.8 TFLOP/s.", [tiled(5.8)], rec))
    assert "matches 2 elements" in found[0]


def test_a_range_holds_when_the_recorded_figure_lies_within(tmp_path):
    text = "On an H200 tiled reaches 5.5–6.5 TFLOP/s."
    assert figures.problems(notebook(tmp_path, text, [tiled([5.5, 6.5], quote="5.5–6.5 TFLOP/s")])) == []
    text = "On an H200 tiled reaches 7–8 TFLOP/s."
    assert "more than 10%" in figures.problems(notebook(tmp_path, text, [tiled([7, 8], quote="7–8 TFLOP/s")]))[0]


def test_a_source_states_where_a_figure_not_measured_comes_from(tmp_path):
    tag = {"quote": "~500 cycles", "source": "the lecture's figure for global memory"}
    assert figures.problems(notebook(tmp_path, "The lecture gives a GPU's DRAM ~500 cycles.", [tag])) == []
    tag["source"] = " "
    assert "empty source" in figures.problems(notebook(tmp_path, "The GPU's DRAM takes ~500 cycles.", [tag]))[0]


def test_a_pending_figure_fails_until_refresh_writes_it_from_the_recording(tmp_path):
    tag = tiled(None, quote="?? TFLOP/s", fmt=".1f")
    path = notebook(tmp_path, "On an H200 at n = 512 tiled reaches ?? TFLOP/s.", [tag])
    assert "still to be filled" in figures.problems(path)[0]
    assert figures.refresh(path) == ["c0: 6.0 TFLOP/s"]
    cell = json.loads(path.read_text())["cells"][0]
    assert cell["source"] == "On an H200 at n = 512 tiled reaches 6.0 TFLOP/s."
    assert cell["metadata"]["cudalab"]["figures"][0]["value"] == 6.0
    assert figures.problems(path) == []


def test_a_sentence_naming_one_gpu_quotes_that_gpus_recording(tmp_path):
    found = figures.problems(notebook(tmp_path, "On an H100 tiled reaches 5.8 TFLOP/s.", [tiled(5.8)]))
    assert found == ["c0: '5.8 TFLOP/s': quotes the NVIDIA H200 recording in a sentence naming the H100"]
    text = "Tiled reaches 5.8 TFLOP/s on an H200 (the H100 is slower)."
    assert figures.problems(notebook(tmp_path, text, [tiled(5.8)])) == []
