"""The kernel-writing problem sets of the sample nbgrader course (ps2 "write kernels", ps3 "stencils and
coalescing") graded end to end with the cudalab kernel.

Their answers are %%kernel cells, each with a solution region between C++ comment markers. In a
temporary copy of the course, `nbgrader generate_assignment` must leave each kernel cell's %%kernel
line and signature with the C++ stub `// YOUR CODE HERE` in the body (KernelCellStubs in
nbgrader_config.py), a stub that compiles, and drop the hidden tests; `nbgrader autograde` must then
give the committed samples (and the release itself, "nobody") exactly the scores of psets.py's
tables for the backend %device reports, with the feedback a teacher expects in each test cell.

Each kernel has parts graded by a lesson check of a right run (shared memory read, loads per
multiply-add or per output, atomics per byte, divergent steps, sectors per request: the CPU runner
measures them on either backend), a part that runs it at small awkward sizes (on a GPU, or on the
CPU runner where there is none, with the same scores) and GPU-only parts (large sizes, speed against
the built-in kernel), whose test cells begin with `%assert device.backend == 'cuda'` and so score 0,
saying why, without a GPU. A family this build cannot take student kernels for builds nothing: its
parts expect 0. The grading environment is grade_samples.py's, which `make grade` uses too:
CUDALAB_KERNEL_TIMEOUT=2 ends erin's endless loops.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from conftest import REPO, kernel_binary
from grade_samples import (backend_of, by_grade_id, copy_course, grading_env, locked_cells, nbgrader,
                           student_families)
from psets import GPU_FIRST_LINE, PS2, PSETS, Pset

# serial: the samples' CPU-runner launches have a 2 s limit, which graders beside them would push past
pytestmark = [pytest.mark.timeout(600), pytest.mark.serial]

COURSE = REPO / "notebooks" / "assignments"


def source_of(pset: Pset) -> nbformat.NotebookNode:
    return nbformat.read(COURSE / "source" / pset.assignment / f"{pset.notebook}.ipynb", as_version=4)


@pytest.fixture(scope="module", params=PSETS, ids=lambda p: p.assignment)
def graded(request, tmp_path_factory):
    """A copy of the course with one problem set generated and autograded: (pset, root, backend, families)."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -r requirements-grade.txt")
    pset = request.param
    out = tmp_path_factory.mktemp(f"grade-{pset.assignment}")
    env = grading_env(kernel_binary(), out)
    root = copy_course(out / "assignments")
    backend, families = backend_of(kernel_binary(), env), student_families(kernel_binary(), env)
    nbgrader(["generate_assignment", pset.assignment], root, env)
    folder = root / "submitted" / "nobody" / pset.assignment
    folder.mkdir(parents=True)
    nbformat.write(pset.read_release(root), folder / f"{pset.notebook}.ipynb")
    nbgrader(["autograde", pset.assignment], root, env)
    return pset, root, backend, families


def test_release_has_compiling_stubs_and_no_hidden_tests(graded):
    pset, root, _, _ = graded
    nb = pset.read_release(root)
    assert nb.metadata.kernelspec.name == "cudalab" and nb.metadata.kernelspec.language == "cudalab"
    source = by_grade_id(source_of(pset))
    cells = by_grade_id(nb)
    for gid_, (family, name) in pset.kernel_cells.items():
        text = cells[gid_].source
        # the %%kernel line, comments and signature stay; the body is the indented C++ stub
        head = source[gid_].source.split("    // BEGIN SOLUTION")[0]
        assert text == head + "    // YOUR CODE HERE\n}", f"{gid_}: {text!r}"
        assert text.startswith(f"%%kernel --for {family} ") and f" --name {name} " in text.split("\n")[0] + " "
        assert "__shared__" not in text and "__syncthreads" not in text, f"{gid_}: a solution leaked"
    text = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "# YOUR CODE HERE\n"):
        assert marker not in text, f"{marker!r} in the release notebook"
    assert "--seed" not in text, "a hidden seed leaked"
    for gid_, points in pset.max_points.items():
        assert cells[gid_].metadata.nbgrader["points"] == points
        # the visible tests stay, line for line
        visible = source[gid_].source.split("### BEGIN HIDDEN TESTS")[0]
        assert cells[gid_].source.startswith(visible.rstrip("\n")), gid_
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_stubs_compile(graded):
    """The release handed in as it is ("nobody"): each kernel cell compiles (a kernel result, no
    CompileError), and every part scores 0 (psets.nobody)."""
    pset, root, _, families = graded
    cells = by_grade_id(pset.read_autograded(root, "nobody"))
    for gid_, (family, name) in pset.kernel_cells.items():
        if family not in families:
            continue
        outs = cells[gid_].outputs
        assert not [o for o in outs if o.output_type == "error"], f"{gid_}: {json.dumps(outs)[:800]}"
        docs = [o.data["application/vnd.cudalab.result+json"] for o in outs
                if "application/vnd.cudalab.result+json" in o.get("data", {})]
        assert [d.get("name") for d in docs] == [name], json.dumps(outs)[:800]


