#!/usr/bin/env python3
"""figures.py — the figures a lecture notebook's prose quotes, checked against the GPU recordings.

A markdown cell that quotes a measured figure ("the tiled kernel reaches 5.8 TFLOP/s on an H200")
says in its metadata where the figure comes from, so that a test can hold the prose to the
recording and a new recording that moves a figure fails until the words are changed:

    "cudalab": {"figures": [
      {"quote": "5.8 TFLOP/s", "gpu": "h200", "value": 5.8, "scale": 0.001,
       "read": {"command": "%matmul --size 512 --variant naive,tiled --reps 5 --warmup 1",
                "path": "runs[variant=tiled].gflops"},
       "per": {...}},                                  # optional: the figure is read ÷ per
      {"quote": "~500 cycles", "source": "the lecture's figure for global memory"}]}

- quote: an exact substring of the cell's text holding the number (value, as written; a range
  "28–34" has value [28, 34]).
- gpu: the folder under recorded/ beside the notebook; recording: the file's name (default: the
  notebook's own).
- read / per: command is a key of the recording's commands (absent: the path starts at the file's
  top level), result an index into its results (default 0), path a dotted path into the result's
  document with [key=value,...] selectors on lists (exactly one element must match) and [N] indices.
- scale: a factor on the recorded figure (0.001 for GFLOP/s as TFLOP/s, 100 for a fraction in %).
- A sentence that names a GPU model quotes that GPU's recording (no H100 figure under "on an H200").
- A figure holds when it is within TOLERANCE of the recorded one (a range: the recorded figure lies
  within it, widened by TOLERANCE).
- source instead of read: a figure that is not this project's measurement (the lecture's, a
  datasheet's); nothing to compare it with, but its origin is stated.
- value null: a figure still to be recorded; its quote holds "??" in place of the number, and
  `refresh` writes both from the recording (fmt: a Python format spec, default three significant
  digits). check fails on it.

A figure is a number followed by a unit of measurement (FIGURE_UNITS). check fails on any figure
that no tag's quote covers in a sentence naming a GPU (GPU_WORDS); inline code and code blocks are
not prose.

Usage: scripts/figures.py check NOTEBOOK...     every tag holds, no untagged figure (exit 1 if not)
       scripts/figures.py refresh NOTEBOOK...   fill pending (value null) tags from the recordings
       scripts/figures.py show RECORDING.json [--grep TEXT]   the commands and their numeric paths
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

TOLERANCE = 0.10

# The units that make a number a measured figure; "×" only attached to its number and followed by
# no operand (1.9× faster is a speed-up; 16 × 16, 16×16, 2×TILE and 4 × floor(…) are products).
FIGURE_UNITS = r"(?:(?:\s|\u00a0)?(?:[GTMK]B/s|[GTM]FLOP/s|[GTM]?B/cycle|ms|µs|us|ns|s|cycles?|%)|×(?!\s*[\d(]|\w))"
NUMBER = r"\d[\d,]*(?:\.\d+)?"
# A list or range of numbers sharing one unit ("0.25, 1.4 and 7.2 TFLOP/s", "28–34 %") is one
# figure of several numbers, each of which must be covered.
FIGURE = re.compile(rf"(?<![\w.])(?:{NUMBER}(?:,\s+|\s+and\s+|\s+or\s+|\s*[–-]\s*))*{NUMBER}"
                    rf"{FIGURE_UNITS}(?!\w)")
NUMBER_RE = re.compile(NUMBER)
# A sentence that names a GPU is held to its figures being tagged.
GPU_MODELS = re.compile(r"\b(H100|H200|A100|V100|L4|T4)\b")
GPU_WORDS = re.compile(r"\b(?:H100|H200|A100|V100|L4|T4|GPUs?|recorded)\b")
SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z*(_\[])|\n\s*\n|\n(?=\s*[-*|#>]|\s*\d+\.)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
SELECTOR = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


class FigureError(Exception):
    pass


def cell_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER_RE.findall(text)]


def _scalar_equal(have, want: str) -> bool:
    if isinstance(have, bool) or have is None:
        return str(have).lower() == want.lower()
    if isinstance(have, (int, float)):
        try:
            return float(want) == float(have)
        except ValueError:
            return False
    return str(have) == want


def resolve(doc, path: str):
    """The value at PATH in DOC (see the module's comment); FigureError naming the step that fails."""
    here, seen = doc, ""
    for m in SELECTOR.finditer(path):
        key, sel = m.group(1), m.group(2)
        if key is not None:
            if not isinstance(here, dict) or key not in here:
                raise FigureError(f"no '{key}' at '{seen or '.'}'" +
                                  (f" (keys: {', '.join(sorted(here))})" if isinstance(here, dict) else ""))
            here, seen = here[key], f"{seen}.{key}" if seen else key
        elif sel.strip().lstrip("-").isdigit():
            if not isinstance(here, list) or not -len(here) <= int(sel) < len(here):
                raise FigureError(f"no element [{sel}] at '{seen}'")
            here, seen = here[int(sel)], f"{seen}[{sel}]"
        else:
            conds = [c.split("=", 1) for c in sel.split(",")]
            if not isinstance(here, list) or any(len(c) != 2 for c in conds):
                raise FigureError(f"selector [{sel}] at '{seen}' needs a list and key=value pairs")
            hits = [e for e in here if isinstance(e, dict) and
                    all(k.strip() in e and _scalar_equal(e[k.strip()], v.strip()) for k, v in conds)]
            if len(hits) != 1:
                raise FigureError(f"[{sel}] at '{seen}' matches {len(hits)} elements, not one")
            here, seen = hits[0], f"{seen}[{sel}]"
    return here


class Recordings:
    """The recorded files beside one notebook, loaded once each."""

    def __init__(self, notebook: Path):
        self.notebook = notebook
        self.cache: dict[Path, dict] = {}

    def file(self, tag: dict) -> Path:
        gpu = tag.get("gpu")
        if not gpu:
            raise FigureError("no 'gpu' (the folder under recorded/)")
        return self.notebook.parent / "recorded" / gpu / f"{tag.get('recording', self.notebook.stem)}.json"

    def load(self, tag: dict) -> dict:
        path = self.file(tag)
        if path not in self.cache:
            if not path.exists():
                raise FigureError(f"no recording {path.relative_to(self.notebook.parent)}")
            self.cache[path] = json.loads(path.read_text())
        return self.cache[path]

    def read(self, tag: dict, ref: dict) -> float:
        rec = self.load(tag)
        if not isinstance(ref, dict) or "path" not in ref:
            raise FigureError("a read needs a 'path'")
        doc = rec
        if "command" in ref:
            cmds = [c for c in rec.get("commands", []) if c.get("key") == ref["command"]]
            if not cmds:
                raise FigureError(f"the recording has no command {ref['command']!r}")
            results = cmds[0].get("results", [])
            i = ref.get("result", 0)
            if not isinstance(i, int) or not 0 <= i < len(results):
                raise FigureError(f"{ref['command']!r} has {len(results)} results, no [{i}]")
            doc = results[i].get("doc")
        v = resolve(doc, ref["path"])
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise FigureError(f"{ref['path']} is {v!r}, not a number")
        return float(v)

    def figure(self, tag: dict) -> float:
        """The recorded figure TAG quotes: scale · read [÷ per]."""
        v = self.read(tag, tag["read"])
        if "per" in tag:
            d = self.read(tag, tag["per"])
            if d == 0:
                raise FigureError(f"per {tag['per']['path']} is 0")
            v /= d
        return v * float(tag.get("scale", 1))


def within(value, recorded: float) -> bool:
    slack = TOLERANCE * abs(recorded)
    if isinstance(value, list):
        return value[0] - slack <= recorded <= value[1] + slack
    return abs(value - recorded) <= slack


def spans(text: str, quote: str) -> list[tuple[int, int]]:
    out, i = [], text.find(quote)
    while quote and i >= 0:
        out.append((i, i + len(quote)))
        i = text.find(quote, i + 1)
    return out


def sentences(text: str):
    """(start, end) of each sentence of TEXT's prose (code blanked out, offsets kept)."""
    prose = CODE.sub(lambda m: " " * len(m.group()), text)
    start = 0
    for end in [m.start() for m in SENTENCE_END.finditer(prose)] + [len(prose)]:
        yield start, end, prose[start:end]
        start = end


def sentence_of(text: str, quote: str) -> str:
    """The sentence holding QUOTE's first occurrence (a quote is read in its own sentence)."""
    i = text.find(quote)
    return next((s for a, b, s in sentences(text) if a <= i < b), "")


def untagged(text: str, tags: list[dict]) -> list[str]:
    """The sentences of TEXT naming a GPU with a figure no tag's quote covers (the figure quoted)."""
    covered = [s for t in tags if isinstance(t, dict) and isinstance(t.get("quote"), str)
               for s in spans(text, t["quote"])]
    out = []
    for start, _, sentence in sentences(text):
        if GPU_WORDS.search(sentence):
            for f in FIGURE.finditer(sentence):
                nums = [(start + f.start() + n.start(), start + f.start() + n.end())
                        for n in NUMBER_RE.finditer(f.group())]
                if not all(any(lo <= a and b <= hi for lo, hi in covered) for a, b in nums):
                    out.append(f"{f.group()!r} in: {' '.join(sentence.split())[:160]}")
    return out


def tag_problems(text: str, tag: dict, recs: Recordings) -> list[str]:
    if not isinstance(tag, dict) or not isinstance(tag.get("quote"), str) or not tag["quote"]:
        return [f"a tag without a quote: {tag!r}"]
    q = tag["quote"]
    if q not in text:
        return [f"{q!r}: not in the cell's text"]
    if "source" in tag:
        return [] if isinstance(tag["source"], str) and tag["source"].strip() else [f"{q!r}: empty source"]
    if "read" not in tag:
        return [f"{q!r}: neither 'read' nor 'source'"]
    value = tag.get("value")
    try:
        recorded = recs.figure(tag)
    except FigureError as e:
        return [f"{q!r}: {e}"]
    if value is None:
        return [f"{q!r}: still to be filled (value null; recorded {recorded:.4g}): run refresh"]
    vals = value if isinstance(value, list) else [value]
    if (isinstance(value, list) and len(value) != 2) or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return [f"{q!r}: value {value!r} is neither a number nor [low, high]"]
    written = numbers(q)
    if not all(any(math.isclose(v, w, rel_tol=1e-9) for w in written) for v in vals):
        return [f"{q!r}: value {value!r} is not the number written in the quote"]
    named = set(GPU_MODELS.findall(sentence_of(text, q)))
    device = recs.load(tag).get("device", {}).get("name", "")
    if named and not any(n in device for n in named):
        return [f"{q!r}: quotes the {device} recording in a sentence naming the {', '.join(sorted(named))}"]
    if not within(value, recorded):
        return [f"{q!r}: the recording says {recorded:.4g} ({recs.file(tag).parent.name}), "
                f"more than {TOLERANCE:.0%} from {value!r}"]
    return []


def problems(notebook: Path) -> list[str]:
    """Everything wrong with NOTEBOOK's figures, each naming its cell."""
    nb = json.loads(notebook.read_text())
    recs, out = Recordings(notebook), []
    for i, cell in enumerate(nb.get("cells", [])):
        tags = (cell.get("metadata", {}).get("cudalab") or {}).get("figures", [])
        text = cell_text(cell)
        if cell.get("cell_type") != "markdown":
            out += [f"c{i}: figures tagged on a {cell.get('cell_type')} cell"] if tags else []
            continue
        if not isinstance(tags, list):
            out.append(f"c{i}: 'figures' is not a list")
            continue
        out += [f"c{i}: {p}" for t in tags for p in tag_problems(text, t, recs)]
        out += [f"c{i}: untagged figure {u}" for u in untagged(text, tags)]
    return out


def default_format(x: float) -> str:
    s = f"{x:.3g}"
    return f"{x:.0f}" if "e" in s else s


def refresh(notebook: Path) -> list[str]:
    """Fill each pending tag (value null, "??" in its quote) from the recording; what was filled."""
    nb = json.loads(notebook.read_text())
    recs, done = Recordings(notebook), []
    for i, cell in enumerate(nb.get("cells", [])):
        for tag in (cell.get("metadata", {}).get("cudalab") or {}).get("figures", []):
            if not isinstance(tag, dict) or tag.get("value", 0) is not None or "??" not in tag.get("quote", ""):
                continue
            text = cell_text(cell)
            if tag["quote"] not in text:
                raise FigureError(f"c{i}: {tag['quote']!r} is not in the cell's text")
            figure = recs.figure(tag)
            shown = format(figure, tag["fmt"]) if "fmt" in tag else default_format(figure)
            quote = tag["quote"].replace("??", shown)
            cell["source"] = text.replace(tag["quote"], quote)
            tag["quote"], tag["value"] = quote, float(shown.replace(",", ""))
            done.append(f"c{i}: {quote}")
    if done:
        notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return done


def numeric_paths(doc, prefix: str = "", depth: int = 0):
    """(path, value) for each number in DOC, lists of objects addressed by their 'variant'-like key."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from numeric_paths(v, f"{prefix}.{k}" if prefix else k, depth + 1)
    elif isinstance(doc, list) and depth < 8:
        for j, e in enumerate(doc):
            key = next((k for k in ("variant", "name", "stride", "size", "n") if isinstance(e, dict) and k in e), None)
            sel = f"[{key}={e[key]}]" if key and sum(1 for x in doc if isinstance(x, dict) and x.get(key) == e[key]) == 1 else f"[{j}]"
            yield from numeric_paths(e, prefix + sel, depth + 1)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield prefix, doc


def show(recording: Path, grep: str | None) -> None:
    rec = json.loads(recording.read_text())
    print(f"{recording}: {rec.get('device', {}).get('name')} {rec.get('recorded_at')}")
    for cmd in rec.get("commands", []):
        print(f"\ncommand: {json.dumps(cmd['key'])}")
        for r, res in enumerate(cmd.get("results", [])):
            for path, v in numeric_paths(res.get("doc")):
                if grep is None or grep in path:
                    print(f"  result {r}  {path} = {v:.6g}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=["check", "refresh", "show"])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--grep")
    a = ap.parse_args(argv)
    if a.action == "show":
        for p in a.paths:
            show(p, a.grep)
        return 0
    bad = 0
    for nb in a.paths:
        try:
            found = refresh(nb) if a.action == "refresh" else problems(nb)
        except FigureError as e:
            found, bad = [str(e)], bad + 1
        for line in found:
            print(f"{nb.name}: {line}")
        bad += len(found) if a.action == "check" else 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
