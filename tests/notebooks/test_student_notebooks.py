"""scripts/student_notebooks.py, the student version's generator, at the unit level: what a solution
region becomes in a %%kernel cell and in a magic cell, what stays, the refusal of markers that do not
pair up (naming the cell, writing nothing), outputs cleared, recorded/ reachable from the output, and
its stubs the same as nbgrader's for the problem sets. (tests/notebooks/test_notebooks.py executes
the generated notebooks.)"""
import json
import pathlib
import runpy

import pytest

import student_notebooks as sn  # scripts/ is on sys.path (tests/conftest.py)

REPO = pathlib.Path(__file__).parents[2]

KERNEL_CELL = """%%kernel --for vecadd --name myadd
// one thread per element
__global__ void myadd(const float *A, const float *B, float *C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // BEGIN SOLUTION
    if (i < n)
        C[i] = A[i] + B[i];
    // END SOLUTION
}"""

MAGIC_CELL = """# the grid of the picture
### BEGIN SOLUTION
%grid --data 76x62 --block 16x16
### END SOLUTION
%echo done"""


def notebook(*sources, outputs=True):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# BEGIN SOLUTION is prose here"}]
    for s in sources:
        cells.append({"cell_type": "code", "metadata": {"cudalab": {"exercise": "ex", "role": "starter"}},
                      "execution_count": 3 if outputs else None, "source": s,
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": "old"}] if outputs else []})
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_kernel_region_becomes_the_cpp_stub_at_its_indentation():
    out = sn.student_notebook(notebook(KERNEL_CELL), "x.ipynb")["cells"][1]
    lines = KERNEL_CELL.split("\n")
    assert out["source"] == "\n".join(lines[:5] + ["    // YOUR CODE HERE", "}"])
    assert out["outputs"] == [] and out["execution_count"] is None
    assert out["metadata"] == {"cudalab": {"exercise": "ex", "role": "starter"}}


def test_magic_region_becomes_the_comment_stub_and_the_rest_stays():
    out = sn.student_notebook(notebook(MAGIC_CELL), "x.ipynb")["cells"][1]["source"]
    assert out == "# the grid of the picture\n# YOUR CODE HERE\n%echo done"


def test_source_as_a_list_of_lines_and_untouched_cells():
    nb = notebook(KERNEL_CELL.splitlines(keepends=True), "%device")
    student = sn.student_notebook(nb, "x.ipynb")
    assert "BEGIN" not in student["cells"][1]["source"] and "C[i] = A[i]" not in student["cells"][1]["source"]
    assert student["cells"][2]["source"] == "%device" and student["cells"][2]["outputs"] == []
    assert student["cells"][0] == nb["cells"][0], "markdown is kept as it is"
    assert nb["cells"][1]["outputs"], "the source notebook is not changed"


@pytest.mark.parametrize("broken,why", [
    (KERNEL_CELL.replace("    // END SOLUTION\n", ""), "begun at line 6 is not ended"),
    (KERNEL_CELL.replace("    // BEGIN SOLUTION\n", ""), "line 8 ends a solution region that was not begun"),
    (MAGIC_CELL.replace("%grid", "### BEGIN SOLUTION\n%grid"), "line 3 begins a solution region inside the one begun at line 2"),
])
def test_unbalanced_region_is_refused_naming_the_cell(tmp_path, capsys, broken, why):
    src = tmp_path / "src"
    src.mkdir()
    (src / "01-a.ipynb").write_text(json.dumps(notebook(KERNEL_CELL)))
    (src / "02-b.ipynb").write_text(json.dumps(notebook("%device", broken)))
    assert sn.main(["--src", str(src), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"02-b.ipynb cell 2 (exercise ex, starter): " in err and why in err, err
    assert not (tmp_path / "out").exists(), "nothing is written when a notebook is refused"


def test_writes_every_lecture_notebook_and_links_recorded(tmp_path):
    src, out = tmp_path / "notebooks", tmp_path / "build" / "notebooks"
    (src / "recorded").mkdir(parents=True)
    (src / "recorded" / "01-a.json").write_text("{}")
    (src / "01-a.ipynb").write_text(json.dumps(notebook(KERNEL_CELL, MAGIC_CELL)))
    (src / "02-b.ipynb").write_text(json.dumps(notebook("%device")))
    (src / "notes.ipynb").write_text("not a lecture notebook")
    for _ in range(2):                     # a second run finds its link and files in place
        assert sn.main(["--src", str(src), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".generated.json", "01-a.ipynb", "02-b.ipynb", "recorded"]
    assert (out / "recorded").is_symlink() and not pathlib.Path((out / "recorded").readlink()).is_absolute()
    assert (out / "recorded" / "01-a.json").read_text() == "{}"
    student = json.loads((out / "01-a.ipynb").read_text())
    assert [c["source"].count("YOUR CODE HERE") for c in student["cells"][1:]] == [1, 1]
    assert all(c.get("outputs") in (None, []) for c in student["cells"])


def test_a_students_edits_are_kept_and_the_rest_regenerated(tmp_path, capsys):
    src, out = tmp_path / "notebooks", tmp_path / "out"
    src.mkdir()
    (src / "01-a.ipynb").write_text(json.dumps(notebook(KERNEL_CELL)))
    (src / "02-b.ipynb").write_text(json.dumps(notebook("%device")))
    assert sn.main(["--src", str(src), "--out", str(out)]) == 0
    edited = (out / "01-a.ipynb").read_text().replace("// YOUR CODE HERE", "C[i] = 1;")
    (out / "01-a.ipynb").write_text(edited)
    (src / "01-a.ipynb").write_text(json.dumps(notebook(KERNEL_CELL.replace("one thread", "a thread"))))
    (src / "02-b.ipynb").write_text(json.dumps(notebook("%device --brief")))
    assert sn.main(["--src", str(src), "--out", str(out)]) == 0
    assert (out / "01-a.ipynb").read_text() == edited
    assert "kept " + str(out / "01-a.ipynb") + ": edited since it was generated" in capsys.readouterr().err
    assert json.loads((out / "02-b.ipynb").read_text())["cells"][1]["source"] == "%device --brief"
    (out / "01-a.ipynb").unlink()
    assert sn.main(["--src", str(src), "--out", str(out)]) == 0
    assert "a thread" in (out / "01-a.ipynb").read_text()


def test_a_folder_in_place_of_the_link_is_refused(tmp_path):
    src, out = tmp_path / "notebooks", tmp_path / "out"
    (src / "recorded").mkdir(parents=True)
    (out / "recorded").mkdir(parents=True)
    (src / "01-a.ipynb").write_text(json.dumps(notebook("%device")))
    with pytest.raises(SystemExit, match="is not a link"):
        sn.main(["--src", str(src), "--out", str(out)])


def test_stubs_are_nbgraders_for_the_problem_sets():
    pytest.importorskip("nbgrader")
    from traitlets.config import Config
    config = Config()
    runpy.run_path(str(REPO / "notebooks" / "assignments" / "nbgrader_config.py"),
                   init_globals={"get_config": lambda: config})
    assert config.ClearSolutions.code_stub["cuda"] == sn.KERNEL_STUB
    assert config.ClearSolutions.code_stub["cudalab"] == sn.MAGIC_STUB
    assert (config.ClearSolutions.begin_solution_delimeter, config.ClearSolutions.end_solution_delimeter) == (sn.BEGIN, sn.END)
