"""grade_samples.py — `make grade`: autograde the sample submissions of the nbgrader course with the
built kernel and compare every score with the one a teacher expects.

In a fresh copy of notebooks/assignments (build/grade/assignments by default, kept for a look at the
autograded notebooks and the feedback), with a private Jupyter path whose cudalab kernelspec runs
BINARY: `nbgrader generate_assignment` and `nbgrader autograde` for ps1, ps2 and ps3,
`generate_feedback` for the kernel-writing sets (ps2, ps3), then one table per assignment of the score
of every student and test cell. The expected scores are the tables of test_autograde.py (ps1: the
same on every backend) and psets.py (ps2, ps3: one table for a GPU, one for no GPU, picked by the
backend %device reports). A score that differs is marked `!` with the error its test cell showed; the
exit status is then 1. Under each kernel-writing set's table, the samples that copy a built-in kernel
(psets.Pset.copies) and what the similarity report says of them (similarity_report): a known copy
that the report does not flag fails too.

With --students a,b,... only those students' samples are graded (and only their scores compared).
With --jobs N (make grade JOBS=N) the students are dealt to N graders that run at once, each in a
copy of the course with a gradebook of its own (nbgrader's SQLite gradebook takes no parallel
writers); their autograded notebooks, feedback and grades are merged into the one course folder and
gradebook at the end. On a GPU the graders' kernels share it through cudalab's admission.

Usage: python tests/nbgrader/grade_samples.py [--binary build/bin/cudalab] [--out build/grade] [--jobs N]
                                             [--students a,b,...]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
COURSE = REPO / "notebooks" / "assignments"
KERNELSPEC_TEMPLATE = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab" / "kernel.json"
# What nbgrader writes; never copied from the repository's course folder.
GENERATED = ("release", "autograded", "feedback", "gradebook.db", ".ipynb_checkpoints", "__pycache__")
# The kernel's launch limit for a student kernel while grading: a hung kernel costs this, per run.
KERNEL_TIMEOUT_S = "2"
# The assignments graded, in order, and those whose feedback is generated (the kernel-writing sets).
ASSIGNMENTS = ("ps1", "ps2", "ps3")
FEEDBACK = ("ps2", "ps3")


def grading_env(binary: Path, root: Path) -> dict[str, str]:
    """The environment of nbgrader and of the kernels it starts: a private Jupyter path whose cudalab
    kernelspec runs binary, nbgrader's `alembic` on PATH, the kernel's own time limits."""
    spec_dir = root / "jupyter" / "share" / "jupyter" / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = json.loads(KERNELSPEC_TEMPLATE.read_text())
    spec["argv"] = [str(binary)] + list(spec["argv"][1:])
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    env = dict(os.environ)
    env.update(JUPYTER_PATH=str(root / "jupyter" / "share" / "jupyter"),
               JUPYTER_RUNTIME_DIR=str(root / "jupyter" / "runtime"),
               JUPYTER_CONFIG_DIR=str(root / "jupyter" / "config"),   # no user config in the way
               JUPYTER_PLATFORM_DIRS="1",
               CUDALAB_CELL_TIMEOUT="60",             # below the course's Execute.timeout (120)
               CUDALAB_KERNEL_TIMEOUT=KERNEL_TIMEOUT_S)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("CUDALAB_DEBUG", None)
    return env


def copy_course(dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(COURSE, dest, ignore=shutil.ignore_patterns(*GENERATED))
    return dest


def nbgrader(args: list[str], cwd: Path, env: dict[str, str], ok: bool = True,
             timeout: float = 600) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout)
    log = r.stdout + r.stderr
    if ok:
        assert r.returncode == 0, f"nbgrader {' '.join(args)} exited {r.returncode}:\n{log[-6000:]}"
        assert not re.search(r"\[\w+App \| ERROR\]", log), log[-6000:]
    return r


def cudalab_cli(binary: Path, cell: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "--run", cell, "--json"], env=env, capture_output=True, text=True,
                          timeout=120)


def backend_of(binary: Path, env: dict[str, str]) -> str:
    """The backend the kernel runs on here, as %device reports it: "cuda" or "cpu"."""
    r = cudalab_cli(binary, "%device", env)
    assert r.returncode == 0, f"%device failed: {r.stdout}{r.stderr}"
    return json.loads(r.stdout)["backend"]


def student_families(binary: Path, env: dict[str, str]) -> set[str]:
    """The families a %%kernel cell can be written for in this build (the refusal of an unknown
    family lists them): ps2 expects no kernel of the others to build."""
    r = cudalab_cli(binary, "%%kernel --for ?\n__global__ void k() {}", env)
    m = re.search(r"kernels can be written for ([\w, ]+)", r.stdout + r.stderr)
    assert m, f"no list of families in: {r.stdout}{r.stderr}"
    return {f.strip() for f in m.group(1).split(",")}


def gradebook_scores(course: Path, assignment: str, notebook: str) -> dict[str, dict[str, float | None]]:
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            nb = gb.find_submission_notebook(notebook, assignment, sub.student.id)
            scores[sub.student.id] = {g.name: g.auto_score for g in nb.grades}
    return scores


# ---------------------------------------------------------------- graders in parallel

def grade_all(course: Path, env: dict[str, str]) -> None:
    """generate_assignment and autograde every assignment for the students in course/submitted (an
    assignment none of them submitted is only generated: nbgrader's autograde fails on no submission)."""
    for a in ASSIGNMENTS:
        nbgrader(["generate_assignment", a], course, env)
        if any(course.glob(f"submitted/*/{a}")):
            nbgrader(["autograde", a], course, env)
    for a in FEEDBACK:
        if any(course.glob(f"submitted/*/{a}")):
            nbgrader(["generate_feedback", a], course, env)


def students_of(course: Path) -> list[str]:
    return sorted(p.name for p in (course / "submitted").iterdir() if p.is_dir())


def keep_students(course: Path, students: Iterable[str]) -> None:
    """Removes every other student's submissions from course/submitted."""
    for other in set(students_of(course)) - set(students):
        shutil.rmtree(course / "submitted" / other)


def grade_shard(course: Path, students: list[str], env: dict[str, str]) -> Path:
    """One grader: its own copy of the course with only these students, generated and autograded."""
    keep_students(course, students)
    grade_all(course, env)
    return course


def merge_shard(shard: Path, course: Path) -> None:
    """A grader's autograded notebooks, feedback and grades into the course and its gradebook."""
    from nbgrader.api import Gradebook

    for part in ("autograded", "feedback"):
        if (shard / part).is_dir():
            shutil.copytree(shard / part, course / part, dirs_exist_ok=True)
    with Gradebook(f"sqlite:///{shard / 'gradebook.db'}") as src, \
            Gradebook(f"sqlite:///{course / 'gradebook.db'}") as dst:
        for assignment in src.assignments:
            for sub in src.assignment_submissions(assignment.name):
                student = sub.student.id
                if not any(s.id == student for s in dst.students):
                    dst.add_student(student)
                try:
                    dst.find_submission(assignment.name, student)
                except Exception:   # noqa: BLE001 - nbgrader raises MissingEntry
                    dst.add_submission(assignment.name, student)
                for nb in sub.notebooks:
                    for g in nb.grades:
                        mine = dst.find_grade(g.name, nb.name, assignment.name, student)
                        mine.auto_score, mine.manual_score = g.auto_score, g.manual_score
                dst.db.commit()


def grade_in_parallel(course: Path, out: Path, jobs: int, env: dict[str, str]) -> None:
    students = students_of(course)
    shards = [students[i::jobs] for i in range(jobs) if students[i::jobs]]
    copies = [copy_course(out / "shards" / f"grader{i}" / "assignments") for i in range(len(shards))]
    with concurrent.futures.ThreadPoolExecutor(len(shards)) as pool:
        done = list(pool.map(lambda cs: grade_shard(cs[0], cs[1], env), zip(copies, shards)))
    for a in ASSIGNMENTS:
        nbgrader(["generate_assignment", a], course, env)    # the assignments in the one gradebook
    for shard in done:
        merge_shard(shard, course)


def gid(cell) -> str | None:
    """A notebook cell's nbgrader grade_id (None where it has none)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def by_grade_id(nb) -> dict[str, nbformat.NotebookNode]:
    return {gid(c): c for c in nb.cells if gid(c)}


def locked_cells(notebook: Path, solutions: Iterable[str]) -> Iterator[tuple[nbformat.NotebookNode, dict]]:
    """The cells of a source notebook that a student may not change, each with its nbgrader metadata,
    after checking every cell's: each has it (its grade_id is the cell's id); a solution cell (one of
    solutions) is the student's (unlocked, not graded), every other cell is locked."""
    import nbformat

    for cell in nbformat.read(notebook, as_version=4).cells:
        meta = cell.metadata.get("nbgrader")
        assert meta and meta["grade_id"] == cell.id, f"a cell without nbgrader metadata: {cell.source[:80]!r}"
        if meta["grade_id"] in solutions:
            assert meta["solution"] and not meta["grade"] and not meta["locked"], meta
            continue
        assert meta["locked"] and not meta["solution"], meta
        yield cell, meta


