"""The CPU runner's own runtime under valgrind memcheck (CUDALAB_RUNNER_VALGRIND=1 runs each runner
under it): fibers switching stacks at every barrier, warp shuffles, shared and global checks, the
counting of --counters, a finding's report and a fault all stay clean. Skipped where valgrind is not
installed."""
from __future__ import annotations

import shutil

import pytest

from conftest import cell, compiled
from test_cpu_runner_matmul import TILED, naive

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

SHUFFLE = """%%kernel --for reduce --name myshfl --no-check
__global__ void myshfl(const float *input, float *partial, int n)
{
    __shared__ float warps[32];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * blockDim.x + t;
    float v = (i < n ? input[i] : 0.0f) + (i + blockDim.x < n ? input[i + blockDim.x] : 0.0f);
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_down_sync(0xffffffff, v, d);
    if (t % 32 == 0)
        warps[t / 32] = v;
    __syncthreads();
    if (t < 32) {
        v = t < blockDim.x / 32 ? warps[t] : 0.0f;
        for (int d = 16; d > 0; d >>= 1)
            v += __shfl_down_sync(0xffffffff, v, d);
        if (t == 0)
            partial[blockIdx.x] = v;
    }
}
"""


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_RUNNER_VALGRIND": "1",
                             "CUDALAB_KERNEL_TIMEOUT": "120"})[1]


def test_runner_is_clean_under_valgrind(kc):
    c, text, _ = compiled(kc, TILED.replace("--name mytiled", "--name mytiled --no-check"))
    assert c["status"] == "ok", text
    c, text, doc = cell(kc, "%matmul --m 40 --n 24 --k 33 --variant mytiled --reps 1 --counters", timeout=300)
    assert c["status"] == "ok", text
    assert doc["runs"][0]["check"]["passed"] is True
    assert doc["runs"][0]["counters"]["source"] == "simulation (CPU runner)"
    # a finding (the missing barrier's race) and a fault (past the end of C) are clean too
    bugs = TILED.replace("--name mytiled", "--name mybug --no-check").replace("mytiled(", "mybug(") \
        .replace("        __syncthreads();\n    }", "    }").replace("    if (row < M && col < N)\n", "")
    assert compiled(kc, bugs)[0]["status"] == "ok"
    c, _, _ = cell(kc, "%matmul --m 40 --n 24 --k 33 --variant mybug --reps 1", timeout=300)
    assert c["status"] == "error" and c["ename"] == "KernelError", c.get("evalue")
    assert "valgrind" not in c["evalue"]
    assert compiled(kc, SHUFFLE)[0]["status"] == "ok"
    c, text, doc = cell(kc, "%reduce --size 3000 --variant myshfl --reps 1 --counters", timeout=300)
    assert c["status"] == "ok", text
    assert doc["runs"][0]["check"]["passed"] is True
    assert doc["runs"][0]["counters"]["source"] == "simulation (CPU runner)"
