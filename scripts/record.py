#!/usr/bin/env python3
"""record.py — `make record`: the lecture notebooks' results recorded on this machine's GPU.

Executes each lecture notebook (notebooks/[0-9]*.ipynb) and problem set (the source versions in
notebooks/assignments/source/) with nbclient on the cudalab kernel, with
CUDALAB_RECORD=OUT/GPU in the kernel's environment: the notebook's `%recorded NAME` cell then records
every device command's results (document and view, keyed by the command) into OUT/GPU/NAME.json,
labelled with the device, the date and the cudalab version (kernel/grade/recorded.h has the
format). GPU is the device's name as a folder (gpu_folder(): "NVIDIA H100 80GB HBM3" ->
h100-80gb-hbm3), so that each GPU's recordings sit beside the others' and %recorded picks one. Afterwards each file is checked: it exists, ran on CUDA, and validates against
tests/schemas/recorded.schema.json (and each document against its magic's schema), and the figures
the notebook's prose quotes are checked against it (scripts/figures.py; `figures.py refresh` first
fills the ones still to be recorded).

Without a GPU it fails at once, before running anything: recorded results of the CPU backend
would be shown to students as GPU numbers. `--allow-cpu` lifts that, only to make test fixtures
(tests/notebooks/fixtures/), never the notebooks' own files.

A cell that fails on the GPU (a %assert whose claim does not hold there) does not stop the
recording: the rest of the notebook still runs and is recorded, and the end lists each failed cell
and exits 1, so that the prose is fixed before the files are committed.

Needs: nbclient, nbformat, jupyter_client, pyzmq (jsonschema, which nbformat brings, for the check).

Usage: scripts/record.py [--binary build/bin/cudalab] [--out notebooks/recorded] [--timeout 600]
                         [--allow-cpu] [NOTEBOOK...]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import figures  # scripts/figures.py: the prose's figures held to the recordings
from schemas import load_schema  # scripts/schemas.py: the same loader the tests use

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "tests" / "schemas"
sys.path.insert(0, str(REPO / "scripts"))
from demo import kernelspec_path  # noqa: E402  (the same private kernelspec as make demo)


def backend(binary: Path) -> tuple[str, str]:
    """(backend, device name) that %device reports on this machine, through the command-line mode."""
    out = subprocess.run([str(binary), "--run", "%device", "--json"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"record: {binary} --run %device failed: {out.stderr.strip()}")
    doc = next(json.loads(l) for l in out.stdout.splitlines() if l.startswith("{"))
    devices = doc.get("devices") or [{}]
    return doc.get("backend", "?"), devices[0].get("name", "?")


def NOTEBOOKS() -> list[Path]:
    """What make record records: the lecture notebooks and the problem sets' source versions (their
    solutions in place, so that the speed bars can be checked against the reference solutions), those
    that name their recording (%recorded NAME)."""
    sources = sorted((REPO / "notebooks" / "assignments" / "source").glob("*/*.ipynb"))
    return sorted((REPO / "notebooks").glob("[0-9]*.ipynb")) + [p for p in sources if "%recorded " in p.read_text()]


def gpu_folder(device: str) -> str:
    """The folder a device's recordings go to: its name without the vendor, lowercased, words joined by
    '-' ("NVIDIA H200" -> "h200"); %recorded --gpu accepts the folder or the start of it."""
    words = re.findall(r"[a-z0-9]+", device.lower())
    return "-".join(w for w in words if w != "nvidia") or "gpu"


def recording_shown(notebook: Path) -> Path | None:
    """The recording %recorded shows for NOTEBOOK without --gpu or CUDALAB_RECORDED_GPU: of
    recorded/*/NAME.json beside it, the newest ("recorded_at"; kernel/grade/recorded.c's rule)."""
    found = sorted(notebook.parent.glob(f"recorded/*/{notebook.stem}.json"))
    return max(found, key=lambda p: json.loads(p.read_text()).get("recorded_at", ""), default=None)


