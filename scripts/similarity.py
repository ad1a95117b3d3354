#!/usr/bin/env python3
"""similarity.py — the instructor's similarity report of an nbgrader course: for every graded kernel
(a `%%kernel` cell) of the submitted notebooks, its highest similarity to the built-in variants of its
family and to another student's kernel, flagged from a threshold. It is read beside the grades and
changes none: the lecture's own kernel is the textbook answer, so a flag is a question to ask, not a
verdict.

The comparison is the kernel's (`cudalab --similarity`, kernel/exec/similarity.c, with the fingerprint
of kernel/student/fingerprint.c); this script only finds the notebooks in the course's layout,
submitted/STUDENT/ASSIGNMENT/*.ipynb, and gives it, as base code left out of every comparison, what
every student was handed: the %%kernel cells of source/ASSIGNMENT/*.ipynb with their solution regions
(`// BEGIN SOLUTION` … `// END SOLUTION`) cut, as nbgrader's release version has them.

Columns (CSV, one header line; `rows()` gives the same as dicts, similarities as floats):
student, assignment, notebook, kernel, family, builtin, builtin_similarity, peer, peer_kernel,
peer_similarity, flagged ("builtin", "peer", "builtin peer" or "").

Usage: python scripts/similarity.py [--course notebooks/assignments] [--assignment ps2]...
                                    [--threshold T] [--csv OUT.csv] [--binary build/bin/cudalab]
Exit status: 0 (flags included), 1 when a notebook could not be read, 2 on a usage error.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTION = re.compile(r"[ \t]*// BEGIN SOLUTION.*?// END SOLUTION[^\n]*\n?", re.S)


def default_binary() -> Path:
    return Path(os.environ.get("CUDALAB_BIN", REPO / "build" / "bin" / "cudalab"))


def assignments(course: Path) -> list[str]:
    """The assignments that have submissions, sorted."""
    return sorted({p.parent.name for p in (course / "submitted").glob("*/*/*.ipynb")})


def base_notebook(source: Path, out: Path) -> Path:
    """source (an instructor's notebook) as handed out: its %%kernel cells without their solution
    regions, written to out."""
    nb = json.loads(source.read_text())
    for cell in nb.get("cells", []):
        text = "".join(cell.get("source", []))
        if cell.get("cell_type") == "code" and text.lstrip().startswith("%%kernel"):
            cell["source"] = SOLUTION.sub("", text)
    out.write_text(json.dumps(nb))
    return out


def report(course: Path, names: list[str] | None = None, threshold: float | None = None,
           binary: Path | None = None) -> subprocess.CompletedProcess:
    """`cudalab --similarity` over the course's submissions of the assignments named (default: all),
    one run per assignment, its CSV outputs joined under one header."""
    course, binary = Path(course), Path(binary or default_binary())
    out, err, rc = [], [], 0
    for name in names or assignments(course):
        submitted = sorted(str(p) for p in (course / "submitted").glob(f"*/{name}/*.ipynb"))
        if not submitted:
            err.append(f"similarity.py: no submissions of {name} under {course / 'submitted'}\n")
            rc = max(rc, 1)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            base = [base_notebook(p, Path(tmp) / f"{i}.ipynb")
                    for i, p in enumerate(sorted((course / "source" / name).glob("*.ipynb")))]
            args = [str(binary), "--similarity"] + (["--threshold", str(threshold)] if threshold is not None else [])
            for b in base:
                args += ["--base", str(b)]
            r = subprocess.run(args + submitted, capture_output=True, text=True)
        lines = r.stdout.splitlines(keepends=True)
        out += lines if not out else lines[1:]
        err.append(r.stderr)
        rc = max(rc, r.returncode)
    return subprocess.CompletedProcess(["similarity.py"], rc, "".join(out), "".join(err))


def rows(course: Path, names: list[str] | None = None, threshold: float | None = None,
         binary: Path | None = None) -> list[dict]:
    """The report as dicts (what make grade prints beside the scores); RuntimeError when it failed."""
    r = report(course, names, threshold, binary)
    if r.returncode != 0 and not r.stdout:
        raise RuntimeError(r.stderr)
    found = list(csv.DictReader(io.StringIO(r.stdout)))
    for row in found:
        for key in ("builtin_similarity", "peer_similarity"):
            row[key] = float(row[key])
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--course", type=Path, default=REPO / "notebooks" / "assignments",
                    help="the nbgrader course folder (with source/ and submitted/)")
    ap.add_argument("--assignment", action="append", help="an assignment to report (default: every one submitted)")
    ap.add_argument("--threshold", type=float, help="the similarity from which a row is flagged (default: the kernel's, cudalab --similarity --help)")
    ap.add_argument("--csv", type=Path, help="write the report here instead of stdout")
    ap.add_argument("--binary", type=Path, default=default_binary(), help="the cudalab binary")
    a = ap.parse_args(argv)
    r = report(a.course, a.assignment, a.threshold, a.binary)
    sys.stderr.write(r.stderr)
    if a.csv:
        a.csv.write_text(r.stdout)
    else:
        sys.stdout.write(r.stdout)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
