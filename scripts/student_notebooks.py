#!/usr/bin/env python3
"""student_notebooks.py — the student version of the lecture notebooks, generated from the source
version (the instructor's, committed in notebooks/): `make lab` opens it, tests/notebooks/ executes it.

Each lecture notebook (notebooks/NN-*.ipynb) is written to OUT/ with
- every solution region (a line holding "BEGIN SOLUTION" up to the line holding "END SOLUTION",
  both included) replaced by nbgrader's stub at the indentation of its BEGIN line: "// YOUR CODE HERE"
  inside a %%kernel cell (C++, where "#" would be a preprocessor directive), "# YOUR CODE HERE" in
  a magic cell (a comment there); the %%kernel line, the signature and every line outside the region
  stay as they are;
- every output and execution count cleared.
A student version edited since it was generated (its hash is no longer the one OUT/.generated.json
keeps) is left as it is, and said so: `make lab` regenerates before it opens, and must not throw away
a student's work (delete the file to have it generated again).
A region that is not closed, an END without a BEGIN or a BEGIN inside a region stops the run (exit 1)
naming the notebook and the cell, before anything is written: a student version with a solution left
in it, or with code cut away, is worse than none.

OUT/recorded is made a link to the source's recorded/ folder: the kernel finds a notebook's recorded
GPU results as recorded/GPU/NAME.json relative to its working directory, which Jupyter sets to the
notebook's folder (kernel/grade/recorded_magic.c), so the student version shows them as the source does.

Needs only the standard library (make lab runs it before the lab's Python packages matter).

Usage: scripts/student_notebooks.py [--src notebooks] [--out build/notebooks] [NOTEBOOK...]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
# nbgrader's stubs, as notebooks/assignments/nbgrader_config.py gives them (a test checks they agree)
KERNEL_STUB = "// YOUR CODE HERE"
MAGIC_STUB = "# YOUR CODE HERE"
LECTURE_GLOB = "[0-9]*.ipynb"     # the lecture notebooks, as scripts/record.py finds them
RECORDED = "recorded"
GENERATED = ".generated.json"     # {notebook: sha256 of the version written}


class UnbalancedRegion(ValueError):
    """A cell whose solution markers do not pair up."""


def source_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_kernel_cell(text: str) -> bool:
    lines = text.lstrip().split("\n", 1)
    return lines[0].startswith("%%kernel")


def stub_source(text: str, where: str) -> str:
    """TEXT (a code cell's source) with each solution region replaced by its stub; WHERE names the
    cell in the error raised for markers that do not pair up."""
    stub = KERNEL_STUB if is_kernel_cell(text) else MAGIC_STUB
    out, begun_at = [], None
    for n, line in enumerate(text.split("\n"), 1):
        if BEGIN in line:
            if begun_at is not None:
                raise UnbalancedRegion(f"{where}: line {n} begins a solution region inside the one begun "
                                       f"at line {begun_at}")
            begun_at = n
            out.append(re.match(r"\s*", line).group(0) + stub)
        elif END in line:
            if begun_at is None:
                raise UnbalancedRegion(f"{where}: line {n} ends a solution region that was not begun")
            begun_at = None
        elif begun_at is None:
            out.append(line)
    if begun_at is not None:
        raise UnbalancedRegion(f"{where}: the solution region begun at line {begun_at} is not ended "
                               f"('{END}')")
    return "\n".join(out)


def cell_name(notebook: str, index: int, cell: dict) -> str:
    mark = cell.get("metadata", {}).get("cudalab", {})
    what = f" (exercise {mark.get('exercise')}, {mark.get('role')})" if mark else ""
    return f"{notebook} cell {index}{what}"


def student_notebook(nb: dict, name: str) -> dict:
    """The student version of the notebook NB (parsed .ipynb JSON) named NAME; NB is not changed."""
    nb = json.loads(json.dumps(nb))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        text = source_text(cell)
        if BEGIN in text or END in text:
            cell["source"] = stub_source(text, cell_name(name, i, cell))
        cell["outputs"] = []
        cell["execution_count"] = None
    return nb


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_notebooks(out: Path, converted: list[tuple[str, dict]]) -> list[str]:
    """Each (name, notebook) written to OUT as nbformat writes it (one-space indents, sorted keys),
    except those edited since they were generated; returns the names of those kept."""
    record = out / GENERATED
    generated = json.loads(record.read_text()) if record.exists() else {}
    kept = []
    for name, nb in converted:
        path, text = out / name, json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        if path.exists() and digest(path.read_text(encoding="utf-8")) != generated.get(name):
            kept.append(name)
            continue
        path.write_text(text, encoding="utf-8")
        generated[name] = digest(text)
    record.write_text(json.dumps(generated, indent=1, sort_keys=True) + "\n")
    return kept


def link_recorded(src: Path, out: Path) -> None:
    """OUT/recorded, a relative link to SRC/recorded (replacing an older link, never a folder)."""
    link, target = out / RECORDED, os.path.relpath(src / RECORDED, out)
    if link.is_symlink():
        if os.readlink(link) == target:
            return
        link.unlink()
    elif link.exists():
        raise SystemExit(f"student_notebooks: {link} exists and is not a link: remove it")
    link.symlink_to(target, target_is_directory=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=REPO / "notebooks", help="the source notebooks' folder")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "notebooks", help="the student version's folder")
    ap.add_argument("notebooks", nargs="*", type=Path, help="notebooks to convert (default: SRC/" + LECTURE_GLOB + ")")
    args = ap.parse_args(argv)
    paths = args.notebooks or sorted(args.src.glob(LECTURE_GLOB))
    if not paths:
        print(f"student_notebooks: no notebooks {LECTURE_GLOB} in {args.src}", file=sys.stderr)
        return 1
    try:  # every notebook converted before any is written: a bad region leaves OUT as it was
        converted = [(p.name, student_notebook(json.loads(p.read_text(encoding="utf-8")), p.name)) for p in paths]
    except UnbalancedRegion as e:
        print(f"student_notebooks: {e}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name in write_notebooks(args.out, converted):
        print(f"student_notebooks: kept {args.out / name}: edited since it was generated (delete it to "
              f"generate it again)", file=sys.stderr)
    if (args.src / RECORDED).is_dir():
        link_recorded(args.src.resolve(), args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
