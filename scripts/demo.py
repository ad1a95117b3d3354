#!/usr/bin/env python3
"""demo.py — `make demo`: every lecture notebook executed headless, as HTML to read or hand out.

Executes each notebooks/*.ipynb with nbclient on the cudalab kernel (the CUDA backend when a GPU
is there, else the CPU analogues, as the kernel decides), then writes into the output folder
(default build/demo/):

    NAME.ipynb    the executed notebook, with its outputs
    NAME.html     its HTML export (nbconvert's lab template: result tables as HTML, sweep charts
                  as the SVG fallback, so the page needs no network)
    index.html    a list of the above

The kernel is found through a private JUPYTER_PATH holding a cudalab kernelspec whose argv[0] is
--binary (as the tests do), so no installed kernelspec is needed, and an installed one is not used.

A cell that fails (an error, a timeout, a dead kernel) fails the run: the rest of that notebook is
skipped, the other notebooks still run, and the end names each notebook and cell that failed; the
exit status is 1. Output to stderr in a cell that succeeds is reported as a warning.

Usage: scripts/demo.py [--binary build/bin/cudalab] [--out build/demo] [--timeout 600] [NOTEBOOK...]
"""
from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab"


def kernelspec_path(root: Path, binary: Path) -> Path:
    """ROOT/share/jupyter with kernels/cudalab/ whose kernel.json runs BINARY; returns that dir."""
    data = root / "share" / "jupyter"
    spec_dir = data / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True)
    spec = json.loads((SPEC / "kernel.json").read_text())
    spec["argv"] = [str(binary)] + list(spec["argv"][1:])
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    for logo in SPEC.glob("logo-*"):            # logo-svg.svg and the PNGs
        shutil.copy(logo, spec_dir / logo.name)
    return data


def first_line(src: str, width: int = 70) -> str:
    line = next((l for l in src.splitlines() if l.strip()), "")
    return line if len(line) <= width else line[:width - 1] + "…"


def cell_label(nb, index: int) -> str:
    """'cell 7 (code cell 4, id c7be1f38): %device' — the number is the 1-based position in the
    notebook, as a person counts cells in JupyterLab."""
    cell = nb.cells[index]
    code_no = sum(1 for c in nb.cells[:index + 1] if c.cell_type == "code")
    cid = f", id {cell.get('id')}" if cell.get("id") else ""
    return f"cell {index + 1} (code cell {code_no}{cid}): {first_line(cell.source)}"


def run_notebook(path: Path, out: Path, timeout: int, logs: Path) -> tuple[list[str], list[str]]:
    """Executes PATH, writes NAME.ipynb and NAME.html into OUT; returns (failures, warnings).
    The kernel's own log (its process's stderr) goes to LOGS/NAME.log, shown when a cell fails."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    current = {"index": None}

    def on_cell_start(cell, cell_index, **_):
        current["index"] = cell_index

    client = NotebookClient(nb, kernel_name="cudalab", timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=on_cell_start)
    failures: list[str] = []
    warnings: list[str] = []
    log = logs / f"{path.stem}.log"
    show_log = False                # the kernel's log helps when it died or hung, not on an error
    try:
        with open(log, "wb") as fh:
            client.execute(stderr=fh)
    except CellExecutionError as e:
        failures.append(_failure(nb, current["index"], path, _error_text(nb, current["index"]) or str(e)))
    except CellTimeoutError:
        show_log = True
        failures.append(_failure(nb, current["index"], path, f"did not finish within {timeout} s"))
    except DeadKernelError as e:
        show_log = True
        failures.append(_failure(nb, current["index"], path, f"the kernel died: {e}"))
    except Exception as e:  # noqa: BLE001 — anything else still names the notebook and cell
        show_log = True
        failures.append(_failure(nb, current["index"], path, f"{type(e).__name__}: {e}"))

    if show_log:
        tail = log.read_text(errors="replace").splitlines()[-8:] if log.exists() else []
        if tail:
            failures[-1] += "\n      the kernel's log ends:\n" + "\n".join(f"        {l}" for l in tail)

    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                warnings.append(f"{path.name}, {cell_label(nb, i)}: wrote to stderr: "
                                f"{first_line(o.get('text', ''), 200)}")

    nbformat.write(nb, out / path.name)
    body, _ = HTMLExporter().from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    (out / f"{path.stem}.html").write_text(body, encoding="utf-8")
    return failures, warnings


def _error_text(nb, index: int | None) -> str:
    if index is None:
        return ""
    for o in nb.cells[index].get("outputs", []):
        if o.get("output_type") == "error":
            return f"{o.get('ename')}: {o.get('evalue')}"
    return ""


def _failure(nb, index: int | None, path: Path, why: str) -> str:
    where = cell_label(nb, index) if index is not None else "before its first cell"
    return f"{path.name}, {where}\n      {why.strip()}"


def write_index(out: Path, names: list[str], failed: set[str]) -> None:
    items = "\n".join(
        f'<li><a href="{html.escape(n)}.html">{html.escape(n)}</a>'
        f' (<a href="{html.escape(n)}.ipynb">notebook</a>)'
        f'{" — <strong>a cell failed</strong>" if n in failed else ""}</li>' for n in names)
    (out / "index.html").write_text(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>cudalab demo</title>\n"
        "<h1>cudalab: the lecture notebooks, executed</h1>\n"
        f"<p>Executed {time.strftime('%Y-%m-%d %H:%M')} by <code>make demo</code>.</p>\n"
        f"<ul>\n{items}\n</ul>\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/bin/cudalab", help="the kernel (default %(default)s)")
    ap.add_argument("--out", default="build/demo", help="output folder (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell (default %(default)s)")
    ap.add_argument("notebooks", nargs="*", help="notebooks to run (default notebooks/*.ipynb)")
    args = ap.parse_args()

    binary = Path(args.binary)
    binary = (binary if binary.is_absolute() else REPO / binary).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"demo: no kernel binary at {binary}: run `make` first", file=sys.stderr)
        return 2
    paths = [Path(p).resolve() for p in args.notebooks] or sorted((REPO / "notebooks").glob("*.ipynb"))
    if not paths:
        print("demo: no notebooks/*.ipynb to run", file=sys.stderr)
        return 2
    out = Path(args.out)
    out = (out if out.is_absolute() else REPO / out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    failures: list[str] = []
    warnings: list[str] = []
    failed: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="cudalab-demo-") as tmp:
        # ours first (the kernelspec), then whatever the environment adds (nbconvert's templates
        # where they are installed outside the usual prefixes)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            p for p in (str(kernelspec_path(Path(tmp), binary)), os.environ.get("JUPYTER_PATH")) if p)
        os.environ["JUPYTER_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
        print(f"demo: {len(paths)} notebook(s) on {binary}", flush=True)
        t_all = time.monotonic()
        for path in paths:
            t0 = time.monotonic()
            print(f"demo: running {path.name} …", end="", flush=True)
            f, w = run_notebook(path, out, args.timeout, Path(tmp))
            print(f" {'FAILED' if f else 'ok'} ({time.monotonic() - t0:.1f} s)", flush=True)
            failures += f
            warnings += w
            if f:
                failed.add(path.stem)
    write_index(out, [p.stem for p in paths], failed)

    for w in warnings:
        print(f"demo: warning: {w}")
    rel = os.path.relpath(out, Path.cwd())
    rel = str(out) if rel.startswith("..") else rel
    print(f"demo: executed notebooks and HTML in {rel}/ (open {rel}/index.html), "
          f"{time.monotonic() - t_all:.1f} s")
    if failures:
        print(f"demo: {len(failures)} notebook(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
