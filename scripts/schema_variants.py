"""schema_variants.py — a family's list of variants in its result document's JSON schema
(tests/schemas/NAME.schema.json), filled from the kernel when the schema is loaded.

The list lives in one place, the rows of the family's contract (include/cudalab/FAMILY.h, and the
variants broken on purpose of kernel/student/broken.c), and the kernel reports it in `%help FAMILY`.
A schema says {"x-cudalab-variants": "FAMILY"} where that list belongs; `fill` puts
{"enum": [the names]} there, or a student's kernel's name, so a new row needs no schema edit. The tests (conftest.load_schema)
and scripts/record.py (validating recorded files) load schemas through it."""
from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEY = "x-cudalab-variants"


def kernel_binary() -> Path:
    """$CUDALAB_BIN (relative to the repo root if not absolute) or build/bin/cudalab."""
    path = Path(os.environ.get("CUDALAB_BIN") or "build/bin/cudalab")
    return path if path.is_absolute() else REPO / path


@functools.lru_cache(maxsize=None)
def help_variants(family: str, binary: str) -> tuple[dict, ...]:
    """FAMILY's built-in variants in row order (those broken on purpose last), as `%help FAMILY` lists
    them: {"name", "launch", "teaches", "broken", ...}."""
    out = subprocess.run([binary, "--run", f"%help {family}", "--json"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "CUDALAB_BACKEND": "cpu"})
    if out.returncode != 0:
        raise RuntimeError(f"{binary} --run '%help {family}' failed: {out.stderr.strip()}")
    doc = json.loads(next(l for l in out.stdout.splitlines() if l.startswith("{")))
    return tuple(v for v in doc["variants"] if not v.get("yours"))


def family_variants(family: str, binary: str) -> tuple[str, ...]:
    """The names of FAMILY's built-in variants, the broken ones included."""
    return tuple(v["name"] for v in help_variants(family, binary))


# a student's %%kernel, run as one more variant of its family: named as a C identifier (the
# built-in names have '-' and lower case; a student's cannot be one of them: kernel/student/store.c)
STUDENT_KERNEL = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "a student's kernel"}


def fill(schema, binary: Path | None = None):
    """schema with every {"x-cudalab-variants": FAMILY} replaced by the enum of FAMILY's variants, or
    a student's kernel's name."""
    if isinstance(schema, dict):
        if KEY in schema:
            return {"anyOf": [{"enum": list(family_variants(schema[KEY], str(binary or kernel_binary())))},
                              STUDENT_KERNEL]}
        return {k: fill(v, binary) for k, v in schema.items()}
    if isinstance(schema, list):
        return [fill(v, binary) for v in schema]
    return schema