def test_source_cells(graded):
    """Only the kernel cells are the student's; every test cell ends in %assert (its last command's
    result would be read as the score), a GPU-only one begins with the backend check, a lesson part
    runs the kernel in its own cell (a result of the student's own cells never answers it) and
    asserts a check.lesson field of that run; the notebook names its recording and declares the
    assignment's graded families."""
    pset = graded[0]
    tests = {}
    source = pset.assignment, pset.notebook
    for cell, meta in locked_cells(COURSE / "source" / source[0] / f"{source[1]}.ipynb", pset.kernel_cells):
        if not meta["grade"]:
            continue
        tests[meta["grade_id"]] = meta["points"]
        lines = [ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")]
        assert lines[-1].startswith("%assert "), cell.source
        assert (lines[0] == GPU_FIRST_LINE) == (meta["grade_id"] in pset.gpu_only), cell.source
        if meta["grade_id"] in pset.lesson:
            family, name = pset.kernel_cells[meta["grade_id"].split("-")[0] + "-kernel"]
            assert lines[0].startswith(f"%{family} ") and f"--variant {name}" in lines[0], cell.source
            assert f"{family}[variant={name}].check.lesson." in lines[-1], cell.source
    assert tests == pset.max_points
    families = list(dict.fromkeys(f for f, _ in pset.kernel_cells.values()))   # in the notebook's order
    first = [c for c in source_of(pset).cells if c.cell_type == "code"][0]
    # its recorded GPU results (make record), then the assignment's graded families
    assert first.source == (f"%recorded {pset.notebook}\n"
                            f"%assignment {pset.assignment} --graded {','.join(families)}"), first.source


def test_committed_submissions_are_the_release(graded):
    """Each sample is the release with its kernel cells filled in: no score of theirs depends on
    autograde writing a stale question or test cell over."""
    pset, root, _, _ = graded
    release = by_grade_id(pset.read_release(root))
    committed = sorted(p.parent.name for p in COURSE.glob(f"submitted/*/{pset.assignment}"))
    assert committed == sorted(s for s in pset.samples if s != "nobody"), "a sample without a row in psets.py"
    for student in committed:
        cells = by_grade_id(nbformat.read(COURSE / "submitted" / student / pset.assignment / f"{pset.notebook}.ipynb",
                                          as_version=4))
        assert list(cells) == list(release), student
        for gid_, cell in cells.items():
            assert cell.metadata == release[gid_].metadata, f"{student} {gid_}"
            if gid_ not in pset.kernel_cells:
                assert cell.source == release[gid_].source, f"{student} {gid_}"
            else:
                # the %%kernel line, comments and signature as released; the student's body inside
                head = release[gid_].source.split("    // YOUR CODE HERE\n}")[0]
                assert cell.source.startswith(head) and cell.source.endswith("\n}"), f"{student} {gid_}"


def test_gradebook_scores(graded):
    from nbgrader.api import Gradebook

    pset, root, backend, families = graded
    wrong = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student, expected in pset.expected_scores(backend, families).items():
            nb = gb.find_submission_notebook(pset.notebook, pset.assignment, student)
            grades = {g.name: (g.auto_score, g.max_score, g.needs_manual_grade) for g in nb.grades}
            want = {name: (score, pset.max_points[name], False) for name, score in expected.items()}
            if grades != want or gb.find_submission(pset.assignment, student).score != sum(expected.values()):
                wrong[student] = {c: (grades.get(c), w) for c, w in want.items() if grades.get(c) != w}
    assert not wrong, f"{pset.assignment} on {backend}: (got, expected) {wrong}"


def test_feedback(graded):
    """Each test cell that fails shows why (the error a teacher expects), nothing is written to stderr,
    and the GPU-only parts say that they need a GPU."""
    pset, root, backend, families = graded
    problems = []
    for student, want in pset.expected_errors(backend, families).items():
        cells = by_grade_id(pset.read_autograded(root, student))
        for gid_ in pset.max_points:
            outs = cells[gid_].outputs
            where = f"{student} {gid_}"
            if [o for o in outs if o.output_type == "stream" and o.name == "stderr"]:
                problems.append(f"{where}: stderr")
            errors = [o for o in outs if o.output_type == "error"]
            if [o for o in outs if o.output_type == "execute_result"]:
                problems.append(f"{where}: an execute_result would be read as the score")
            expected = want.get(gid_)
            got = [(e.ename, e.evalue[:200]) for e in errors]
            if expected is None:
                if errors:
                    problems.append(f"{where}: {got}, expected no error")
                continue
            if not (len(errors) == 1 and errors[0].ename in (expected if isinstance(expected, tuple) else (expected,))):
                problems.append(f"{where}: {got}, expected {expected}")
                continue
            if gid_ in pset.gpu_only and backend != "cuda" and errors[0].ename == "AssertionError":
                assert errors[0].evalue.startswith("device.backend == 'cuda': 'cpu' == 'cuda' is false"), errors[0].evalue
                assert any("a GPU-only part: without a GPU it scores 0" in line for line in errors[0].traceback)
    assert not problems, "\n".join(problems)


def test_compile_error_in_feedback(graded):
    """dave's misspelt barrier (ps2): the kernel cell shows the compiler's error at his line, and Q1's
    tests say that there is no such kernel."""
    pset, root, _, _ = graded
    if pset is not PS2:
        pytest.skip("ps2's compile error")
    cells = by_grade_id(pset.read_autograded(root, "dave"))
    errors = [o for o in cells["q1-kernel"].outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CompileError"], json.dumps(cells["q1-kernel"].outputs)[:800]
    text = "\n".join([errors[0].evalue, *errors[0].traceback])
    assert 'line 17: error: identifier "__syncthread" is undefined' in text, text
    builds = [o for o in cells["q1-builds"].outputs if o.output_type == "error"]
    assert builds[0].evalue.startswith("unknown value 'mytiled'"), builds[0].evalue
