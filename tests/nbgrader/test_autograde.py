"""The sample nbgrader course (notebooks/assignments) graded end to end with the cudalab kernel.

In a temporary copy of the course: `nbgrader generate_assignment ps1` must replace every solution
region with the cudalab stub and drop the hidden tests; `nbgrader autograde ps1` must then run every
submission in the cudalab kernel under test (conftest.py's temporary JUPYTER_PATH kernelspec points
at $CUDALAB_BIN or build/bin/cudalab) and store the expected per-cell scores in the gradebook.

The committed submissions: alice answered everything right; bob got Q1's hidden test wrong (no
--seed 7) and earns partial credit on Q2 (tiles 8,16,32 instead of 4,8,16) and Q3 (the interleaved
variant); mallory games every test she can (see EXPECTED). Beside them the fixture writes one
submission per row of TRIES, answers built to get points without doing what the question asks (and a
few right answers written differently, which must keep their points), and TAMPERED, submissions
that edit, delete, copy or re-type test cells: each gets exactly the points of what it ran.

The test cells use %assert and %score on fields that are deterministic given the seed (sizes, tile,
variant, bins, check.passed), never on timings. Skipped when nbgrader is not installed
(requirements-grade.txt).
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from conftest import REPO
from grade_samples import by_grade_id, gid, locked_cells

pytestmark = pytest.mark.timeout(300)

COURSE = REPO / "notebooks" / "assignments"
ASSIGNMENT = "ps1"
NOTEBOOK = "tiling-and-histograms"
STUB = "# YOUR CODE HERE"
SOLUTION_CELLS = ("q1-answer", "q2-answer", "q3-answer")
MAX_POINTS = {"q1-tests": 2.0, "q2-tests": 3.0, "q3-tests": 4.0}
TEST_OF = {"q1-answer": "q1-tests", "q2-answer": "q2-tests", "q3-answer": "q3-tests"}

# The committed submissions (submitted/<student>/ps1).
EXPECTED = {
    "alice": {"q1-tests": 2.0, "q2-tests": 3.0, "q3-tests": 4.0},
    # Q1: the visible tests pass, the hidden seed test fails: 0 of 2.
    # Q2: tiles 8,16,32: the tile point is lost; size and check earn 2 of 3.
    # Q3: interleaved instead of privatized: text, bin width and check earn 3 of 4.
    "bob": {"q1-tests": 0.0, "q2-tests": 2.0, "q3-tests": 3.0},
    # Q1: --no-check, in a test cell she unlocked, rewrote to `%score 20` and gave 20 points, with a
    #     forged output: the cell is written over with the source version and scores 0.
    # Q2: --tile 4,16,16 (the sweep that scored 3 when the test counted runs), after a cell of her own
    #     that runs TILE = 8 alone; a forged "3" on the test cell, and a copy of the test cell (same
    #     grade_id) at the end that scores 3: the tile point is lost, the copy is graded as the real
    #     test: 2 of 3.
    # Q3: another text with the counts the old hidden test looked at (m-p 10, q-t 10); the test cell
    #     deleted and a cell of her own scoring 4 in its place: the test is put back, and scores 0.
    "mallory": {"q1-tests": 0.0, "q2-tests": 2.0, "q3-tests": 0.0},
}
# What each test cell shows: the ename of its error, or the text/plain of its %score result.
EXPECTED_OUTPUT = {
    "alice": {"q1-tests": None, "q2-tests": "3", "q3-tests": "4"},
    "bob": {"q1-tests": "AssertionError", "q2-tests": "2", "q3-tests": "3"},
    "mallory": {"q1-tests": "AssertionError", "q2-tests": "2", "q3-tests": "AssertionError"},
}

# The right answers (alice's): a row of TRIES answers one question, the other two are answered so.
TEXT = "programming massively parallel processors"
RIGHT = {
    "q1-answer": "%matmul --size 128 --variant tiled --tile 16 --seed 7",
    "q2-answer": "%matmul --size 100 --variant tiled --tile 4,8,16",
    "q3-answer": f'%histo --text "{TEXT}" --bin-width 4 --variant privatized',
}
# (question's answer cell, what the student runs there, the points it must get, what it tries)
TRIES = [
    # Q1, all or nothing: the asked run must exist, pass its check and come from seed 7.
    ("q1-answer", "%matmul --size 128 --variant tiled --tile 16 --seed 3", 0, "another seed (the hidden test)"),
    ("q1-answer", "%matmul --size 128 --variant tiled --tile 16 --seed 7 --no-check", 0, "no check"),
    ("q1-answer", "%matmul --size 128 --variant tiled --tile 8 --seed 7", 0, "another tile"),
    ("q1-answer", "%matmul --m 128 --n 64 --k 128 --variant tiled --tile 16 --seed 7", 0, "n = 64"),
    ("q1-answer", "%matmul --size 128 --variant naive --tile 16 --seed 7", 0,
     "the naive kernel, whose run takes tile = 16 from the command's params"),
    ("q1-answer", "%matmul --size 128 --variant tiled --tile 16 --seed 7\n"
                  "%matmul --size 128 --variant tiled --tile 16 --seed 3", 0,
     "the right run, then the same run from another seed: the newest counts"),
    ("q1-answer", "%matmul --size 128 --variant tiled --tile 16 --seed 7 --reps 0", 0,
     "an answer that fails (UsageError): the test still runs, and fails (an aborted test would score full points)"),
    ("q1-answer", "%matmul --size 128,64 --variant naive,tiled --tile 8,16 --seed 7", 2,
     "right: the asked run among others"),
    ("q1-answer", "%matmul --m 128 --n 128 --k 128 --tile=16 --seed 7", 2,
     "right, written differently (tiled is the default variant)"),
    # Q2: nothing unless the newest %matmul is one sweep of the tiled kernel alone; then a point each
    # for exactly the tiles 4, 8, 16, for m = n = k = 100, and for every run checked.
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,16,16", 2,
     "TILE = 8 never ran (three runs, smallest 4, largest 16: it scored 3 when the test counted runs)"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,8,16,32", 2, "a tile not asked for"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,8,8,16", 2, "a tile twice"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,16", 2, "TILE = 8 missing"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 8\n%matmul --size 100 --variant tiled --tile 4,16", 2,
     "TILE = 8 ran, in another command (a test that looked for it with a selector would find it there)"),
    ("q2-answer", "%matmul --m 100 --n 50 --k 100 --variant tiled --tile 4,8,16", 2,
     "n = 50 (the test looked only at m and k)"),
    ("q2-answer", "%matmul --size 100,200 --variant tiled --tile 4,8,16", 1, "two sizes: six runs"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,8,16 --no-check", 2, "no check"),
    ("q2-answer", "%matmul --size 100 --variant naive,tiled --tile 4,8,16", 0, "another variant in the sweep"),
    ("q2-answer", "%matmul --size 100 --variant naive --tile 4,8,16", 0,
     "the naive kernel, whose run takes the tile list from the command's params"),
    ("q2-answer", "%matmul --size 100", 0, "one run of the tiled kernel: no sweep (it scored 2)"),
    ("q2-answer", "%matmul --size 100 --tile 4\n%matmul --size 100 --tile 8\n%matmul --size 100 --tile 16", 0,
     "three commands: the newest is one run"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,8,16\n%matmul --size 100 --variant naive", 0,
     "the sweep, then another %matmul: the newest counts"),
    ("q2-answer", "%matmul --size 100 --variant tiled --tile 4,8,16 --seed 7,8", 0,
     "an answer that fails (UsageError): the test reads Q1's run"),
    ("q2-answer", "%matmul -v tiled --tile=16,8,4 --m 100 --n 100 --k 100 --seed 5", 3, "right, written differently"),
    # Q3: nothing for another text; then a point each for the text, the privatized kernel alone,
    # letters in bins of 4, and every run checked. Hidden: in 4-letter bins, the text's counts.
    ("q3-answer", '%histo --text "mmmmmmmmmm qqqqqqqqqq" --bin-width 4 --variant privatized', 0,
     "another text with the counts the old hidden test looked at (it scored 3)"),
    ("q3-answer", '%histo --text "aaaaa eeeee iiiiii mmmmmmmmmm qqqqqqqqqq u y" --bin-width 4 --variant privatized', 0,
     "another text with every count right (it scored 3)"),
    ("q3-answer", '%histo --text "Programming Massively Parallel Processors" --variant privatized', 0,
     "not the text asked for, though its letters are"),
    ("q3-answer", "%histo --size 41 --variant privatized", 0, "random bytes"),
    ("q3-answer", f'%histo --text "{TEXT}" --variant privatized\n'
                  '%histo --text "mmmmmmmmmm qqqqqqqqqq" --variant privatized', 0,
     "the text, then another: the newest counts"),
    ("q3-answer", f'%histo --text "{TEXT}" --size 9 --variant privatized', 0, "an answer that fails (UsageError)"),
    ("q3-answer", f'%histo --text "{TEXT}" --bins bytes --variant privatized', 3,
     "byte bins: the bin point (the old hidden test made it 0)"),
    ("q3-answer", f'%histo --text "{TEXT}" --bin-width 2 --variant privatized', 3,
     "2-letter bins: the bin point (the old hidden test made it 0)"),
    ("q3-answer", f'%histo --text "{TEXT}"', 3, "every variant"),
    ("q3-answer", f'%histo --text "{TEXT}" --variant privatized,interleaved', 3, "another variant too"),
    ("q3-answer", f'%histo --text "{TEXT}" --variant privatized --no-check', 3, "no check"),
    ("q3-answer", f"%%histo --variant privatized\n{TEXT}", 4, "right: the text as the body of %%histo"),
    ("q3-answer", f'%histo -v privatized --block 64,256 --text "{TEXT}"', 4,
     "right: privatized alone, two block sizes"),
]


def cell_at(nb, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if gid(c) == grade_id)


# Submissions that change test cells, each with a wrong answer to the question whose test it changes:
# autograde must grade the answer, not the change. (student: (answers, change, expected scores))
def retype_q1_tests(nb):
    """Q1's test cell turned into a markdown cell: autograde turns it back into the test."""
    i = cell_at(nb, "q1-tests")
    nb.cells[i] = nbformat.v4.new_markdown_cell("nothing to test here", id=nb.cells[i].id,
                                                metadata=nb.cells[i].metadata)


