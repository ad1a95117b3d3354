"""Every lecture notebook executes cleanly under nbclient, as a student or nbgrader would run it:
no cell errors, and nothing written to the stderr stream (autograders fail such cells). The kernel
runs in the notebook's folder, as Jupyter starts it, so each notebook's `%recorded NAME` finds its
recorded GPU results (notebooks/recorded/GPU/NAME.json, written by `make record` on a GPU machine; the
newest GPU's is shown).

Where a notebook has recorded results, every device command run here on the CPU backend must show
them beside its own (a "Recorded on" note in text/plain and HTML, and the document's "recorded"
object); where it has none yet, its %recorded cell says so. The display itself is checked on a
fixture recorded by the same code path (scripts/record.py --allow-cpu) in
tests/notebooks/fixtures/.

The committed notebooks are the source version, with the exercises' solutions; every notebook with
exercises (cell metadata "cudalab": {"exercise", "role"}) is also executed as the student version that
scripts/student_notebooks.py generates (make lab opens it): there exactly the exercises' check cells
fail, each with the hint comment of the line that failed, and every other cell passes; a solution
broken in the one way its lesson is about fails its check cell on that lesson's check."""
import json
import pathlib
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

import student_notebooks  # scripts/ is on sys.path (tests/conftest.py)
from record import recording_shown  # which GPU's recording %recorded shows

REPO = pathlib.Path(__file__).parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
ROLES = ("task", "starter", "check", "hint")
HINT = re.compile(r"#\s*hint:\s*(\S.*)$", re.M)
FIXTURES = pathlib.Path(__file__).parent / "fixtures"
RESULT = "application/vnd.cudalab.result+json"
DEVICE_MAGICS = ("%coalesce", "%device", "%grid", "%histo", "%%histo", "%matmul", "%occupancy", "%reduce",
                 "%stencil", "%vecadd")


def role(cell) -> str | None:
    return cell.metadata.get("cudalab", {}).get("role")


def errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def execute(path: pathlib.Path, folder: pathlib.Path | None = None, may_fail=lambda cell: False):
    """PATH executed with the kernel in FOLDER (default: the notebook's own), every cell run; the notebook.
    No cell may write to stderr, and none may fail unless MAY_FAIL(cell) says it may."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} is committed with outputs"
    NotebookClient(nb, kernel_name="cudalab", timeout=120, allow_errors=True,
                   resources={"metadata": {"path": str(folder or path.parent)}}).execute()
    for i, cell in enumerate(nb.cells):
        for out in errors(cell):
            assert may_fail(cell), f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for out in cell.get("outputs", []):
            assert not (out.output_type == "stream" and out.name == "stderr"), f"cell {i} wrote to stderr"
    return nb


def exercises(nb) -> dict[str, dict[str, list[int]]]:
    """{exercise: {role: [cell indices]}} of NB."""
    found: dict[str, dict[str, list[int]]] = {}
    for i, cell in enumerate(nb.cells):
        mark = cell.metadata.get("cudalab", {})
        if "exercise" in mark:
            found.setdefault(mark["exercise"], {}).setdefault(mark.get("role"), []).append(i)
    return found


EXERCISE_NOTEBOOKS = [p for p in NOTEBOOKS if exercises(nbformat.read(p, as_version=4))]


def texts(cell) -> str:
    return "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.get("outputs", []))


def device_cells(nb):
    """(index, cell) of the code cells that run a device command (--show-source runs nothing)."""
    return [(i, c) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and any(l.split(" ")[0] in DEVICE_MAGICS for l in c.source.splitlines())
            and "--kernel" not in c.source and "--show-source" not in c.source]


def check_recorded_display(nb, recorded: dict, where: str, skip=lambda cell: False):
    """Each device command of NB shows RECORDED's results beside its own: in text, HTML and its document.
    Not checked: cells SKIP(cell) names, and an exercise's cells whose commands the recording has none
    of (the exercise is newer than the recording: make record on a GPU adds them)."""
    label = f"Recorded on {recorded['device']['name']}"
    keys = {c["key"] for c in recorded["commands"]}
    for i, cell in device_cells(nb):
        commands = [l.split("#")[0].strip() for l in cell.source.splitlines()]
        if skip(cell) or (role(cell) and not keys.intersection(commands)):
            continue
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


@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=[p.name for p in EXERCISE_NOTEBOOKS])
def test_exercises_follow_the_conventions(path):
    """Each exercise: a task, a starter %%kernel cell holding a solution region, check cells whose every
    command line carries its hint, and a <details> hint; a --show-source cell after an exercise of its family."""
    nb = nbformat.read(path, as_version=4)
    spans = {}                                      # exercise -> (its first cell, its last, its family)
    for ex, cells in exercises(nb).items():
        assert set(cells) == set(ROLES), f"{path.name} exercise {ex}: roles {sorted(cells)}"
        ids = [i for ids in cells.values() for i in ids]
        family = re.search(r"--for (\w+)", nb.cells[cells["starter"][0]].source)
        spans[ex] = (min(ids), max(ids), family.group(1) if family else None)
        for i in cells["starter"]:
            src = nb.cells[i].source
            assert src.startswith("%%kernel") and "--no-check" in src.splitlines()[0], (
                f"{path.name} {ex}: starter cell {i} is not a %%kernel --no-check cell (its stub would fail the "
                f"quick check, and in the student version only check cells may fail)")
            assert student_notebooks.BEGIN in src, f"{ex}: starter cell {i} has no solution region"
        for i in cells["check"]:
            for line in nb.cells[i].source.splitlines():
                assert line.startswith("#") or HINT.search(line), f"{ex}: check cell {i}: no hint on {line!r}"
        for i in cells["hint"]:
            assert nb.cells[i].source.startswith("<details><summary>Hint</summary>"), (
                f"{path.name} {ex}: hint cell {i} does not open with <details><summary>Hint</summary>")
        for role_ in ("task", "hint"):
            assert all(nb.cells[i].cell_type == "markdown" for i in cells[role_])
    # a built-in kernel's source is shown after the student wrote theirs: after an exercise of its family,
    # never inside one
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and "--show-source" in c.source:
            family = c.source.lstrip("%").split()[0]
            assert not any(a <= i <= b for a, b, _ in spans.values()), f"{path.name}: --show-source cell {i} inside an exercise"
            assert any(b < i and f == family for _, b, f in spans.values()), (
                f"{path.name}: --show-source cell {i} comes before any exercise of %{family}")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("path", EXERCISE_NOTEBOOKS, ids=[p.name for p in EXERCISE_NOTEBOOKS])
def test_student_version_fails_only_its_checks_with_their_hints(path, tmp_path):
    """The generated student version: no solution left, every check cell of the exercises fails (a
    stub computes nothing) and its traceback quotes the hint of the line that failed; every other
    cell passes, the recorded results found as in the source's folder."""
    out = tmp_path / "notebooks"
    assert student_notebooks.main(["--src", str(REPO / "notebooks"), "--out", str(out), str(path)]) == 0
    source = nbformat.read(path, as_version=4)
    nb = execute(out / path.name, may_fail=lambda cell: role(cell) == "check")
    for i, (cell, original) in enumerate(zip(nb.cells, source.cells)):
        assert student_notebooks.BEGIN not in cell.source and student_notebooks.END not in cell.source
        if role(cell) == "starter":
            assert cell.source != original.source and "YOUR CODE HERE" in cell.source, f"cell {i}"
        if role(cell) != "check":
            continue
        failed = errors(cell)
        assert failed, f"cell {i} ({cell.metadata['cudalab']['exercise']}) passes in the student version"
        traceback = "\n".join(failed[0].traceback)
        quoted = HINT.search(traceback.splitlines()[-1]) or HINT.search(traceback)
        assert quoted, f"cell {i}: its traceback shows no hint:\n{traceback}"
        hints = [m.group(1) for m in map(HINT.search, cell.source.splitlines()) if m]
        assert any(h in quoted.group(1) or quoted.group(1) in h for h in hints), traceback
    recorded = path.parent / "recorded" / f"{path.stem}.json"
    if recorded.exists():
        check_recorded_display(nb, json.loads(recorded.read_text()), "student " + path.name,
                               skip=lambda cell: role(cell) == "check")


