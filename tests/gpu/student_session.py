"""A Jupyter session on the CUDA backend for the student-kernel GPU tests: %%kernel cells, then the
family magic, each cell's reply, text and result document. A test module imports the fixtures kc and
gpu_doc from here (kc needs gpu_doc where the test is: skip or fail without a GPU)."""
from __future__ import annotations

import pytest

from conftest import cell
from test_gpu import gpu_doc  # noqa: F401  (re-exported, for kc)


@pytest.fixture
def kc(gpu_doc, start_kernel):
    """A session's client, on the CUDA backend."""
    return start_kernel()[1]


def kernel_cell(family: str, name: str, body: str, line: str = "") -> str:
    return f"%%kernel --for {family} --name {name} {line}\n{body}"


def defined(kc, family: str, name: str, body: str, line: str = "") -> tuple[str, dict]:
    """A correct kernel's %%kernel cell: it compiles and its quick check passes; the cell's text and document."""
    c, text, doc = cell(kc, kernel_cell(family, name, body, line))
    assert c["status"] == "ok", (c, text)
    assert doc["check"]["passed"] is True, doc["check"]
    return text, doc


def failing(kc, family: str, name: str, body: str, line: str = "") -> tuple[dict, dict | None]:
    """A buggy kernel's %%kernel cell: it compiles, and its quick check fails or faults (KernelError: the
    CPU runner's run of it at the quick check's size found the bug)."""
    c, _, doc = cell(kc, kernel_cell(family, name, body, line))
    assert c["status"] == "error" and c["ename"] in ("CheckError", "CudaError", "KernelError"), c
    return c, doc
