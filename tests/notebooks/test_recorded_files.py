"""The committed recorded GPU results (recorded/GPU/NAME.json beside the lecture notebooks and the
problem sets' sources, written by `make record`) and the
test fixtures validate against the current schemas: tests/schemas/recorded.schema.json for the file,
and each result document against its magic's own schema, so a change of a document's shape that the
recordings do not follow fails here (scripts/record.py's `validate` is the one check). A broken file
must fail it: the fixtures broken on purpose check that."""
import json
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from record import gpu_folder, validate  # noqa: E402

RECORDED = sorted((REPO / "notebooks" / "recorded").glob("*/*.json")) + \
    sorted((REPO / "notebooks" / "assignments" / "source").glob("*/recorded/*/*.json"))
FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "recorded" / "mini-recorded.json"


@pytest.mark.parametrize("path", RECORDED + [FIXTURE], ids=[f"{p.parent.name}/{p.name}" for p in RECORDED + [FIXTURE]])
def test_recorded_file_validates(path):
    assert validate(path) == []
    doc = json.loads(path.read_text())
    assert doc["notebook"] == path.stem
    if path in RECORDED:        # a notebook's own: recorded on a GPU, in its folder, for a notebook that names it
        assert doc["device"]["backend"] == "cuda", f"{path.name} was not recorded on a GPU"
        assert path.parent.name == gpu_folder(doc["device"]["name"]), f"{path} is not in its GPU's folder"
        nb = path.parents[2] / f"{path.stem}.ipynb"
        assert nb.exists() and f"%recorded {path.stem}" in nb.read_text()


def broken(tmp_path, change) -> pathlib.Path:
    doc = json.loads(FIXTURE.read_text())
    change(doc)
    p = tmp_path / FIXTURE.name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("change", [
    lambda d: d.update(version=2),
    lambda d: d.pop("device"),
    lambda d: d["commands"][0].update(key="matmul without its %"),
    lambda d: d["commands"][0]["results"][0].pop("view"),
    lambda d: d["commands"][0]["results"][0]["doc"].update(backend="tpu"),         # against matmul.schema.json
    lambda d: d["commands"][0]["results"][0]["doc"]["runs"][0].update(gflops="fast"),
], ids=["version", "device", "key", "view", "doc-backend", "doc-run-field"])
def test_broken_file_fails(tmp_path, change):
    assert validate(broken(tmp_path, change)) != []
