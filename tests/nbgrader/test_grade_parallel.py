"""`make grade JOBS=N`: graders at once, each with a gradebook of its own, merged at the end into one
course folder and one gradebook whose scores are exactly the expected ones (grade_samples.py).

Four students' samples (STUDENTS: every problem set, a kernel that loops forever, a copy of a
built-in kernel the similarity report must flag) are enough to give each of the two graders work in
every set and to merge them; every sample's score is held to the expected tables by
test_autograde.py and test_autograde_psets.py, which grade the whole course once."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO, kernel_binary

# serial: two graders already run at once here; workers beside them push the CPU runner's 2 s limit
pytestmark = [pytest.mark.timeout(600), pytest.mark.serial]

STUDENTS = ("alice", "bob", "erin", "grace")   # dealt alice, erin | bob, grace


def test_two_graders_merge_into_one_gradebook(tmp_path):
    pytest.importorskip("nbgrader")
    r = subprocess.run([sys.executable, str(REPO / "tests" / "nbgrader" / "grade_samples.py"), "--binary",
                        str(kernel_binary()), "--out", str(tmp_path), "--jobs", "2", "--students", ",".join(STUDENTS)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "by 2 grader(s)" in r.stdout and "every score as expected" in r.stdout
    from nbgrader.api import Gradebook
    course = REPO / "notebooks" / "assignments"
    with Gradebook(f"sqlite:///{tmp_path / 'assignments' / 'gradebook.db'}") as gb:
        for a in ("ps1", "ps2", "ps3"):         # every chosen student's sample, whichever grader had it
            graded = {s.student.id for s in gb.assignment_submissions(a)}
            assert graded == {p.parent.name for p in course.glob(f"submitted/*/{a}") if p.parent.name in STUDENTS}, a
            assert graded, a
    for student in ("alice", "erin"):
        assert (tmp_path / "assignments" / "feedback" / student / "ps2").is_dir()


def test_an_unknown_student_is_refused_before_grading(tmp_path):
    pytest.importorskip("nbgrader")
    r = subprocess.run([sys.executable, str(REPO / "tests" / "nbgrader" / "grade_samples.py"), "--binary",
                        str(kernel_binary()), "--out", str(tmp_path), "--students", "alice,nosuch"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "grade: no samples of nosuch in " in r.stderr and "autograded" not in r.stdout
