"""Every lecture notebook executes cleanly under nbclient, as a student or nbgrader would run it:
no cell errors, and nothing written to the stderr stream (autograders fail such cells). The kernel
runs in the notebook's folder, as Jupyter starts it, so each notebook's `%recorded NAME` finds its
recorded GPU results (notebooks/recorded/GPU/NAME.json, written by `make record` on a GPU machine; the
newest GPU's is shown).

Where a notebook has recorded results, every device command run here on the CPU backend must show
them beside its own (a "Recorded on" note in text/plain and HTML, and the document's "recorded"
object); where it has none yet, its %recorded cell says so. The display itself is checked on a
fixture recorded by the same code path (scripts/record.py --allow-cpu) in
tests/notebooks/fixtures/."""
import json
import pathlib
import shutil
import sys

import nbformat
import pytest
from nbclient import NotebookClient

REPO = pathlib.Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from record import recording_shown  # noqa: E402  (which GPU's recording %recorded shows)

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
FIXTURES = pathlib.Path(__file__).parent / "fixtures"
RESULT = "application/vnd.cudalab.result+json"
DEVICE_MAGICS = ("%coalesce", "%device", "%grid", "%histo", "%%histo", "%matmul", "%occupancy", "%reduce",
                 "%stencil", "%vecadd")


def execute(path: pathlib.Path, folder: pathlib.Path | None = None):
    """PATH executed with the kernel in FOLDER (default: the notebook's own); the notebook."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} is committed with outputs"
    NotebookClient(nb, kernel_name="cudalab", timeout=120,
                   resources={"metadata": {"path": str(folder or path.parent)}}).execute()
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
            assert not (out.output_type == "stream" and out.name == "stderr"), f"cell {i} wrote to stderr"
    return nb


def texts(cell) -> str:
    return "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.get("outputs", []))


def device_cells(nb):
    """(index, cell) of the code cells that run a device command."""
    return [(i, c) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and any(l.split(" ")[0] in DEVICE_MAGICS for l in c.source.splitlines())
            and "--kernel" not in c.source]


def check_recorded_display(nb, recorded: dict, where: str):
    """Each device command of NB shows RECORDED's results beside its own: in text, HTML and its document."""
    label = f"Recorded on {recorded['device']['name']}"
    for i, cell in device_cells(nb):
        docs = [o["data"][RESULT] for o in cell.outputs if RESULT in o.get("data", {})]
        assert docs, f"{where} cell {i} shows no result"
        assert label in texts(cell), f"{where} cell {i} does not show its recorded results"
        html = "".join(o["data"].get("text/html", "") for o in cell.outputs if "data" in o)
        assert label in html, f"{where} cell {i}: no recorded results in its HTML"
        rec = [d["recorded"] for d in docs if "recorded" in d]
        assert rec and rec[0]["date"] == recorded["date"] and rec[0]["results"], f"{where} cell {i}: {docs[0].keys()}"
        assert rec[0]["device"]["name"] == recorded["device"]["name"]


@pytest.mark.timeout(300)          # a notebook of a few dozen cells; ASan and a busy CI machine slow it
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = execute(path)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source == f"%recorded {path.stem}", f"{path.name}: its first code cell must name its recording"
    recorded = recording_shown(path)
    if recorded:
        check_recorded_display(nb, json.loads(recorded.read_text()), path.name)
    else:
        assert "No recorded GPU results for this notebook yet" in texts(first)
        gpu_checks = any(c.cell_type == "code" and "gpu." in c.source for c in nb.cells)
        assert not gpu_checks or "not checked here" in "\n".join(texts(c) for c in nb.cells)


def test_recorded_results_shown_beside_cpu_runs(tmp_path):
    """The fixture's recording (CPU-recorded, labelled so) is shown beside every command, in text, HTML
    and the document, and its %assert cells with gpu. and recorded. names hold against it."""
    shutil.copy(FIXTURES / "mini-recorded.ipynb", tmp_path)
    shutil.copytree(FIXTURES / "recorded", tmp_path / "recorded")
    nb = execute(tmp_path / "mini-recorded.ipynb")
    recorded = json.loads((FIXTURES / "recorded" / "mini-recorded.json").read_text())
    check_recorded_display(nb, recorded, "mini-recorded")
    assert "(the CPU backend, not a GPU)" in texts(nb.cells[2])
    assert "not checked here" not in "\n".join(texts(c) for c in nb.cells)