# Solutions broken in the one way each lesson is about, the output still right: (notebook, exercise,
# a line of the solution, what replaces it, the lesson check that must fail).
LESSON_BREAKERS = [
    ("02-histogram", "privatise", "atomicAdd(&bins[pos / 4], 1u);", "atomicAdd(&histo[pos / 4], 1u);",
     "global_atomics_per_byte"),           # counts in global memory, the shared bins a decoy
    ("03-matrix-multiplication", "tiled", "sum += As[ty][i] * Bs[i][tx];",
     "if (row < M && col < N && p * TILE + i < K) sum += A[row * K + p * TILE + i] * B[(p * TILE + i) * N + col];",
     "global_loads_per_fma"),              # loads the tiles, then multiplies from global memory
    ("03-matrix-multiplication", "corner", "Bs[tx][ty] = bt_row < N && kk < K ? Bt[bt_row * K + kk] : 0.0f;",
     "Bs[ty][tx] = col < N && p * TILE + ty < K ? Bt[col * K + p * TILE + ty] : 0.0f;",
     "load_sectors_per_request"),          # B's tile read column-wise from Bt: K floats apart across a warp
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("notebook,ex,line,broken,lesson", LESSON_BREAKERS, ids=[c[1] for c in LESSON_BREAKERS])
def test_exercise_checks_grade_the_lesson(notebook, ex, line, broken, lesson, tmp_path):
    """A kernel that computes the right result without what the exercise teaches fails the exercise's
    check cell on that lesson's check, quoting its hint."""
    source = nbformat.read(REPO / "notebooks" / f"{notebook}.ipynb", as_version=4)
    cells = exercises(source)[ex]
    starter, check = source.cells[cells["starter"][0]], source.cells[cells["check"][0]]
    assert starter.source.count(line) == 1, f"{notebook} {ex}: the solution no longer has {line!r}"
    nb = nbformat.v4.new_notebook(metadata=source.metadata)
    nb.cells = [nbformat.v4.new_code_cell(starter.source.replace(line, broken)), nbformat.v4.new_code_cell(check.source)]
    NotebookClient(nb, kernel_name="cudalab", timeout=120, allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert not errors(nb.cells[0]), errors(nb.cells[0])
    failed = errors(nb.cells[1])
    assert failed, f"{ex}: the check cell passes a kernel that computes without the lesson"
    where = failed[0].traceback[-1] if failed[0].traceback else failed[0].evalue
    assert f"lesson.{lesson}.passed" in "\n".join(failed[0].traceback) and "# hint:" in "\n".join(failed[0].traceback), \
        f"{ex}: failed elsewhere: {failed[0].ename}: {failed[0].evalue} ({where})"
