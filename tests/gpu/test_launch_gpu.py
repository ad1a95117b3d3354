"""%launch on a CUDA device, against the CPU backend's model of the same checks: each launch past a
limit fails with the error the model names (name, code and text), only cudaGetLastError() says so,
asking clears it, and the kernel never ran; launches within the limits run every thread (the marks
counted on the device). Standard library and pytest only (gpu_cli)."""
from __future__ import annotations

import pytest

from gpu_cli import gpu, magic_doc  # noqa: F401  (gpu is the fixture)

LAUNCHES = ["--block 2048", "--block 32x32x2", "--block 1x1x128", "--grid 1x70000", "--smem 65536",
            "--block 1024", "--block 32x32 --grid 3x2 --smem 49152", "--block 8x8x8 --grid 4x4x4",
            "--grid 1x65535"]


@pytest.mark.parametrize("flags", LAUNCHES)
def test_the_gpu_says_what_the_model_says(gpu, flags):
    real = magic_doc("launch", f"%launch {flags}")
    model = magic_doc("launch", f"%launch {flags}", env={"CUDALAB_BACKEND": "cpu"})
    assert real["backend"] == "cuda" and real["modelled"] is False and model["modelled"] is True
    assert real["last_error"] == model["last_error"], (real["last_error"], model["last_error"])
    assert real["again"]["name"] == real["sync"]["name"] == "cudaSuccess"
    assert real["ran"] is model["ran"] and real["written"] == model["written"]
    assert real["written"] == (real["expected"] if real["last_error"]["code"] == 0 else 0)
    assert (real["broken_limit"] is None) == (real["last_error"]["code"] == 0)
