"""ps2 of the sample nbgrader course ("write kernels") graded end to end with the cudalab kernel.

ps2's answers are %%kernel cells: a tiled matmul (mytiled), a privatised histogram (myhisto) and a
convergent reduction (myreduce), each with a solution region between C++ comment markers. In a
temporary copy of the course, `nbgrader generate_assignment ps2` must leave each kernel cell's
%%kernel line and signature with the C++ stub `// YOUR CODE HERE` in the body (KernelCellStubs in
nbgrader_config.py), a stub that compiles, and drop the hidden tests; `nbgrader autograde ps2` must
then give the committed samples (and the release itself, "nobody") exactly the scores of
EXPECTED_GPU or EXPECTED_CPU, chosen by the backend %device reports, with the feedback a teacher
expects in each test cell (EXPECTED_ERRORS).

Each kernel has a part that needs only the compiler (it builds, with shared memory: 1 point), a part
that runs it at small awkward sizes (2 points; on a GPU, or on the CPU runner where there is none,
with the same scores) and GPU-only parts (large sizes, speed against the built-in kernel), whose test cells begin with
`%assert device.backend == 'cuda'` and so score 0, saying why, without a GPU. A family this build
cannot take student kernels for (histo and reduce come from other branches) builds nothing: its
parts expect 0 (expected_scores). The grading environment is grade_samples.py's, which `make grade`
uses too: CUDALAB_KERNEL_TIMEOUT=2 ends erin's endless loop.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from conftest import REPO, kernel_binary
from grade_samples import (backend_of, by_grade_id, copy_course, grading_env, locked_cells, nbgrader,
                           student_families)

pytestmark = pytest.mark.timeout(300)

COURSE = REPO / "notebooks" / "assignments"
ASSIGNMENT = "ps2"
NOTEBOOK = "write-kernels"
KERNEL_CELLS = {"q1-kernel": ("matmul", "mytiled"), "q2-kernel": ("histo", "myhisto"),
                "q3-kernel": ("reduce", "myreduce")}
MAX_POINTS = {
    "q1-builds": 1.0, "q1-small": 2.0, "q1-large": 1.0, "q1-speed": 1.0,
    "q2-builds": 1.0, "q2-small": 2.0, "q2-speed": 1.0,
    "q3-builds": 1.0, "q3-small": 2.0, "q3-speed": 1.0,
}
GPU_ONLY = ("q1-large", "q1-speed", "q2-speed", "q3-speed")
FULL = dict(MAX_POINTS)
Q1_ONLY_BUILDS = dict(FULL, **{"q1-small": 0.0, "q1-large": 0.0, "q1-speed": 0.0})

# On a GPU (backend "cuda"). Every sample but alice has one bug, in mytiled; its histogram and
# reduction are alice's.
EXPECTED_GPU = {
    "alice": FULL,                                  # 13 of 13
    # no __syncthreads() between loading the tiles and reading them: compiles, with shared memory
    # and a barrier, but reads tile elements other warps have not written yet: CheckError
    "bob": Q1_ONLY_BUILDS,                          # 9
    # no bounds checks: right at multiples of TILE only; at 67x33x129 it reads past the rows of A
    # and writes past C: CheckError (or CudaError where the reads leave the allocation)
    "carol": Q1_ONLY_BUILDS,                        # 9
    # __syncthread() (misspelt): CompileError under the kernel cell; nothing of Q1 exists
    "dave": dict(FULL, **{"q1-builds": 0.0, "q1-small": 0.0, "q1-large": 0.0, "q1-speed": 0.0}),   # 8
    # the tile loop never advances: each run ends at the launch limit, TimeoutError
    "erin": Q1_ONLY_BUILDS,                         # 9
    # the release as handed out: the stubs compile, without shared memory, and compute nothing
    "nobody": {cell: 0.0 for cell in MAX_POINTS},   # 0
}
# Without a GPU (backend "cpu"): the kernels run on the CPU runner, so every part but the GPU-only ones
# scores as on a GPU, bug for bug; the GPU-only parts fail their first line (`%assert device.backend ==
# 'cuda'`) and score 0, saying why.
EXPECTED_CPU = {student: dict(scores, **{c: 0.0 for c in GPU_ONLY}) for student, scores in EXPECTED_GPU.items()}
# The error each failing test cell shows (ename; a tuple: any of them), where it differs from
# "no error". Without a GPU the runner explains the same bugs: bob's missing barrier is a race on
# shared memory, carol's missing bounds checks an access past A and C (KernelError), erin's loop ends
# at the launch limit (TimeoutError).
EXPECTED_ERRORS_CPU = {student: {c: "AssertionError" for c in GPU_ONLY} for student in EXPECTED_CPU}
EXPECTED_ERRORS_CPU["bob"]["q1-small"] = "KernelError"
EXPECTED_ERRORS_CPU["carol"]["q1-small"] = "KernelError"
EXPECTED_ERRORS_CPU["erin"]["q1-small"] = "TimeoutError"
# dave's kernel does not exist: a cell that names it is refused before its first line runs
EXPECTED_ERRORS_CPU["dave"].update({"q1-builds": "LookupError", "q1-small": "UsageError", "q1-large": "UsageError",
                                    "q1-speed": "UsageError"})
EXPECTED_ERRORS_CPU["nobody"].update({c: "AssertionError" for c in ("q1-builds", "q2-builds", "q3-builds")})
EXPECTED_ERRORS_CPU["nobody"].update({c: "CheckError" for c in ("q1-small", "q2-small", "q3-small")})
# On a GPU:
_Q1_RUNS = ("q1-small", "q1-large", "q1-speed")
EXPECTED_ERRORS_GPU = {
    "alice": {},
    "bob": {c: "CheckError" for c in _Q1_RUNS},
    "carol": {c: ("CheckError", "CudaError") for c in _Q1_RUNS},
    "dave": dict({c: "UsageError" for c in _Q1_RUNS}, **{"q1-builds": "LookupError"}),
    "erin": {c: "TimeoutError" for c in _Q1_RUNS},
    "nobody": dict({c: "AssertionError" for c in ("q1-builds", "q2-builds", "q3-builds")},
                   **{c: "CheckError" for c in MAX_POINTS if not c.endswith("-builds")}),
}


def family_parts(family: str) -> list[str]:
    q = next(cell.split("-")[0] for cell, (f, _) in KERNEL_CELLS.items() if f == family)
    return [cell for cell in MAX_POINTS if cell.startswith(q + "-")]


def expected_scores(backend: str, families: set[str]) -> dict[str, dict[str, float]]:
    """The scores of every sample on this backend, in a build whose %%kernel takes kernels for
    `families`: the parts of a family it does not know are 0 (the kernel cell is a UsageError)."""
    table = EXPECTED_GPU if backend == "cuda" else EXPECTED_CPU
    scores = {student: dict(s) for student, s in table.items()}
    for family, _ in KERNEL_CELLS.values():
        if family not in families:
            for s in scores.values():
                s.update({cell: 0.0 for cell in family_parts(family)})
    return scores


def expected_errors(backend: str, families: set[str]) -> dict[str, dict[str, object]]:
    table = EXPECTED_ERRORS_GPU if backend == "cuda" else EXPECTED_ERRORS_CPU
    errors = {student: dict(e) for student, e in table.items()}
    for family, _ in KERNEL_CELLS.values():
        if family not in families:
            for e in errors.values():
                # the variant is unknown: a cell that names it is refused before its first line runs
                e.update({cell: "LookupError" if cell.endswith("-builds") else "UsageError"
                          for cell in family_parts(family)})
    return errors


def read_release(root):
    return nbformat.read(root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


def read_autograded(root, student):
    return nbformat.read(root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A copy of the course with ps2 generated and autograded: (root, backend, families)."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -r requirements-grade.txt")
    out = tmp_path_factory.mktemp("grade-ps2")
    env = grading_env(kernel_binary(), out)
    root = copy_course(out / "assignments")
    backend, families = backend_of(kernel_binary(), env), student_families(kernel_binary(), env)
    nbgrader(["generate_assignment", ASSIGNMENT], root, env)
    folder = root / "submitted" / "nobody" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(read_release(root), folder / f"{NOTEBOOK}.ipynb")
    nbgrader(["autograde", ASSIGNMENT], root, env)
    return root, backend, families


def test_release_has_compiling_stubs_and_no_hidden_tests(graded):
    root, _, _ = graded
    nb = read_release(root)
    assert nb.metadata.kernelspec.name == "cudalab" and nb.metadata.kernelspec.language == "cudalab"
    source = by_grade_id(nbformat.read(COURSE / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4))
    cells = by_grade_id(nb)
    for gid_, (family, name) in KERNEL_CELLS.items():
        text = cells[gid_].source
        # the %%kernel line, comments and signature stay; the body is the indented C++ stub
        head = source[gid_].source.split("    // BEGIN SOLUTION")[0]
        assert text == head + "    // YOUR CODE HERE\n}", f"{gid_}: {text!r}"
        assert text.startswith(f"%%kernel --for {family} --name {name}")
        assert "__shared__" not in text and "__syncthreads" not in text, f"{gid_}: a solution leaked"
    text = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "# YOUR CODE HERE\n"):
        assert marker not in text, f"{marker!r} in the release notebook"
    assert "--seed" not in text, "a hidden seed leaked"
    # the visible tests stay
    assert "%matmul --m 67 --n 33 --k 129 --variant mytiled" in cells["q1-small"].source
    assert "%matmul --m 129 --n 65 --k 257 --variant mytiled" in cells["q1-small"].source
    for gid_, points in MAX_POINTS.items():
        assert cells[gid_].metadata.nbgrader["points"] == points
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_stubs_compile(graded):
    """The release handed in as it is ("nobody"): each kernel cell compiles (a kernel result, no
    CompileError), and every part scores 0 (expected_scores)."""
    root, _, families = graded
    cells = by_grade_id(read_autograded(root, "nobody"))
    for gid_, (family, name) in KERNEL_CELLS.items():
        if family not in families:
            continue
        outs = cells[gid_].outputs
        assert not [o for o in outs if o.output_type == "error"], f"{gid_}: {json.dumps(outs)[:800]}"
        docs = [o.data["application/vnd.cudalab.result+json"] for o in outs
                if "application/vnd.cudalab.result+json" in o.get("data", {})]
        assert [d.get("name") for d in docs] == [name], json.dumps(outs)[:800]


def test_source_cells(graded):
    """Only the kernel cells are the student's; every test cell ends in %assert (its last command's
    result would be read as the score), and a GPU-only one begins with the backend check."""
    tests = {}
    for cell, meta in locked_cells(COURSE / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", KERNEL_CELLS):
        if meta["grade"]:
            tests[meta["grade_id"]] = meta["points"]
            lines = [ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")]
            assert lines[-1].startswith("%assert "), cell.source
            assert (lines[0] == "%assert device.backend == 'cuda'   # a GPU-only part: without a GPU it scores 0") \
                == (meta["grade_id"] in GPU_ONLY), cell.source
    assert tests == MAX_POINTS


def test_committed_submissions_are_the_release(graded):
    """Each sample is the release with its three kernel cells filled in: no score of theirs depends on
    autograde writing a stale question or test cell over."""
    root, _, _ = graded
    release = by_grade_id(read_release(root))
    for student in EXPECTED_GPU:
        if student == "nobody":
            continue
        cells = by_grade_id(nbformat.read(COURSE / "submitted" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
                                          as_version=4))
        assert list(cells) == list(release), student
        for gid_, cell in cells.items():
            assert cell.metadata == release[gid_].metadata, f"{student} {gid_}"
            if gid_ not in KERNEL_CELLS:
                assert cell.source == release[gid_].source, f"{student} {gid_}"
            else:
                assert cell.source.splitlines()[0] == release[gid_].source.splitlines()[0], f"{student} {gid_}"


@pytest.mark.parametrize("student", sorted(EXPECTED_GPU))
def test_gradebook_scores(graded, student):
    from nbgrader.api import Gradebook

    root, backend, families = graded
    expected = expected_scores(backend, families)[student]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        grades = {g.name: (g.auto_score, g.max_score, g.needs_manual_grade) for g in nb.grades}
        assert grades == {name: (score, MAX_POINTS[name], False) for name, score in expected.items()}, \
            f"{student} on {backend}"
        assert gb.find_submission(ASSIGNMENT, student).score == sum(expected.values())


@pytest.mark.parametrize("student", sorted(EXPECTED_GPU))
def test_feedback(graded, student):
    """Each test cell that fails shows why (the error a teacher expects), nothing is written to stderr,
    and the GPU-only parts say that they need a GPU."""
    root, backend, families = graded
    want = expected_errors(backend, families)[student]
    cells = by_grade_id(read_autograded(root, student))
    for gid_ in MAX_POINTS:
        outs = cells[gid_].outputs
        assert not [o for o in outs if o.output_type == "stream" and o.name == "stderr"], f"{gid_}: stderr"
        errors = [o for o in outs if o.output_type == "error"]
        results = [o for o in outs if o.output_type == "execute_result"]
        assert not results, f"{gid_}: an execute_result would be read as the score"
        expected = want.get(gid_)
        if expected is None:
            assert not errors, f"{gid_}: {errors[0].ename}: {errors[0].evalue}"
            continue
        assert len(errors) == 1 and errors[0].ename in (expected if isinstance(expected, tuple) else (expected,)), \
            f"{gid_}: {[(e.ename, e.evalue) for e in errors]}, expected {expected}"
        if gid_ in GPU_ONLY and backend != "cuda" and errors[0].ename == "AssertionError":
            assert errors[0].evalue.startswith("device.backend == 'cuda': 'cpu' == 'cuda' is false"), errors[0].evalue
            assert any("a GPU-only part: without a GPU it scores 0" in line for line in errors[0].traceback)


def test_compile_error_in_feedback(graded):
    """dave's misspelt barrier: the kernel cell shows the compiler's error at his line, and Q1's tests
    say that there is no such kernel."""
    root, _, _ = graded
    cells = by_grade_id(read_autograded(root, "dave"))
    errors = [o for o in cells["q1-kernel"].outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CompileError"], json.dumps(cells["q1-kernel"].outputs)[:800]
    text = "\n".join([errors[0].evalue, *errors[0].traceback])
    assert 'line 17: error: identifier "__syncthread" is undefined' in text, text
    builds = [o for o in cells["q1-builds"].outputs if o.output_type == "error"]
    assert builds[0].evalue.startswith("no %kernel result in this session yet"), builds[0].evalue