def strip_q2_tests(nb):
    """Q2's test cell without its nbgrader metadata, scoring 3: the test is added back after Q2's answer."""
    cell = nb.cells[cell_at(nb, "q2-tests")]
    cell.metadata = {}
    cell.source = "%score 3"


def copy_q3_tests_before(nb):
    """A copy of Q3's test cell (same grade_id) above it, scoring 4: the copy becomes a cell of hers."""
    i = cell_at(nb, "q3-tests")
    dup = copy.deepcopy(nb.cells[i])
    dup.id = "copy-of-q3-tests"
    dup.source = "%score 4"
    nb.cells.insert(i, dup)


TAMPERED = {
    "tamper_retyped": ({"q1-answer": "%matmul --size 128 --tile 16 --seed 3"}, retype_q1_tests,
                       dict(MAX_POINTS, **{"q1-tests": 0.0})),
    "tamper_stripped": ({"q2-answer": "%matmul --size 100"}, strip_q2_tests, dict(MAX_POINTS, **{"q2-tests": 0.0})),
    "tamper_copied": ({"q3-answer": '%histo --text "mmmmmmmmmm qqqqqqqqqq" --variant privatized'},
                      copy_q3_tests_before, dict(MAX_POINTS, **{"q3-tests": 0.0})),
}