def cell_errors(course: Path, assignment: str, notebook: str, student: str) -> dict[str, str]:
    """What each cell of an autograded notebook failed with: 'Ename: first line of the message'."""
    import nbformat

    path = course / "autograded" / student / assignment / f"{notebook}.ipynb"
    if not path.exists():
        return {}
    out = {}
    for c in nbformat.read(path, as_version=4).cells:
        grade_id = gid(c)
        for o in c.get("outputs", []):
            if o.output_type == "error" and grade_id:
                out[grade_id] = f"{o.ename}: {o.evalue.splitlines()[0] if o.evalue else ''}"
    return out


def similarity_report(course: Path, assignment: str, binary: Path) -> dict[str, list[dict]]:
    """The instructor's similarity report (scripts/similarity.py: cudalab --similarity) of this
    assignment's submissions: {student: their kernels' rows}, read beside the scores, never a score."""
    sys.path.insert(0, str(REPO / "scripts"))
    import similarity
    found: dict[str, list[dict]] = {}
    for row in similarity.rows(course, [assignment], binary=binary):
        found.setdefault(row["student"], []).append(row)
    return found


def check_copies(pset, report: dict[str, list[dict]], graded: set[str]) -> bool:
    """Prints the report's flagged kernels; False when a graded sample known to copy a built-in kernel
    (pset.copies) is not flagged as like that variant."""
    ok = True
    for student, rows in sorted(report.items()):
        for r in rows:
            if r["flagged"]:
                print(f"  similarity: {student} {r['kernel']} ({r['family']}): built-in {r['builtin']} "
                      f"{r['builtin_similarity']:.2f}, {r['peer']}'s {r['peer_kernel']} {r['peer_similarity']:.2f} "
                      f"[{r['flagged']}]")
    for student, copied in pset.copies.items():
        if student not in graded:
            continue
        for cell, variant in copied.items():
            if not any(r["builtin"] == variant and "builtin" in r["flagged"] for r in report.get(student, [])):
                print(f"  ! similarity: {student}'s {cell} copies the built-in {variant}, and the report does not "
                      f"flag it")
                ok = False
    return ok


