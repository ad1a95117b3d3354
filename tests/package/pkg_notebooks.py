"""The notebooks tests/package executes, and the checks of their outputs.

Shared by test_extension.py (in the test venv, with this tree's package) and test_wheel.py (in a
fresh virtualenv with the wheel installed): the same cells, the same expectations, so the wheel is
held to what the source tree does. Plain functions over nbformat notebooks; no pytest here.
"""
from __future__ import annotations

import re
import time

import nbformat
import psutil
from nbformat.v4 import new_code_cell, new_notebook

RESULT = "application/vnd.cudalab.result+json"
VEGALITE = "application/vnd.vegalite.v5+json"
SVG = "image/svg+xml"


def _notebook(cells: list[tuple[str, list[str]]], kernel: str, language: str) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": language}
    nb.cells = [new_code_cell(src, metadata={"tags": tags} if tags else {}) for src, tags in cells]
    return nb


def extension_notebook(pandas: bool = True) -> nbformat.NotebookNode:
    """A Python notebook that uses cudalab through `%load_ext cudalab`. Without pandas, the cell that
    asks for cudalab.results() must fail with the message that says how to get it."""
    cells = [
        ("%load_ext cudalab\nimport cudalab, cudalab.extension\n"
         "print('pid', cudalab.extension.kernel_pid())\nprint('package', cudalab.__file__)", []),
        ("%device", []),
        ("n = 128\n%matmul --size {n} --variant naive,tiled,cublas", []),          # {n}: IPython's expansion
        ("%assert matmul.check.passed\n%assert matmul[variant=tiled].tile == 16", []),
        ("%assert matmul[variant=tiled].gflops < 0", ["raises-exception"]),
        ("%%histo\nprogramming massively parallel processors", []),
        ("%score 1 + 2", []),
    ]
    if pandas:
        cells.append(("df = cudalab.results()\nm = df[df.magic == 'matmul']\n"
                      "print('rows', len(m), ','.join(m.variant), bool((m['time_ms.median'] > 0).all()), "
                      "sorted(set(df.magic)))", []))
    else:
        cells.append(("cudalab.results()", ["raises-exception"]))
        cells.append(("print('magics', [d['magic'] for d in cudalab.documents()])", []))
    return _notebook(cells, "python3", "python")


def kernel_notebook() -> nbformat.NotebookNode:
    """A notebook on the cudalab kernel itself."""
    return _notebook([("%device", []), ("%matmul --size 128 --variant naive,tiled,cublas", []),
                      ("%assert matmul.check.passed", []), ("%%histo\nhello world", [])], "cudalab", "cudalab")


# ---------------------------------------------------------------------- checks

def stream_text(cell, name: str = "stdout") -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == name)


def rich(cell) -> list[dict]:
    """The MIME bundles of a cell's display_data / execute_result outputs."""
    return [o.data for o in cell.outputs if o.output_type in ("display_data", "execute_result")]


def documents(cell) -> list[dict]:
    return [d[RESULT] for d in rich(cell) if RESULT in d]


def check_no_stderr(nb) -> None:
    for i, cell in enumerate(nb.cells):
        text = stream_text(cell, "stderr")
        assert not text, f"cell {i} ({cell.source.splitlines()[0]!r}) wrote to stderr:\n{text}"


def check_errors_only_where_tagged(nb) -> None:
    for i, cell in enumerate(nb.cells):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        assert bool(errors) == tagged, (f"cell {i} ({cell.source!r}): "
                                        + (f"unexpected {errors[0].ename}: {errors[0].evalue}" if errors
                                           else "raised nothing"))


def check_matmul_sweep(cell) -> None:
    """The sweep's result: one table (its progress display updated in place, not left behind), the
    document with every variant checked, and the chart as Vega-Lite and SVG (three variants, each
    point 2^22 flops: a sweep of two, or of tinier products, gets no chart)."""
    docs = documents(cell)
    assert len(docs) == 1, f"expected one matmul result document, got {len(docs)}: {cell.outputs}"
    runs = docs[0]["runs"]
    assert [r["variant"] for r in runs] == ["naive", "tiled", "cublas"]
    assert all(r["check"]["passed"] and r["m"] == 128 for r in runs)
    assert any("text/html" in d and RESULT in d for d in rich(cell))
    assert any(VEGALITE in d and SVG in d for d in rich(cell)), "the sweep's chart is missing"
    leftover = [d["text/plain"] for d in rich(cell) if re.search(r"running \d+ of \d+", d.get("text/plain", ""))]
    assert not leftover, f"the progress display was not updated in place: {leftover}"


def check_device(cell) -> None:
    docs = documents(cell)
    assert docs and docs[0]["magic"] == "device", cell.outputs
    assert any("text/html" in d for d in rich(cell))


def check_histo(cell) -> None:
    docs = documents(cell)
    assert docs and docs[-1]["magic"] == "histo", cell.outputs


def check_extension_notebook(nb, pandas: bool = True) -> int:
    """Every expectation of extension_notebook's outputs; returns the cudalab kernel's pid."""
    check_no_stderr(nb)
    check_errors_only_where_tagged(nb)
    cells = nb.cells
    pid_line = re.search(r"pid (\d+)", stream_text(cells[0]))
    assert pid_line, f"no kernel pid printed: {cells[0].outputs}"
    check_device(cells[1])
    check_matmul_sweep(cells[2])
    assert not cells[3].outputs, f"passing %assert cells show nothing: {cells[3].outputs}"
    error = [o for o in cells[4].outputs if o.output_type == "error"][0]
    assert error.ename == "AssertionError", error
    assert "is false" in error.evalue and "gflops" in error.evalue, error.evalue
    assert any("matmul[variant=tiled].gflops" in line for line in error.traceback), error.traceback
    check_histo(cells[5])
    assert [d.get("value") for d in documents(cells[6])] == [3.0], cells[6].outputs
    if pandas:
        assert "rows 3 naive,tiled,cublas True ['histo', 'matmul']" in stream_text(cells[7]), cells[7].outputs
    else:
        error = [o for o in cells[7].outputs if o.output_type == "error"][0]
        assert error.ename in ("ImportError", "ModuleNotFoundError") and "pip install pandas" in error.evalue, error
        assert "magics ['device', 'matmul', 'histo', 'score']" in stream_text(cells[8]), cells[8].outputs
    return int(pid_line.group(1))


def check_kernel_notebook(nb) -> None:
    check_no_stderr(nb)
    check_errors_only_where_tagged(nb)
    check_device(nb.cells[0])
    check_matmul_sweep(nb.cells[1])
    check_histo(nb.cells[3])


def wait_pid_gone(pid: int, timeout: float = 5.0) -> bool:
    """Whether process pid has exited (or is a zombie awaiting its reaper) within timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
