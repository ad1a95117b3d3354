"""Harness names against the student's macros, without a GPU: each case of tests/student_names.py (every
reserved name the harness writes, every single letter but x, y and z, the common words of a course,
#defined as a lone ')' before a correct kernel; a file-scope __shared__ array beside a parameter of the
same name) compiles with NVRTC and on the CPU runner, passes its quick check there and runs in its
family's magic, with nothing on stderr. tests/gpu/test_student_names_gpu.py runs the same cases on a GPU.
NVRTC is part of the CUDA toolkit: without it these tests are skipped."""
from __future__ import annotations

import pytest

from conftest import cell, compiled, execute, streams
from student_names import CASES, Case, defines, harness_names

CPU = {"CUDALAB_BACKEND": "cpu"}

# the family command that runs each kernel again, at a size no block divides
RUN = {"matmul": "%matmul --m 70 --n 50 --k 40", "reduce": "%reduce --size 10007", "vecadd": "%vecadd --size 10007"}


@pytest.fixture
def kernel_client(start_kernel):
    return start_kernel(env=CPU)[1]


def test_the_reserved_names_are_read_from_the_code():
    names = harness_names()
    # one of each kind: the parameter check (NVRTC), the entry, the prelude, the rewrite's slot and literal
    for expected in ["__cudalab_sig", "__cudalab_entry", "__cudalab_syncthreads", "__cudalab_shared_slot_0",
                     "_cudalab_shared", "__cudalab_place_file_shared"]:
        assert expected in names, names
    assert all(n.startswith(("__cudalab_", "_cudalab_")) for n in names), names


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_correct_kernel_survives_the_macros(kernel_client, case: Case):
    c, text, doc = compiled(kernel_client, case.cell())
    assert c["status"] == "ok", (c, case.source[-400:])
    assert doc["check"]["passed"] is True, doc["check"]
    reply, msgs = execute(kernel_client, f"{RUN[case.family]} --variant {case.name} --reps 1 --warmup 0")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert streams(msgs, "stderr") == []


def test_the_macros_do_reach_the_students_own_code(kernel_client):
    """The control: the same #defines break a kernel that uses one of the names (so the passes above
    are the harness's doing), with the cell's line in the error, and the next cell works."""
    body = defines(["width"]) + "__global__ void uses_width(const float *A, const float *B, float *C, int width)\n" \
        "{ int at = blockIdx.x * blockDim.x + threadIdx.x; if (at < width) C[at] = A[at] + B[at]; }\n"
    c, _, _ = compiled(kernel_client, f"%%kernel --for vecadd --name uses_width\n{body}")
    assert c["status"] == "error" and c["ename"] == "CompileError", c
    assert any(line.startswith("line 3:") for line in c["traceback"]), c["traceback"]
    c, _, doc = cell(kernel_client, CASES[-1].cell())
    assert c["status"] == "ok" and doc["check"]["passed"] is True, c