def table(assignment: str, cells: list[str], max_points: dict[str, float], got: dict, want: dict) -> list[str]:
    """Prints the scores, one row per student; returns the (student, cell) pairs that differ."""
    wrong = []
    width = max(len(c) for c in cells + ["total"])
    students = sorted(set(got) | set(want))
    head = f"{assignment:<{width}}  " + "  ".join(f"{s:>8}" for s in students)
    print(head)
    print("-" * len(head))
    for c in cells + ["total"]:
        row = []
        for s in students:
            if c == "total":
                score = sum(v or 0 for v in got.get(s, {}).values())
                expect = sum(want.get(s, {}).values())
                mark = " " if score == expect else "!"
                row.append(f"{score:g}/{sum(max_points.values()):g}{mark}")
                continue
            score, expect = got.get(s, {}).get(c), want.get(s, {}).get(c)
            mark = " " if score == expect else "!"
            if mark == "!":
                wrong.append((s, c))
            row.append(f"{'-' if score is None else f'{score:g}'}/{max_points[c]:g}{mark}")
        print(f"{c:<{width}}  " + "  ".join(f"{r:>8}" for r in row))
    return wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(REPO / "build" / "bin" / "cudalab"))
    ap.add_argument("--out", default=str(REPO / "build" / "grade"))
    ap.add_argument("--jobs", type=int, default=1, help="graders at once, each with a gradebook of its own")
    ap.add_argument("--students", help="grade only these students' samples (comma-separated; default: all)")
    args = ap.parse_args()
    binary = Path(args.binary).resolve()
    if not os.access(binary, os.X_OK):
        print(f"grade: no kernel at {binary}: run make first", file=sys.stderr)
        return 2
    if importlib.util.find_spec("nbgrader") is None:
        print("grade: nbgrader is not installed: pip install -r requirements-grade.txt", file=sys.stderr)
        return 2
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import psets
    import test_autograde as ps1

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = grading_env(binary, out)
    course = copy_course(out / "assignments")
    if args.students:
        chosen = set(args.students.split(","))
        unknown = chosen - set(students_of(course))
        if unknown:
            print(f"grade: no samples of {', '.join(sorted(unknown))} in {COURSE / 'submitted'}", file=sys.stderr)
            return 2
        keep_students(course, chosen)
    backend, families = backend_of(binary, env), student_families(binary, env)
    print(f"grade: kernel {binary}, backend {backend}; student kernels for {', '.join(sorted(families))}; "
          f"launch limit {KERNEL_TIMEOUT_S} s")
    t0 = time.monotonic()
    if args.jobs > 1:
        grade_in_parallel(course, out, args.jobs, env)
    else:
        grade_all(course, env)
    print(f"grade: autograded in {time.monotonic() - t0:.0f} s by {max(args.jobs, 1)} grader(s); notebooks and "
          f"feedback in {course}\n")

    failed = False
    graded = [("ps1", ps1.NOTEBOOK, ps1.MAX_POINTS, ps1.EXPECTED, None)]
    graded += [(p.assignment, p.notebook, p.max_points, p.expected_scores(backend, families), p) for p in psets.PSETS]
    for name, notebook, max_points, want, pset in graded:
        got = gradebook_scores(course, name, notebook)
        want = {s: v for s, v in want.items() if (course / "submitted" / s / name).is_dir()}   # the committed samples
        wrong = table(name, list(max_points), max_points, got, want)
        for student, cell in wrong:
            error = cell_errors(course, name, notebook, student).get(cell, "no error shown")
            print(f"  ! {student} {cell}: {got.get(student, {}).get(cell)} where {want.get(student, {}).get(cell)} "
                  f"was expected ({error[:300]})")
        failed |= bool(wrong) or set(got) != set(want)
        if pset is not None:
            failed |= not check_copies(pset, similarity_report(course, name, binary), set(students_of(course)))
        print()
    print(f"grade: {'scores differ from the expected ones (!)' if failed else 'every score as expected'} "
          f"(ps2 and ps3 tables for backend {backend})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
