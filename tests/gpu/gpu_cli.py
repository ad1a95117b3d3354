"""gpu_cli.py — what the family GPU tests share: the binary, running a cell through the
command line, that every run's check passed, and the `gpu` fixture (skip without a GPU, or fail under CUDALAB_REQUIRE_GPU=1).
Standard library and pytest only, so these tests also run with plain python3 and --noconftest."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def binary() -> Path:
    p = Path(os.environ.get("CUDALAB_BIN", "build/bin/cudalab"))
    return p if p.is_absolute() else REPO / p


def run(cell: str, env: dict | None = None, timeout: float = 300):
    r = subprocess.run([str(binary()), "--run", cell, "--json"], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, **(env or {})})
    docs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()] if r.returncode == 0 else []
    return r.returncode, docs, r.stderr


def magic_doc(magic: str, cell: str, env: dict | None = None) -> dict:
    """The document of the first result of %magic in the cell; the cell must succeed silently."""
    rc, docs, err = run(cell, env)
    assert rc == 0, err
    assert err == "", f"stderr on success: {err!r}"
    return next(d for d in docs if d.get("magic") == magic)


def assert_all_passed(doc: dict) -> None:
    bad = [r for r in doc["runs"] if r["check"]["passed"] is not True]
    assert not bad, json.dumps(bad, indent=1)[:4000]


@pytest.fixture(scope="module")
def gpu() -> dict:
    reason = ""
    try:
        rc, docs, err = run("%device", timeout=120)
        doc = docs[0] if docs else {}
        if rc != 0:
            reason = f"`cudalab --run %device --json` exited {rc}: {err.strip()}"
        elif doc.get("backend") != "cuda":
            reason = doc.get("backend_note") or f"backend is {doc.get('backend')!r}"
    except Exception as e:  # noqa: BLE001 - any failure to run is the reason
        reason, doc = f"cannot run {binary()}: {e}", {}
    skip_without_gpu(reason)
    return doc


def skip_without_gpu(reason: str) -> None:
    """Where reason says why there is no GPU: skip, or fail under CUDALAB_REQUIRE_GPU=1 (make test-gpu)."""
    if reason:
        if os.environ.get("CUDALAB_REQUIRE_GPU") == "1":
            pytest.fail(f"make test-gpu needs a GPU: {reason}", pytrace=False)
        pytest.skip(f"needs a CUDA device: {reason}")
