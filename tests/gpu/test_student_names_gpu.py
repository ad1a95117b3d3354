"""On a GPU (NVRTC's path): the cases of tests/student_names.py, correct kernels after `#define`s of every
reserved name the harness writes, every single letter but x, y and z, the common words of a course, and a
file-scope __shared__ array beside a parameter of the same name, compile (the parameter check NVRTC reads
after the cell is out of their reach), pass their quick check and run in their family's magic beside the
built-in variants, with nothing on stderr. tests/magics/test_student_names.py runs them on the CPU runner."""
from __future__ import annotations

import pytest

from conftest import execute, streams
from student_names import CASES, Case
from student_session import cell, gpu_doc, kc  # noqa: F401  (gpu_doc, kc: fixtures)

# the family command that runs each kernel again beside a built-in variant, at a size no block divides
RUN = {"matmul": "%matmul --m 700 --n 500 --k 400 --variant tiled",
       "reduce": "%reduce --size 1000003 --variant convergent",
       "vecadd": "%vecadd --size 1000003 --variant builtin"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_correct_kernel_survives_the_macros(kc, case: Case):
    c, text, doc = cell(kc, case.cell())
    assert c["status"] == "ok", (c, case.source[-400:])
    assert doc["check"]["passed"] is True, doc["check"]
    reply, msgs = execute(kc, f"{RUN[case.family]},{case.name} --reps 2 --warmup 1")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert streams(msgs, "stderr") == []
