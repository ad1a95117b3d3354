"""The result documents' JSON schemas (tests/schemas/NAME.schema.json) as a validator reads them: a
family's schema with the parts every family's runs share put in its $defs. One loader, used by the
tests (tests/conftest.py) and by scripts/record.py's check of the recordings."""
from __future__ import annotations

import json
from pathlib import Path

import schema_variants

SCHEMAS = Path(__file__).resolve().parents[1] / "tests" / "schemas"

# part file -> its name in a family schema's $defs
SHARED = {"counters": "counters", "roofline": "roofline", "launch_occupancy": "launch_occupancy",
          "broken": "broken", "check": "check_doc"}


def load_schema(name: str, binary: Path | None = None) -> dict:
    """tests/schemas/NAME.schema.json, with what every family's runs share in its $defs: `counters`
    (counters.schema.json, a run's --counters), `roofline` (roofline.schema.json, a run's --roofline,
    the document's roofs in its own $defs), `launch_occupancy` (launch_occupancy.schema.json, its
    launch.occupancy under --launch), `check_doc` (check.schema.json, the check every family's runs
    carry), and a stopped run of a variant broken on purpose (broken.schema.json) as the other shape a
    run may have; its lists of variants are the kernel's (BINARY, else the one under test:
    scripts/schema_variants.py)."""
    schema = schema_variants.fill(json.loads((SCHEMAS / f"{name}.schema.json").read_text()), binary)
    for part, key in SHARED.items():
        shared = json.loads((SCHEMAS / f"{part}.schema.json").read_text())
        shared.pop("$id", None), shared.pop("$schema", None)
        schema.setdefault("$defs", {})[key] = shared
    runs = schema.get("properties", {}).get("runs")
    if runs and "items" in runs:
        run = runs["items"]
        if "$ref" in run:
            run = schema["$defs"][run["$ref"].rsplit("/", 1)[1]]
        for field in ("expected", "outcome", "nondeterministic"):     # a broken variant's finished run
            run.setdefault("properties", {})[field] = {"$ref": f"#/$defs/broken/$defs/{field}"}
        runs["items"] = {"anyOf": [runs["items"], {"$ref": "#/$defs/broken"}]}
    return schema
