"""`--gpu-only` and `%recorded` on a GPU, through a real kernel (jupyter_client): the command runs live
(its result is the GPU's, `matmul.` and `gpu.` both read it), nothing recorded is attached, and in
record mode (`make record`) it is recorded under its key with the flag, as a CPU run will look it up."""
from __future__ import annotations

import json

import pytest

from conftest import quiet_ok as ok, outputs
from gpu_cli import gpu  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("gpu")
RESULT = "application/vnd.cudalab.result+json"
GPU_ONLY = "%matmul --size 256 --variant naive,tiled --reps 1 --warmup 0 --gpu-only"


def docs(msgs) -> list[dict]:
    return [m["content"]["data"][RESULT] for m in outputs(msgs) if RESULT in m["content"].get("data", {})]


@pytest.fixture
def folder(recorded_folder):
    return recorded_folder


def test_gpu_only_runs_live_on_a_gpu(folder, start_kernel):
    kc = start_kernel()[1]
    ok(kc, "%recorded mini-recorded")
    [doc] = docs(ok(kc, GPU_ONLY))
    assert doc["backend"] == "cuda" and "recorded" not in doc and "gpu_only" not in doc, doc.keys()
    assert [r["variant"] for r in doc["runs"]] == ["naive", "tiled"]
    ok(kc, "%assert all(matmul.check.passed) and gpu.matmul[variant=tiled].gflops == matmul[variant=tiled].gflops")


def test_record_mode_keys_it_with_the_flag(folder, start_kernel):
    out = folder / "out"
    out.mkdir()
    kc = start_kernel(env={"CUDALAB_RECORD": str(out)})[1]
    ok(kc, "%recorded mini-recorded")
    ok(kc, GPU_ONLY + "   # the comment is not part of the key")
    rec = json.loads((out / "mini-recorded.json").read_text())
    assert rec["device"]["backend"] == "cuda"
    [cmd] = rec["commands"]
    assert cmd["key"] == GPU_ONLY and cmd["results"][0]["doc"]["backend"] == "cuda"
