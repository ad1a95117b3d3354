#!/usr/bin/env python3
"""Rewrites the check objects of recorded result documents (notebooks/recorded/GPU/*.json and the test
fixtures, which cannot be recorded again without a GPU) from the families' old spellings to the one
check document every family writes now (kernel/magic/check.h, tests/schemas/check.schema.json):

    mismatches, mismatched_bins (+ written_past_bins) -> wrong.count
    first_bad {index, got, want} | [x] | [x, y]       -> wrong.first {at: {index} | {row, col}, got, want}
    first_mismatch {bin, got, expected}               -> wrong.first {at: {bin, index}, got, want}
    tol, rtol                                         -> tolerance (0 for an exact check)
    racecheck, a run's found                          -> tools.<tool>
    findings (a stopped run)                          -> tools.<the tool that stopped it>.findings

Usage: scripts/migrate-check.py FILE...   (rewrites each file in place; a file already migrated is
left as it is). BSD-3-Clause."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def bin_index(label: str, run: dict) -> int | None:
    """The counter index of a histogram bin's label ("0x41", "a-d", "e"), as the run bins them."""
    if label.startswith("0x"):
        return int(label, 16)
    width = run.get("bin_width") or 1
    if label[:1].isalpha():
        return (ord(label[0].lower()) - ord("a")) // width
    return None


def tolerance(check: dict, run: dict) -> float | None:
    for old in ("tol", "rtol"):
        if old in check:
            return check.pop(old)
    if "tolerance" in check:
        return check.pop("tolerance")
    if "sum" in check and "want" in check and "size" in run:      # %hiding on a GPU: n x 2^-20, absolute
        return run["size"] * 2.0 ** -20
    return 0.0


def migrate_check(check: dict, run: dict, magic: str) -> dict:
    if check.get("passed") is None or "wrong" in check and isinstance(check["wrong"], dict):
        return check
    if "findings" in check and "error" in check:                  # a run the CPU runner or the guard stopped
        tool = "cpu-runner" if "CPU runner" in check["error"] else "harness"
        return {"passed": False, "method": check["method"], "error": check["error"],
                "tools": {tool: {"status": "failed", "findings": check["findings"]}}}
    out = {"passed": check["passed"], "method": check["method"], "tolerance": tolerance(check, run)}
    count, first = 0, None
    if "mismatches" in check:
        count = check.pop("mismatches")
    if "mismatched_bins" in check:
        count = check.pop("mismatched_bins") + check.get("written_past_bins", 0)
    if magic == "grid" and isinstance(check.get("wrong"), int):
        count = check.pop("wrong")
    elif magic == "grid" and "never" in check and not check["passed"]:
        count = check["never"] + check["multiple"]
    fb = check.pop("first_bad", None)
    if isinstance(fb, dict):
        first = {"at": {"index": fb["index"]}, "got": fb.get("got"), "want": fb.get("want")}
    elif isinstance(fb, list):
        at = {"index": fb[0]} if len(fb) == 1 else {"row": fb[1], "col": fb[0]}
        first = {"at": at, "got": None, "want": None}
    fm = check.pop("first_mismatch", None)
    if fm:
        at = {"bin": fm["bin"]}
        index = bin_index(fm["bin"], run)
        if index is not None:
            at["index"] = index
        first = {"at": at, "got": fm["got"], "want": fm["expected"]}
    if not check["passed"] and count == 0:
        count = 1                                                  # one answer, and it is wrong
    out["wrong"] = {"count": count, "first": first}
    for key, value in check.items():
        if key == "racecheck":
            out.setdefault("tools", {})[value.get("tool", "racecheck")] = value
        elif key not in ("passed", "method"):
            out[key] = value
    return out


def migrate_doc(doc: dict) -> None:
    magic = doc.get("magic", "")
    for run in doc.get("runs", []):
        if isinstance(run.get("check"), dict):
            run["check"] = migrate_check(run["check"], run, magic)
            found = run.pop("found", None)
            if found:
                run["check"].setdefault("tools", {})["racecheck"] = found
    if isinstance(doc.get("check"), dict):                         # %kernel's quick check
        doc["check"] = migrate_check(doc["check"], doc, magic)


class JanssonFloat(float):
    """A float written as the kernel's jansson writes it (%.17g, ".0" on a whole number), so that a
    migrated recording differs from its GPU's original only in its checks."""

    def __repr__(self) -> str:
        text = "%.17g" % self
        return text if any(c in text for c in ".eEn") else text + ".0"


def dumps(data) -> str:
    """data as scripts/record.py writes a recording (indent 1), floats as jansson writes them."""
    # the pure-Python encoder (indent given) takes floats' repr from the name float in its module
    json.encoder.float = JanssonFloat
    try:
        return json.dumps(data, ensure_ascii=False, indent=1)
    finally:
        del json.encoder.float


def migrate_file(path: Path) -> bool:
    """Migrates PATH in place; whether anything changed."""
    text = path.read_text()
    data = json.loads(text)
    for command in data.get("commands", []):
        for result in command.get("results", []):
            if result.get("doc"):
                migrate_doc(result["doc"])
    new = dumps(data)
    if new.rstrip() == text.rstrip():
        return False
    path.write_text(new + ("\n" if text.endswith("\n") else ""))
    return True


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    for name in argv:
        print(f"{name}: {'migrated' if migrate_file(Path(name)) else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