def tries_by_student() -> dict[str, list[tuple[str, str, int, str]]]:
    """TRIES dealt out to students, one try per question each, so that a student's tries do not meet:
    each test reads only the results of its own question's magic run before it."""
    per_question = {q: [t for t in TRIES if t[0] == q] for q in SOLUTION_CELLS}
    rows = max(len(v) for v in per_question.values())
    return {f"try{i + 1:02d}": [v[i] for v in per_question.values() if i < len(v)] for i in range(rows)}


def expected_scores() -> dict[str, dict[str, float]]:
    scores = {student: dict(s) for student, s in EXPECTED.items()}
    for student, tries in tries_by_student().items():
        scores[student] = dict(MAX_POINTS, **{TEST_OF[q]: float(points) for q, _, points, _ in tries})
    for student, (_, _, expected) in TAMPERED.items():
        scores[student] = expected
    return scores


def submission(release, answers: dict[str, str], change=None):
    """The release notebook with answers in place of the stubs (alice's where none is given)."""
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        if gid(cell) in SOLUTION_CELLS:
            cell.source = answers.get(gid(cell), RIGHT[gid(cell)])
    if change:
        change(nb)
    nbformat.validate(nb)
    return nb


def write_submission(root: Path, student: str, nb) -> None:
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def grading_env() -> dict[str, str]:
    env = dict(os.environ)
    # nbgrader runs the `alembic` command to set up gradebook.db: it must be on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["CUDALAB_CELL_TIMEOUT"] = "60"        # the kernel's own per-cell limit, below Execute.timeout
    return env


