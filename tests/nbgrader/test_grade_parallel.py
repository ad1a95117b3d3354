"""`make grade JOBS=N`: graders at once, each with a gradebook of its own, merged at the end into one
course folder and one gradebook whose scores are exactly the expected ones (grade_samples.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO, kernel_binary

# serial: two graders already run at once here; workers beside them push the CPU runner's 2 s limit
pytestmark = [pytest.mark.timeout(600), pytest.mark.serial]


def test_two_graders_merge_into_one_gradebook(tmp_path):
    pytest.importorskip("nbgrader")
    r = subprocess.run([sys.executable, str(REPO / "tests" / "nbgrader" / "grade_samples.py"), "--binary",
                        str(kernel_binary()), "--out", str(tmp_path), "--jobs", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "by 2 grader(s)" in r.stdout and "every score as expected" in r.stdout
    from nbgrader.api import Gradebook
    course = REPO / "notebooks" / "assignments"
    with Gradebook(f"sqlite:///{tmp_path / 'assignments' / 'gradebook.db'}") as gb:
        for a in ("ps1", "ps2", "ps3"):         # every committed sample, whichever grader had it
            graded = {s.student.id for s in gb.assignment_submissions(a)}
            assert graded == {p.parent.name for p in course.glob(f"submitted/*/{a}")}, a
    for student in ("alice", "erin"):
        assert (tmp_path / "assignments" / "feedback" / student / "ps2").is_dir()
