"""%recorded and the gpu./recorded. names of %assert through a real kernel (jupyter_client), in a
folder laid out as notebooks/ is: NAME.ipynb beside recorded/GPU/NAME.json (the fixture's own lies in
recorded/ itself, a file with no GPU folder). Recorded results are shown
with a CPU run of the same command as one comparison: one table, rows matched by variant and
parameters, each measured column once per device (text and HTML), and the document's "recorded";
every broken case
(an unknown notebook, a bad name, malformed JSON, a file of another format or version) is one
clear error, and the next cell works; checks of GPU results with nothing recorded are skipped and
say so; a false claim names the device it was recorded on; record mode writes the file."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import failed, outputs, quiet_ok as ok, streams

CPU = {"CUDALAB_BACKEND": "cpu"}
MATMUL = "%matmul --size 64 --variant naive,tiled --tile 8,16 --reps 1 --warmup 0"
RESULT = "application/vnd.cudalab.result+json"


@pytest.fixture
def folder(recorded_folder):
    """A notebooks folder: the fixture notebook and its recording; the kernel starts in it."""
    return recorded_folder


@pytest.fixture
def kc(folder, start_kernel):
    return start_kernel(env=CPU)[1]


def error(kc, code):
    c, msgs = failed(kc, code)
    assert not streams(msgs, "stderr")
    return c


def data(msgs) -> list[dict]:
    """The MIME bundles the cell showed."""
    return [m["content"]["data"] for m in outputs(msgs) if "data" in m["content"]]


def plain(msgs) -> str:
    return "\n".join(d.get("text/plain", "") for d in data(msgs))


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the text table that starts with a line beginning 'variant'."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("variant "))
    split = lambda line: re.split(r"  +", line.strip())
    rows = [split(line) for line in lines[at + 2:] if line.strip() and not line.startswith("note:")]
    return split(lines[at]), rows[:next((i for i, r in enumerate(rows) if len(r) < 3), len(rows))]


def test_recorded_shown_with_the_cpu_run_as_one_table(kc):
    assert "Recorded GPU results: AMD EPYC" in plain(ok(kc, "%recorded mini-recorded"))
    msgs = ok(kc, MATMUL)
    [bundle] = [d for d in data(msgs) if RESULT in d]
    rec = bundle[RESULT]["recorded"]
    assert rec["file"] == "recorded/mini-recorded.json" and len(rec["results"]) == 1
    assert rec["results"][0]["backend"] == "cpu" and len(rec["results"][0]["runs"]) == 3
    text = bundle["text/plain"]
    assert "Recorded on AMD EPYC (the CPU backend, not a GPU), 2026-11-25, cudalab 0.1.0 (recorded/mini-recorded.json), " \
        "in one table with this CPU's runs" in text
    assert sum(line.startswith("variant ") for line in text.splitlines()) == 1, text     # one table, not two
    header, rows = table(text)
    assert header[:6] == ["variant", "m", "n", "k", "tile", "precision"], header
    assert ["GFLOP/s (CPU)", "GFLOP/s (AMD EPYC)"] == header[header.index("GFLOP/s (CPU)"):][:2], header
    # each row: this machine's run and the recorded run of the same variant and tile, side by side
    mine = {(r["variant"], r["tile"]): r for r in bundle[RESULT]["runs"]}
    recorded = {(r["variant"], r["tile"]): r for r in rec["results"][0]["runs"]}
    assert len(rows) == 3 and set(mine) == set(recorded)
    for row in rows:
        key = (row[0], None if row[4] == "-" else int(row[4]))
        for col, run in (("GFLOP/s (CPU)", mine[key]), ("GFLOP/s (AMD EPYC)", recorded[key])):
            assert float(row[header.index(col)]) == pytest.approx(run["gflops"], rel=1e-3), (col, row)
    html = bundle["text/html"]
    assert html.count("<table") == 1 and "GFLOP/s (AMD EPYC)" in html and "GFLOP/s (CPU)" in html, html
    ok(kc, "%assert recorded.matmul[variant=tiled,tile=8].check.passed and count(gpu.matmul) == 3")


def test_cpu_defaults_still_match_the_recorded_runs(kc, folder):
    """A CPU run at its smaller defaults (the recording ran the GPU's) is matched by variant: the recorded
    size shown beside this machine's."""
    record_also_as(folder, MATMUL, "%matmul --variant naive,tiled --tile 8,16 --reps 1 --warmup 0")
    ok(kc, "%recorded mini-recorded")
    [bundle] = [d for d in data(ok(kc, "%matmul --size 48 --variant naive,tiled --tile 8,16 --reps 1 --warmup 0"))
                if RESULT in d]
    assert "No recorded GPU result" in bundle["text/plain"]      # another key: nothing recorded, nothing joined
    [bundle] = [d for d in data(ok(kc, "%matmul --variant naive,tiled --tile 8,16 --reps 1 --warmup 0")) if RESULT in d]
    header, rows = table(bundle["text/plain"])
    size = bundle[RESULT]["runs"][0]["m"]
    assert size != 64 and [r[1] for r in rows] == [f"{size} (AMD EPYC: 64)"] * 3, rows
    assert [r[0] for r in rows] == ["naive", "tiled", "tiled"] and all("-" not in r[-2:] for r in rows), rows


def test_a_command_not_recorded_says_so(kc):
    ok(kc, "%recorded mini-recorded")
    msgs = ok(kc, "%matmul --size 48 --variant naive --reps 1 --warmup 0")
    assert "No recorded GPU result for this command" in plain(msgs)
    out = "".join(streams(ok(kc, "%assert gpu.matmul.check.passed"), "stdout"))
    assert "not checked here (no GPU, the recording has no result for this command)" in out, out


def test_a_claim_under_a_command_the_recording_lacks_is_not_checked_against_another(kc):
    """A recording made before a command was added (another GPU's, say): the claim under that command
    is not checked, rather than read from the recorded result of an earlier command."""
    ok(kc, "%recorded mini-recorded")
    ok(kc, MATMUL)
    ok(kc, "%matmul --size 48 --variant naive --reps 1 --warmup 0")
    msgs = ok(kc, "%assert gpu.matmul[variant=naive].model.cgma == 2")
    out = "".join(streams(msgs, "stdout"))
    assert "not checked here (no GPU, the recording has no result for this command)" in out, out
    c = error(kc, "%score gpu.matmul[variant=naive].gflops")
    assert c["ename"] == "CommandNotRecorded" and "cell" in c["evalue"], c
    ok(kc, MATMUL)                                 # recorded again: the claim is checked, and is false
    assert error(kc, "%assert gpu.matmul[variant=naive].model.cgma == 2")["ename"] == "AssertionError"
    # the same for a --gpu-only command the recording lacks: no stand-in, and its claim is not checked
    ok(kc, "%matmul --size 4096 --variant naive --gpu-only")
    out = "".join(streams(ok(kc, "%assert gpu.matmul[variant=naive,m=4096].gflops > 1"), "stdout"))
    assert "not checked here (no GPU, the recording has no result for this command)" in out, out


def test_false_claim_names_the_recording(kc):
    ok(kc, "%recorded mini-recorded")
    ok(kc, MATMUL)
    c = error(kc, "%assert gpu.matmul[variant=naive].model.cgma == 2")
    assert c["ename"] == "AssertionError"
    assert any("recorded on AMD EPYC" in line for line in c["traceback"]), c["traceback"]


def test_gpu_checks_skipped_without_a_recording(kc, folder):
    (folder / "other.ipynb").write_text("{}")
    assert "No recorded GPU results for this notebook yet" in plain(ok(kc, "%recorded other"))
    ok(kc, MATMUL)
    msgs = ok(kc, "%assert gpu.matmul[variant=tiled,tile=16].gflops > 1e9")
    assert "not checked here" in "".join(streams(msgs, "stdout"))
    c = error(kc, "%score gpu.matmul[variant=naive].gflops")
    assert c["ename"] == "NoRecordedResults", c
    ok(kc, "%assert matmul.check.passed")          # the session's own results still answer


@pytest.mark.parametrize("content, words", [
    ("{not json", "is not valid JSON: line 1"),
    ('{"format": "cudalab-recorded", "version": 9}', "format version"),
    ('{"format": "something else"}', "'format' is not 'cudalab-recorded'"),
    ('[]', "the top level is not an object"),
], ids=["malformed", "version", "format", "not-object"])
def test_broken_file_is_a_clear_error(kc, folder, content, words):
    (folder / "recorded" / "mini-recorded.json").write_text(content)
    c = error(kc, "%recorded mini-recorded")
    assert c["ename"] == "ValueError" and words in c["evalue"], c
    ok(kc, "%echo the next cell works")


def test_schema_mismatch_names_the_place(kc, folder):
    path = folder / "recorded" / "mini-recorded.json"
    doc = json.loads(path.read_text())
    doc["commands"][1]["results"][0]["view"] = "a table"
    path.write_text(json.dumps(doc))
    c = error(kc, "%recorded mini-recorded")
    assert c["ename"] == "ValueError" and "commands[1].results[0]" in c["evalue"], c
    ok(kc, MATMUL)                                  # nothing loaded: the next command runs as usual


def test_unknown_notebook_and_bad_names(kc):
    c = error(kc, "%recorded mini-recordd")
    assert c["ename"] == "LookupError" and "did you mean mini-recorded?" in c["evalue"], c
    assert error(kc, "%recorded ../etc/passwd")["ename"] == "UsageError"
    assert error(kc, "%recorded")["ename"] == "UsageError"
    ok(kc, "%recorded mini-recorded")


def gpu_copy(folder: Path, gpu: str, recorded_at: str, device: str) -> None:
    """The fixture's recording again as GPU's, recorded at RECORDED_AT on DEVICE."""
    doc = json.loads((folder / "recorded" / "mini-recorded.json").read_text())
    doc["recorded_at"], doc["device"]["name"] = recorded_at, device
    (folder / "recorded" / gpu).mkdir()
    (folder / "recorded" / gpu / "mini-recorded.json").write_text(json.dumps(doc))


def test_one_folder_per_gpu(folder, start_kernel):
    """recorded/GPU/NAME.json: the newest recording is shown unless --gpu or CUDALAB_RECORDED_GPU picks one;
    --gpu takes the start of a folder's name; a GPU with no recording is an error listing those there are."""
    gpu_copy(folder, "h100-80gb-hbm3", "2026-11-25T06:20:28Z", "NVIDIA H100 80GB HBM3")
    gpu_copy(folder, "h200", "2026-11-29T12:00:00Z", "NVIDIA H200")
    (folder / "recorded" / "mini-recorded.json").unlink()
    kc = start_kernel(env=CPU)[1]
    shown = plain(ok(kc, "%recorded mini-recorded"))
    assert "NVIDIA H200" in shown and "recorded/h200/mini-recorded.json" in shown, shown
    assert "Also recorded on: h100-80gb-hbm3" in shown
    docs = [d[RESULT] for d in data(ok(kc, MATMUL)) if RESULT in d]
    assert docs[0]["recorded"]["device"]["name"] == "NVIDIA H200"
    assert "recorded/h100-80gb-hbm3/mini-recorded.json" in plain(ok(kc, "%recorded mini-recorded --gpu h100"))
    docs = [d[RESULT] for d in data(ok(kc, MATMUL)) if RESULT in d]
    assert docs[0]["recorded"]["device"]["name"] == "NVIDIA H100 80GB HBM3"
    c = error(kc, "%recorded mini-recorded --gpu a100")
    assert c["ename"] == "LookupError" and "recorded: h100-80gb-hbm3, h200" in c["evalue"], c
    c = error(kc, "%recorded mini-recorded --gpu h")     # h100… and h200 both start so
    assert c["ename"] == "LookupError" and "more than one" in c["evalue"], c
    ok(kc, "%echo the next cell works")
    kc = start_kernel(env={**CPU, "CUDALAB_RECORDED_GPU": "h100"})[1]
    assert "NVIDIA H100" in plain(ok(kc, "%recorded mini-recorded"))
    kc = start_kernel(env={**CPU, "CUDALAB_RECORDED_GPU": "a100"})[1]     # not recorded there: the newest
    assert "NVIDIA H200" in plain(ok(kc, "%recorded mini-recorded"))


def test_dir_flag_and_a_missing_file(kc, folder):
    (folder / "recorded" / "h200").mkdir()
    shutil.copy(folder / "recorded" / "mini-recorded.json", folder / "recorded" / "h200")
    assert "recorded/h200/mini-recorded.json" in plain(ok(kc, "%recorded mini-recorded --dir recorded/h200"))
    assert error(kc, "%recorded nothing-here --dir nowhere")["ename"] == "LookupError"


def test_record_mode_writes_the_file(folder, start_kernel):
    out = folder / "out"
    out.mkdir()
    kc = start_kernel(env={**CPU, "CUDALAB_RECORD": str(out)})[1]
    assert "Recording this notebook's results" in plain(ok(kc, "%recorded mini-recorded"))
    charted = "%matmul --size 128 --variant naive,tiled,cublas --reps 1 --warmup 0"    # a sweep with a chart
    ok(kc, charted)
    ok(kc, charted)                             # the same command again: its results replaced, not doubled
    doc = json.loads((out / "mini-recorded.json").read_text())
    assert doc["format"] == "cudalab-recorded" and doc["device"]["backend"] == "cpu"
    [cmd] = doc["commands"]
    # the table's result, then the chart's (a view without a document of its own)
    assert cmd["key"] == charted and [r["doc"] is None for r in cmd["results"]] == [False, True]


def test_keys_ignore_spacing_comments_and_plain_quotes(kc):
    ok(kc, "%recorded mini-recorded")
    msgs = ok(kc, '%matmul   --size "64" --variant naive,tiled --tile 8,16 --reps 1 --warmup 0   # a comment')
    assert "in one table with this CPU's runs" in plain(msgs)


# --gpu-only (every device magic line): on the CPU backend the command does not run; its recorded GPU
# result stands in for it, or stdout says there is none and the cell succeeds.
GPU_ONLY = MATMUL + " --gpu-only"
GPU_SCALE = "%matmul --size 4096 --variant naive,tiled --gpu-only"     # hours of work on the CPU backend


def record_also_as(folder: Path, key: str, as_key: str) -> None:
    """The fixture's recording, with the results recorded for KEY recorded for AS_KEY too."""
    path = folder / "recorded" / "mini-recorded.json"
    doc = json.loads(path.read_text())
    [results] = [c["results"] for c in doc["commands"] if c["key"] == key]
    doc["commands"].append({"key": as_key, "results": results})
    path.write_text(json.dumps(doc))


def test_gpu_only_shows_the_recorded_result_instead(folder, start_kernel):
    record_also_as(folder, MATMUL, GPU_ONLY)
    kc = start_kernel(env=CPU)[1]
    ok(kc, "%recorded mini-recorded")
    msgs = ok(kc, GPU_ONLY)
    shown = plain(msgs)
    assert "--gpu-only runs only on a GPU" in shown and "so this one did not run" in shown, shown
    assert "Recorded on AMD EPYC (the CPU backend, not a GPU)" in shown, shown      # nothing here to join
    [doc] = [d[RESULT] for d in data(msgs) if RESULT in d]
    assert doc["gpu_only"] is True and "runs" not in doc and "gpu_only" not in doc["params"], doc
    assert len(doc["recorded"]["results"][0]["runs"]) == 3
    assert "Recorded on" in "".join(d.get("text/html", "") for d in data(msgs))
    ok(kc, "%assert count(gpu.matmul) == 3 and gpu.matmul[variant=tiled,tile=16].check.passed")
    c = error(kc, "%assert matmul.check.passed")        # nothing ran here: no live result to read
    assert c["ename"] == "LookupError", c


def test_gpu_only_without_a_recording_says_so_and_succeeds(kc):
    msgs = ok(kc, GPU_SCALE)
    said = "".join(streams(msgs, "stdout"))
    assert "runs only on a GPU" in said and "no recorded GPU results are loaded" in said, said
    assert not data(msgs)
    ok(kc, "%recorded mini-recorded")
    msgs = ok(kc, GPU_SCALE)
    said = "".join(streams(msgs, "stdout"))
    assert "has no recorded GPU result of this command" in said and "recorded/mini-recorded.json" in said, said
    assert not data(msgs)
    out = "".join(streams(ok(kc, "%assert gpu.matmul.check.passed"), "stdout"))   # nothing to check it by
    assert "not checked here (no GPU, the recording has no result for this command)" in out, out


def test_gpu_only_is_a_flag_of_every_device_magic_line(kc):
    c = error(kc, "%matmul --size 64 --gpu-onyl")
    assert c["ename"] == "UsageError" and "did you mean --gpu-only?" in c["evalue"], c
    c = error(kc, "%echo --gpu-only hello")             # runs in the kernel: not a device command
    assert c["ename"] == "UsageError", c
    for magic in ("matmul", "stencil", "latency", "device"):
        assert "--gpu-only" in plain(ok(kc, f"%help {magic}")), magic
    assert "--gpu-only" not in plain(ok(kc, "%help assert"))


def test_a_table_both_devices_show_alike_is_shown_once(kc):
    """A histogram's bins are the same on every device (seeded input): shown once, its runs joined."""
    ok(kc, "%recorded mini-recorded")
    histo = "%%histo --bin-width 4 --variant cpu,interleaved --reps 1 --warmup 0\nProgramming Massively Parallel Processors"
    [bundle] = [d for d in data(ok(kc, histo)) if RESULT in d]
    text = bundle["text/plain"]
    assert text.count("Bins of the first run") == 1, text
    header, rows = table(text)
    assert "GB/s (CPU)" in header and "GB/s (AMD EPYC)" in header and [r[0] for r in rows] == ["cpu", "interleaved"]