def nbgrader(args: list[str], cwd: Path, env: dict[str, str], ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=240)
    log = r.stdout + r.stderr
    if ok:
        assert r.returncode == 0, f"nbgrader {' '.join(args)} exited {r.returncode}:\n{log[-6000:]}"
        assert "[AutogradeApp | ERROR]" not in log and "[GenerateAssignmentApp | ERROR]" not in log, log[-6000:]
    return r


def read_release(root: Path):
    return nbformat.read(root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def course(jupyter_env, tmp_path_factory):
    """A graded copy of the course, with the TRIES and TAMPERED submissions beside the committed ones."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -r requirements-grade.txt")
    root = tmp_path_factory.mktemp("course") / "assignments"
    shutil.copytree(COURSE, root, ignore=shutil.ignore_patterns(
        "release", "autograded", "feedback", "gradebook.db", ".ipynb_checkpoints", "__pycache__"))
    env = grading_env()
    t0 = time.monotonic()
    nbgrader(["generate_assignment", ASSIGNMENT], root, env)
    release = read_release(root)
    for student, tries in tries_by_student().items():
        write_submission(root, student, submission(release, {q: answer for q, answer, _, _ in tries}))
    for student, (answers, change, _) in TAMPERED.items():
        write_submission(root, student, submission(release, answers, change))
    t1 = time.monotonic()
    nbgrader(["autograde", ASSIGNMENT], root, env)
    t2 = time.monotonic()
    print(f"generate_assignment {t1 - t0:.1f} s, autograde ({len(expected_scores())} submissions) {t2 - t1:.1f} s")
    return root


def test_release_has_stubs_and_no_hidden_tests(course):
    nb = read_release(course)
    assert nb.metadata.kernelspec.name == "cudalab" and nb.metadata.kernelspec.language == "cudalab"
    cells = by_grade_id(nb)
    for gid_ in SOLUTION_CELLS:
        assert cells[gid_].source == STUB, f"{gid_}: {cells[gid_].source!r}"
    text = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{marker!r} left in the release notebook"
    assert "--seed 7" not in text and "--variant privatized" not in text, "a solution leaked"
    # the visible tests stay, the hidden ones go
    assert "%assert matmul[variant=tiled,tile=16,m=128,n=128,k=128].check.passed" in cells["q1-tests"].source
    assert ".seed == 7" not in cells["q1-tests"].source
    assert f"%assert histo.text == '{TEXT}'" in cells["q3-tests"].source
    assert "histo.bins[" not in cells["q3-tests"].source
    for gid_ in ("q2-tests", "q3-tests"):
        assert cells[gid_].source.rstrip().splitlines()[-1].startswith("%score ")
    for gid_, points in MAX_POINTS.items():
        assert cells[gid_].metadata.nbgrader["points"] == points
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_what_a_student_may_change():
    """In the source, every cell but the answers is locked (autograde writes it over with the source
    version): the questions, and the test cells, which hold only %assert lines and a last %score line
    (nbgrader reads any other result as full points)."""
    tests = {}
    for cell, meta in locked_cells(COURSE / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", SOLUTION_CELLS):
        if meta["grade"]:
            assert cell.cell_type == "code"
            tests[meta["grade_id"]] = meta["points"]
            lines = [ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
            assert all(ln.startswith(("%assert ", "%score ")) for ln in lines), cell.source
            assert all(ln.startswith("%assert ") for ln in lines[:-1]), f"%score before the end: {cell.source}"
    assert tests == MAX_POINTS


def test_committed_submissions_are_the_release(course):
    """alice and bob are the current release with their answers in place of the stubs: no grade of
    theirs depends on autograde writing a stale question or test cell over."""
    release = by_grade_id(read_release(course))
    for student in ("alice", "bob"):
        nb = nbformat.read(COURSE / "submitted" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
        cells = by_grade_id(nb)
        assert list(cells) == list(release), student
        for gid_, cell in cells.items():
            assert cell.metadata == release[gid_].metadata, f"{student} {gid_}"
            if gid_ not in SOLUTION_CELLS:
                assert cell.source == release[gid_].source, f"{student} {gid_}"


@pytest.mark.parametrize("student", sorted(expected_scores()))
def test_gradebook_scores(course, student):
    from nbgrader.api import Gradebook

    expected = expected_scores()[student]
    tries = {TEST_OF[q]: f"{answer!r}: {why}" for q, answer, _, why in tries_by_student().get(student, [])}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        grades = {g.name: (g.auto_score, g.max_score, g.needs_manual_grade) for g in nb.grades}
        for name, score in expected.items():
            assert grades.pop(name) == (score, MAX_POINTS[name], False), f"{student} {name} {tries.get(name, '')}"
        assert grades == {}
        submission_ = gb.find_submission(ASSIGNMENT, student)
        assert submission_.max_score == sum(MAX_POINTS.values()) == 9.0
        assert submission_.score == sum(expected.values())


@pytest.mark.parametrize("student", sorted(expected_scores()))
def test_no_stderr(course, student):
    """No cell wrote to stderr (nbgrader would score a test cell that did 0)."""
    nb = nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert not (o.output_type == "stream" and o.name == "stderr"), f"stderr: {o.text!r}"


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_autograded_notebook(course, student):
    """The submission ran in the cudalab kernel, with the hidden tests put back, and each test
    cell shows what gave its score."""
    path = course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.name == "cudalab"
    cells = by_grade_id(nb)
    assert ".seed == 7" in cells["q1-tests"].source, "hidden tests not restored for grading"
    for gid_ in SOLUTION_CELLS:
        outs = cells[gid_].outputs
        assert any("application/vnd.cudalab.result+json" in o.get("data", {}) for o in outs), \
            f"{gid_} shows no cudalab result: {json.dumps(outs)[:500]}"
    for gid_, want in EXPECTED_OUTPUT[student].items():
        outs = cells[gid_].outputs
        errors = [o for o in outs if o.output_type == "error"]
        results = [o for o in outs if o.output_type == "execute_result"]
        if want is None:
            assert outs == [], f"{gid_}: {json.dumps(outs)[:500]}"
        elif want[0].isdigit():
            assert not errors, f"{gid_}: {errors[0].ename}: {errors[0].evalue}"
            # nbgrader reads the score with float(text/plain), which allows surrounding white space
            assert [r.data["text/plain"].strip() for r in results] == [want]
        else:
            assert [e.ename for e in errors] == [want] and not results, json.dumps(outs)[:500]


def test_mallorys_changes_are_undone(course):
    """What autograde ran of mallory's notebook: each test cell is the source's, with its points, where
    the source has it (her copy of Q2's test, the one kept, is at the end); her outputs are gone; her own
    cells ran and scored nothing."""
    source = by_grade_id(nbformat.read(COURSE / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4))
    nb = nbformat.read(course / "autograded" / "mallory" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    cells = by_grade_id(nb)
    assert sorted(c for c in cells if c in MAX_POINTS) == sorted(MAX_POINTS), "one cell per test"
    for gid_, points in MAX_POINTS.items():
        meta = cells[gid_].metadata.nbgrader
        assert meta["points"] == points and meta["grade"], f"{gid_}: {meta}"
    assert cells["q1-tests"].source == source["q1-tests"].source
    assert nb.cells[-1] is cells["q2-tests"] and cells["q2-tests"].source == source["q2-tests"].source
    # the deleted test, put back after her answer, with nbgrader's note in a comment
    assert nb.cells[cell_at(nb, "q3-answer") + 1] is cells["q3-tests"]
    assert cells["q3-tests"].source.startswith("# This cell (id:q3-tests) was missing")
    assert cells["q3-tests"].source.endswith(source["q3-tests"].source)
    # her own cells ran, as cells of hers: one scored 9 for nobody
    own = [c for c in nb.cells if c.cell_type == "code" and not gid(c)]
    assert [c.source for c in own] == ["%score 9", "%matmul --size 100 --variant tiled --tile 8",
                                       source["q2-tests"].source, "%score 4"]
    assert [o.data["text/plain"].strip() for o in own[0].outputs if o.output_type == "execute_result"] == ["9"]


def test_regrading_gives_the_same_grades(course):
    """Results are deterministic given a seed: autograding the same submissions again (as a course
    does after a fix, or on another machine) stores exactly the same scores."""
    from nbgrader.api import Gradebook

    for student in EXPECTED:
        nbgrader(["autograde", ASSIGNMENT, "--force", "--student", student], course, grading_env())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, expected in EXPECTED.items():
            nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
            assert {g.name: g.auto_score for g in nb.grades} == expected


def unflag_q1_tests(nb):
    """Q1's test cell no longer marked as a test (grade false), and empty."""
    cell = nb.cells[cell_at(nb, "q1-tests")]
    cell.metadata.nbgrader["grade"] = False
    cell.source = "# nothing to test"


def add_bonus_test(nb):
    """A test cell of her own, worth 10 points, that scores 10."""
    cell = copy.deepcopy(nb.cells[cell_at(nb, "q2-tests")])
    cell.id = "bonus"
    cell.metadata.nbgrader.update(grade_id="bonus", points=10)
    cell.source = "%score 10"
    nb.cells.append(cell)


@pytest.mark.parametrize("change", [unflag_q1_tests, add_bonus_test], ids=lambda f: f.__name__)
def test_changed_test_flags_are_refused(course, change):
    """A test cell whose nbgrader flags were changed, or a test cell the source does not have, cannot be
    written over with the source version: autograde refuses that submission with an error naming the
    student (the others are graded), and its grades wait for an instructor, with no points given."""
    from nbgrader.api import Gradebook

    student = f"flags_{change.__name__}"
    write_submission(course, student, submission(read_release(course), {}, change))
    r = nbgrader(["autograde", ASSIGNMENT, "--student", student], course, grading_env(), ok=False)
    log = r.stdout + r.stderr
    assert r.returncode != 0 and f"for student '{student}'" in log, log[-3000:]
    assert not (course / "autograded" / student).exists()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        assert {g.name: (g.auto_score, g.needs_manual_grade) for g in nb.grades} == \
            {name: (None, True) for name in MAX_POINTS}
        assert gb.find_submission(ASSIGNMENT, student).score == 0
