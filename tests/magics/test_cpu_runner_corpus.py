"""The bug corpus (tests/bug_corpus.py) on the CPU runner: every classic bug is caught and explained
by its kind, and the next cell works. On a GPU the same corpus runs under compute-sanitizer
(tests/gpu/test_bug_parity_gpu.py). Needs NVRTC and g++; without NVRTC the tests skip, saying so."""
from __future__ import annotations

import pytest

from bug_corpus import BUGS, Bug
from conftest import cell, compiled

CPU = {"CUDALAB_BACKEND": "cpu"}


@pytest.fixture
def kernel(start_kernel):
    """On the CPU backend, even where a GPU is: these are the CPU runner's tests."""
    return start_kernel(env=CPU)


@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_bug_is_explained(kernel, bug: Bug):
    _, kc = kernel
    c, text, _ = compiled(kc, bug.cell())
    assert c["status"] == "ok", text
    c, text, _ = cell(kc, bug.command())
    assert c["status"] == "error", f"{bug.name} passed on the CPU runner:\n{text}"
    assert c["ename"] == "KernelError", c["evalue"]
    said = c["evalue"] + "\n" + "\n".join(c["traceback"])
    assert bug.cpu in said, said
    assert "at line " in said
    c, text, _ = cell(kc, "%matmul --size 16 --variant naive --reps 1")
    assert c["status"] == "ok", text
