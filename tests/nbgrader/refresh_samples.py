"""refresh_samples.py — rebuild the committed sample submissions of the kernel-writing problem sets
(ps2, ps3) after their source notebook changed: each sample becomes the new release notebook with the
student's own kernel bodies put back into its kernel cells (test_committed_submissions_are_the_release
checks exactly that shape). The release is generated in a scratch copy of the course; nothing else in
the repository is written.

A new sample: copy alice's notebook to submitted/<student>/<assignment>/, write the kernel bodies, run
this script, and give the student a row in psets.py.

Usage: python tests/nbgrader/refresh_samples.py [--binary build/bin/cudalab] [ASSIGNMENT ...]
"""
from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import nbformat

from grade_samples import COURSE, REPO, by_grade_id, copy_course, grading_env, nbgrader
from psets import PSETS

STUB = "    // YOUR CODE HERE\n}"


def body_of(kernel_cell: str) -> str:
    """The lines of a kernel cell between the signature's `{` line and the closing `}`."""
    lines = kernel_cell.split("\n")
    start, end = lines.index("{") + 1, len(lines) - 1 - lines[::-1].index("}")
    return "".join(line + "\n" for line in lines[start:end])


def refresh(pset, root: Path) -> list[Path]:
    release = pset.read_release(root)
    written = []
    for path in sorted(COURSE.glob(f"submitted/*/{pset.assignment}/{pset.notebook}.ipynb")):
        mine = by_grade_id(nbformat.read(path, as_version=4))
        nb = copy.deepcopy(release)
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in pset.kernel_cells:
                head = cell.source.split(STUB)[0]
                cell.source = head + body_of(mine[grade_id].source) + "}"
        nbformat.validate(nb)
        nbformat.write(nb, path)
        written.append(path)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(REPO / "build" / "bin" / "cudalab"))
    ap.add_argument("assignments", nargs="*", default=[p.assignment for p in PSETS])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = grading_env(Path(args.binary).resolve(), Path(scratch))
        root = copy_course(Path(scratch) / "assignments")
        for pset in (p for p in PSETS if p.assignment in args.assignments):
            nbgrader(["generate_assignment", pset.assignment], root, env)
            for path in refresh(pset, root):
                print(f"refreshed {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
