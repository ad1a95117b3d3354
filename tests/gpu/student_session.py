"""A Jupyter session on the CUDA backend for the student-kernel GPU tests: %%kernel cells, then the
family magic, each cell's reply, text and result document."""
from __future__ import annotations

from conftest import cell  # noqa: F401  (re-exported: the tests import it from here)


def kernel_cell(family: str, name: str, body: str, line: str = "") -> str:
    return f"%%kernel --for {family} --name {name} {line}\n{body}"
