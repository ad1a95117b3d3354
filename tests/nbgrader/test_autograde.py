"""The sample nbgrader course (notebooks/assignments) graded end to end with the cudalab kernel.

In a temporary copy of the course: `nbgrader generate_assignment ps1` must replace every solution
region with the cudalab stub and drop the hidden tests; `nbgrader autograde ps1` must then run both
submissions in the cudalab kernel under test (conftest.py's temporary JUPYTER_PATH kernelspec points
at $CUDALAB_BIN or build/bin/cudalab) and store the expected per-cell and total scores in the
gradebook: alice answered everything right, bob got Q1's hidden test wrong (no --seed 7), and earns
partial credit on Q2 (tiles 8,16,32 instead of 4,8,16) and Q3 (the interleaved variant).

The test cells use %assert and %score on fields that are deterministic given the seed (sizes, tile,
variant, bins, check.passed), never on timings. Skipped when nbgrader is not installed
(requirements-grade.txt).
"""
from __future__ import annotations

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

pytestmark = pytest.mark.timeout(180)

COURSE = REPO / "notebooks" / "assignments"
ASSIGNMENT = "ps1"
NOTEBOOK = "tiling-and-histograms"
STUB = "# YOUR CODE HERE"
SOLUTION_CELLS = ("q1-answer", "q2-answer", "q3-answer")
MAX_POINTS = {"q1-tests": 2.0, "q2-tests": 3.0, "q3-tests": 4.0}
EXPECTED = {
    "alice": {"q1-tests": 2.0, "q2-tests": 3.0, "q3-tests": 4.0},
    # Q1: the visible tests pass, the hidden seed test fails: 0 of 2.
    # Q2: tiles 8,16,32: the tile point is lost; size and check earn 2 of 3.
    # Q3: interleaved instead of privatized: bin width, text and check earn 3 of 4.
    "bob": {"q1-tests": 0.0, "q2-tests": 2.0, "q3-tests": 3.0},
}
# What each test cell shows: the ename of its error, or the text/plain of its %score result.
EXPECTED_OUTPUT = {
    "alice": {"q1-tests": None, "q2-tests": "3", "q3-tests": "4"},
    "bob": {"q1-tests": "AssertionError", "q2-tests": "2", "q3-tests": "3"},
}


def nbgrader(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=150)
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"nbgrader {' '.join(args)} exited {r.returncode}:\n{log[-6000:]}"
    assert "[AutogradeApp | ERROR]" not in log and "[GenerateAssignmentApp | ERROR]" not in log, log[-6000:]
    return r


def by_grade_id(nb) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


@pytest.fixture(scope="module")
def course(jupyter_env, tmp_path_factory):
    """A graded copy of the course: (root, generate_assignment's seconds, autograde's seconds)."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -r requirements-grade.txt")
    root = tmp_path_factory.mktemp("course") / "assignments"
    shutil.copytree(COURSE, root, ignore=shutil.ignore_patterns(
        "release", "autograded", "feedback", "gradebook.db", ".ipynb_checkpoints", "__pycache__"))
    env = dict(os.environ)
    # nbgrader runs the `alembic` command to set up gradebook.db: it must be on PATH.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["CUDALAB_CELL_TIMEOUT"] = "60"        # the kernel's own per-cell limit, below Execute.timeout
    t0 = time.monotonic()
    nbgrader(["generate_assignment", ASSIGNMENT], root, env)
    t1 = time.monotonic()
    nbgrader(["autograde", ASSIGNMENT], root, env)
    t2 = time.monotonic()
    print(f"generate_assignment {t1 - t0:.1f} s, autograde (2 submissions) {t2 - t1:.1f} s")
    return root


def test_release_has_stubs_and_no_hidden_tests(course):
    release = course / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(release, as_version=4)
    assert nb.metadata.kernelspec.name == "cudalab" and nb.metadata.kernelspec.language == "cudalab"
    cells = by_grade_id(nb)
    for gid in SOLUTION_CELLS:
        assert cells[gid].source == STUB, f"{gid}: {cells[gid].source!r}"
    text = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{marker!r} left in the release notebook"
    assert "--seed 7" not in text and "--variant privatized" not in text, "a solution leaked"
    # the visible tests stay, the hidden ones go
    assert "%assert matmul[variant=tiled,tile=16].check.passed" in cells["q1-tests"].source
    assert ".seed == 7" not in cells["q1-tests"].source
    assert "histo.bins['m-p']" not in cells["q3-tests"].source
    assert cells["q3-tests"].source.rstrip().splitlines()[-1].startswith("%score ")
    for gid, points in MAX_POINTS.items():
        assert cells[gid].metadata.nbgrader["points"] == points
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_gradebook_scores(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        grades = {g.name: (g.auto_score, g.max_score, g.needs_manual_grade) for g in nb.grades}
        assert grades == {gid: (score, MAX_POINTS[gid], False) for gid, score in EXPECTED[student].items()}
        submission = gb.find_submission(ASSIGNMENT, student)
        assert submission.max_score == sum(MAX_POINTS.values()) == 9.0
        assert submission.score == sum(EXPECTED[student].values())


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_autograded_notebook(course, student):
    """The submission ran in the cudalab kernel, with the hidden tests put back, and each test
    cell shows what gave its score; no cell wrote to stderr (nbgrader would score it 0)."""
    path = course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.name == "cudalab"
    cells = by_grade_id(nb)
    assert ".seed == 7" in cells["q1-tests"].source, "hidden tests not restored for grading"
    for gid in SOLUTION_CELLS:
        outs = cells[gid].outputs
        assert any("application/vnd.cudalab.result+json" in o.get("data", {}) for o in outs), \
            f"{gid} shows no cudalab result: {json.dumps(outs)[:500]}"
    for c in nb.cells:
        for o in c.get("outputs", []):
            assert not (o.output_type == "stream" and o.name == "stderr"), f"stderr: {o.text!r}"
    for gid, want in EXPECTED_OUTPUT[student].items():
        outs = cells[gid].outputs
        errors = [o for o in outs if o.output_type == "error"]
        results = [o for o in outs if o.output_type == "execute_result"]
        if want is None:
            assert outs == [], f"{gid}: {json.dumps(outs)[:500]}"
        elif want[0].isdigit():
            assert not errors, f"{gid}: {errors[0].ename}: {errors[0].evalue}"
            # nbgrader reads the score with float(text/plain), which allows surrounding white space
            assert [r.data["text/plain"].strip() for r in results] == [want]
        else:
            assert [e.ename for e in errors] == [want] and not results, json.dumps(outs)[:500]


def test_regrading_gives_the_same_grades(course):
    """Results are deterministic given a seed: autograding the same submissions again (as a course
    does after a fix, or on another machine) stores exactly the same scores."""
    from nbgrader.api import Gradebook

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    nbgrader(["autograde", ASSIGNMENT, "--force"], course, env)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student, expected in EXPECTED.items():
            nb = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
            assert {g.name: g.auto_score for g in nb.grades} == expected
