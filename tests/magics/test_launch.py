"""%launch on the CPU backend: a launch past each of the model's limits (threads per block, a block's
z, a grid's y, dynamic shared memory) fails with CUDA 13's error name and text (cudaErrorInvalidValue
for each, as an H100 answered), only
cudaGetLastError() says so, asking clears it, the kernel never ran, and the broken limit is named; a
launch within the limits runs; the cell succeeds either way and %assert reads what CUDA said; an
absurd launch within the limits is refused. On a GPU the same launches are compared with the model
(tests/gpu/test_launch_gpu.py)."""
from __future__ import annotations

import pytest

from conftest import load_schema, magic_doc, run_cell

SCHEMA = load_schema("launch")
CASES = {
    "--block 2048": ("cudaErrorInvalidValue", "invalid argument",
                     "block.x = 2048 is more than the 1024 a block may have in x"),
    "--block 32x32x2": ("cudaErrorInvalidValue", "invalid argument",
                        "a block of 2048 threads is more than the 1024 a block may have"),
    "--block 1x1x128": ("cudaErrorInvalidValue", "invalid argument",
                        "block.z = 128 is more than the 64 a block may have in z"),
    "--grid 1x70000": ("cudaErrorInvalidValue", "invalid argument",
                       "grid.y = 70000 is more than the 65535 blocks a grid may have in y"),
    "--smem 65536": ("cudaErrorInvalidValue", "invalid argument",
                     "65536 bytes of dynamic shared memory are more than the 49152 a block may ask for"),
}


@pytest.mark.parametrize("flags", sorted(CASES))
def test_a_launch_past_a_limit_fails_silently_until_asked(flags):
    name, text, limit = CASES[flags]
    doc = magic_doc("launch", f"%launch {flags}", SCHEMA)
    assert doc["modelled"] is True and doc["backend"] == "cpu"
    assert doc["last_error"] == {"code": doc["last_error"]["code"], "name": name, "text": text}
    assert doc["last_error"]["code"] == 1       # CUDA 13: every launch past a limit (an H100 said so)
    assert doc["again"]["name"] == "cudaSuccess" and doc["sync"]["name"] == "cudaSuccess"
    assert doc["written"] == 0 and doc["ran"] is False
    assert doc["broken_limit"].startswith(limit)
    rc, _, out, err = run_cell(f"%launch {flags}", json_mode=False)
    assert rc == 0 and err == ""
    assert f"{name}: {text}" in out and "the kernel never ran" in out and "CUDA_CALL(cudaGetLastError());" in out


def test_a_launch_within_the_limits_runs():
    doc = magic_doc("launch", "%launch --block 32x32 --grid 3x2 --smem 49152", SCHEMA)
    assert doc["last_error"]["name"] == "cudaSuccess" and doc["broken_limit"] is None
    assert doc["ran"] is True and doc["written"] == doc["expected"] == doc["threads"] == 6144


def test_assert_reads_it_and_the_next_cell_works():
    rc, _, out, err = run_cell('%launch --block 2048\n%assert launch.last_error.name == "cudaErrorInvalidValue" '
                               'and not launch.ran and launch.again.code == 0\n%launch --block 256', json_mode=False)
    assert rc == 0 and err == "", out


def test_absurd_launch_within_the_limits_is_refused():
    rc, _, out, err = run_cell("%launch --grid 2147483647 --block 1024", json_mode=False)
    assert rc != 0 and "UsageError" in out + err and "it launches at most 4294967296" in out + err
