"""A Jupyter session on the CUDA backend for the student-kernel GPU tests: %%kernel cells, then the
family magic, each cell's reply, text and result document."""
from __future__ import annotations

from conftest import execute, outputs

RESULT = "application/vnd.cudalab.result+json"


def cell(kc, code: str, timeout: float = 120) -> tuple[dict, str, dict | None]:
    """(reply content, the outputs' text, the last result document or None)."""
    reply, msgs = execute(kc, code, timeout=timeout)
    text, doc = [], None
    for m in outputs(msgs):
        c = m["content"]
        text.append(c.get("text", "") or c.get("evalue", "") or c.get("data", {}).get("text/plain", ""))
        if RESULT in c.get("data", {}):
            doc = c["data"][RESULT]
    return reply["content"], "\n".join(text), doc


def kernel_cell(family: str, name: str, body: str, line: str = "") -> str:
    return f"%%kernel --for {family} --name {name} {line}\n{body}"
