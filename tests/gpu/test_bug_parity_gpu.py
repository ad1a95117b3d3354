"""The bug corpus (tests/bug_corpus.py) on both sides of one GPU machine: each kernel under
compute-sanitizer (--sanitize) and on the CPU runner (--backend cpu), a plain GPU run's check (the GPU
alone: --no-cpu-check), and the %%kernel quick check on the GPU, which also runs the kernel on the CPU
runner at its size (bug parity). It prints the table of what each side reports (pytest -s, or
$CUDALAB_BUG_TABLE names a file for it) and asserts that each side catches what it should: the runner
every bug, compute-sanitizer the bugs its tools see, the exact check the lost update in global memory
that racecheck cannot see, and the GPU's quick check every bug, with the runner's KernelError."""
from __future__ import annotations

import os

import pytest

from bug_corpus import BUGS, Bug
from student_session import cell
from test_gpu import gpu_doc  # noqa: F401  (the fixture: skip or fail without a GPU)

ROWS: dict[str, tuple[str, ...]] = {}


def first_line(text: str, limit: int = 110) -> str:
    line = next((l for l in text.splitlines() if l.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def sanitizer_says(doc: dict | None, name: str) -> dict[str, dict]:
    return {r["tool"]: r for r in (doc or {}).get("sanitize", {}).get(name, [])}


@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_bug_on_both_sides(gpu_doc, kernel, bug: Bug):
    _, kc = kernel
    c, text, _ = cell(kc, bug.cell())
    assert c["status"] == "ok", text
    # the CPU runner, on the GPU machine
    c, text, _ = cell(kc, bug.command("--backend cpu"))
    cpu = c["evalue"].split("): ", 1)[-1] if c["status"] == "error" else "passed"
    assert bug.cpu in cpu + "\n".join(c.get("traceback", [])), cpu
    # a plain run on the GPU alone, then compute-sanitizer's four tools
    c, text, _ = cell(kc, bug.command("--no-cpu-check"))
    plain = (f"{c['ename']}: {first_line(c['evalue'].split('): ', 1)[-1], 100)}" if c["status"] == "error"
             else "check passed")
    c, text, doc = cell(kc, bug.command("--sanitize"), timeout=600)
    tools = sanitizer_says(doc, bug.name)
    found = [f"{t}: {first_line(' '.join(r.get('findings', [])[:1]) or r['status'], 70)}"
             for t, r in tools.items() if r["status"] == "failed"]
    # the quick check on the GPU: the CPU runner's findings fail it, naming thread, block and line
    c, text, doc = cell(kc, bug.cell().replace(" --no-check", ""), timeout=300)
    quick = (f"{c['ename']}: {first_line(c['evalue'].split('): ', 1)[-1], 100)}" if c["status"] == "error"
             else "check passed")
    ROWS[bug.name] = (bug.name, bug.what, first_line(cpu, 160), "; ".join(found) or "nothing", plain, quick)
    assert c["status"] == "error" and c["ename"] == "KernelError", c
    assert bug.cpu in c["evalue"] + "\n".join(c.get("traceback", [])), c
    assert doc["check"]["passed"] is False and doc["check"]["tools"]["cpu-runner"]["status"] == "failed", doc["check"]
    if bug.gpu_tool and bug.gpu:
        r = tools.get(bug.gpu_tool, {})
        assert r.get("status") == "failed", (bug.gpu_tool, r)
        assert bug.gpu in " ".join(r.get("findings", [])), r
    elif not bug.gpu_tool:
        assert bug.gpu in plain, plain


def teardown_module(module) -> None:
    if not ROWS:
        return
    table = ["| bug | what | CPU runner | compute-sanitizer | plain GPU run | GPU quick check |",
             "| --- | --- | --- | --- | --- | --- |"]
    table += ["| " + " | ".join(r) + " |" for r in ROWS.values()]
    text = "\n".join(table) + "\n"
    print("\n" + text)
    path = os.environ.get("CUDALAB_BUG_TABLE")
    if path:
        with open(path, "w") as f:
            f.write(text)
