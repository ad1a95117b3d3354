"""What a notebook saves, executed under nbclient as nbconvert, papermill and nbgrader run it and saved
with nbformat: no output is an empty display (`"data": {}`). A list or sweep cell shows a progress
display that its final table follows, and a long command a line saying how far it is; each ends in
its last state, a line saying what ran and in how long, which the saved notebook keeps in its place
(an emptied display was kept as an empty output of every such cell)."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.timeout(180)
RESULT = "application/vnd.cudalab.result+json"
LIST = "%matmul --size 32 --variant naive,tiled --reps 1 --warmup 0"
SWEEP = "%stencil --size 4096 --radius 1,2,3 --reps 1 --warmup 0"
LONG = "%matmul --size 512 --variant naive --reps 100 --warmup 0 --no-check"     # about 2 s: its progress line shows


def test_no_empty_output_is_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDALAB_BACKEND", "cpu")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in (LIST, SWEEP, LONG)])
    NotebookClient(nb, kernel_name="cudalab", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)
    for i, cell in enumerate(saved.cells):
        displays = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
        assert all(o.get("data") for o in displays), f"cell {i} ({cell.source}) saved an empty output: {displays}"
        assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], cell.outputs
        results = [o for o in displays if RESULT in o.data]
        assert len(results) == 1, f"cell {i}: {len(results)} results"
        # a progress display's last state is a line saying what ran, before the result
        ended = [o.data["text/plain"] for o in displays[:displays.index(results[0])]]
        if i < 2:       # the list and the sweep: their progress display, ended
            assert any("points done in" in t for t in ended), (cell.source, ended)
    ended = [o.data["text/plain"] for o in saved.cells[2].outputs
             if o.output_type == "display_data" and RESULT not in o.data]
    assert any(t.startswith("%matmul ran for ") for t in ended), ended