def validate(path: Path, binary: Path | None = None) -> list[str]:
    """What is wrong with the recorded file PATH against the current schemas ([] when nothing), their
    lists of variants those of the kernel BINARY (default: $CUDALAB_BIN or build/bin/cudalab)."""
    import jsonschema
    problems = []
    doc = json.loads(path.read_text())
    try:
        jsonschema.validate(doc, json.loads((SCHEMAS / "recorded.schema.json").read_text()))
    except jsonschema.ValidationError as e:
        return [f"{path.name}: {e.message} at {'/'.join(map(str, e.absolute_path))}"]
    for c in doc["commands"]:
        if " --show-source " in f"{c['key']} ":
            continue        # a built-in kernel's source, not a run: its magic's schema describes runs
        for r in c["results"]:
            d = r["doc"]
            schema = SCHEMAS / f"{d['magic']}.schema.json" if d else None
            if schema and schema.exists():
                try:
                    jsonschema.validate(d, load_schema(d["magic"], binary))
                except jsonschema.ValidationError as e:
                    problems.append(f"{path.name}: {c['key']!r}: {e.message}")
    return problems


def record(path: Path, out: Path, timeout: int) -> list[str]:
    """Executes the notebook PATH in record mode; returns its failed cells ('cell N: ename: evalue')."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    os.environ["CUDALAB_RECORD"] = str(out.resolve())
    client = NotebookClient(nb, kernel_name="cudalab", timeout=timeout, allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    failed = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                failed.append(f"{path.name}, cell {i}: {o.get('ename')}: {o.get('evalue')}")
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(REPO / "build" / "bin" / "cudalab"))
    ap.add_argument("--out", help="the recorded/ folder (default: recorded/ beside each notebook)")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--allow-cpu", action="store_true", help="record on the CPU backend (test fixtures only)")
    ap.add_argument("notebooks", nargs="*")
    args = ap.parse_args()
    binary = Path(args.binary).resolve()
    kind, name = backend(binary)
    gpu = gpu_folder(name)
    if kind != "cuda" and not args.allow_cpu:
        print(f"record: no GPU here (%device reports the {kind} backend: {name}); make record must run on a "
              "GPU machine (an H100 or H200): nothing was recorded", file=sys.stderr)
        return 2
    paths = [Path(p) for p in args.notebooks] or NOTEBOOKS()
    failed, problems = [], []
    with tempfile.TemporaryDirectory(prefix="cudalab-record-") as tmp:
        os.environ["JUPYTER_PATH"] = str(kernelspec_path(Path(tmp), binary))
        for path in paths:
            out = (Path(args.out) if args.out else path.parent / "recorded") / gpu
            out.mkdir(parents=True, exist_ok=True)
            print(f"record: {path.name} on {name} ({kind}) into {out}", flush=True)
            failed += record(path, out, args.timeout)
            target = out / f"{path.stem}.json"
            if not target.exists():
                problems.append(f"{path.name}: no {target} was written (does its first cell say %recorded "
                                f"{path.stem}?)")
                continue
            problems += validate(target, binary)
            if not args.out:  # the prose's figures against the recording just made (scripts/figures.py)
                problems += [f"{path.name}: a quoted figure: {p}" for p in figures.problems(path)]
            backend_of = json.loads(target.read_text())["device"].get("backend")
            if backend_of != "cuda" and not args.allow_cpu:
                problems.append(f"{target.name}: recorded on the {backend_of} backend, not on a GPU")
    for line in failed:
        print(f"record: a cell failed on this GPU (its claim does not hold here): {line}", file=sys.stderr)
    for line in problems:
        print(f"record: {line}", file=sys.stderr)
    if not failed and not problems:
        print(f"record: {len(paths)} notebooks recorded on {name} (recorded/{gpu}/ beside each)")
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
