"""papermill on cudalab notebooks (python/cudalab/papermill.py): the translator's %param lines, their
refusals, that the kernel reads every value back exactly, that papermill's registry finds the translator
for the language "cudalab" without being told, and `papermill -p size 128` on a notebook whose
parameters cell holds `%param size 64`, run with the kernelspec of the binary under test."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from conftest import REPO, cell, execute

PYTHON_SRC = REPO / "python"
sys.path.insert(0, str(PYTHON_SRC))     # the package of the tree under test, ahead of an installed copy
from cudalab.papermill import CudalabTranslator  # noqa: E402

ENGINE_ENTRY_POINT = "cudalab.papermill_engine:CudalabEngine"
VALUES = {"size": 128, "title": "it's \"q\" $5 {x}\t", "plain": "tiles of 16", "tiles": [8, 16],
          "variants": ["naive", "tiled"], "check": False, "tol": 1e-3, "skip": None, "neg": -2}
CODE = """\
# Parameters
%param size 128
%param title "it's \\"q\\" $$5 {{x}}\\t"
%param plain 'tiles of 16'
%param tiles 8,16
%param variants naive,tiled
%param check false
%param tol 0.001
# skip: None, not set (the parameters cell's value stays)
%param neg -2
"""


def test_translator_writes_param_lines():
    assert CudalabTranslator.codify(VALUES) == CODE
    assert CudalabTranslator.codify({"x": 1}, comment="two\nlines") == "# two\n# lines\n%param x 1\n"
    assert CudalabTranslator.translate(float("-inf")) == "'-inf'"
    assert CudalabTranslator.translate([-1, 2]) == "'-1,2'"
    assert CudalabTranslator.translate("\x01") == '"\\x01"'


@pytest.mark.parametrize("params,why", [
    ({"d": {"a": 1}}, "a dict has no form"),
    ({"e": []}, "an empty list"),
    ({"l": ["a,b"]}, "holds a comma"),
    ({"n": [[1]]}, "a cudalab list holds"),
    ({"my-size": 1}, "'my-size' is not a cudalab parameter name"),
    ({"z": "a\0b"}, "NUL"),
])
def test_translator_refuses(params, why):
    with pytest.raises(ValueError, match=why):
        CudalabTranslator.codify(params)


def test_inspect_reads_the_parameters_cell():
    nb_cell = nbformat.v4.new_code_cell("%param size 64  # matrix side\n%param v 'naive,tiled'\n%param t 0.5\n")
    got = [(p.name, p.inferred_type_name, p.default, p.help) for p in CudalabTranslator.inspect(nb_cell)]
    assert got == [("size", "int", "64", "matrix side"), ("v", "str", "'naive,tiled'", ""),
                   ("t", "float", "0.5", "")]


def test_the_kernel_reads_the_values_back(kernel):
    km, kc = kernel
    c, _, _ = cell(kc, CODE)
    assert c["status"] == "ok", c
    reply, msgs = execute(kc, "%echo {title}|{plain}|{tiles}|{check}|{tol}|$neg")
    assert reply["content"]["status"] == "ok"
    text = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    assert text == "it's \"q\" $5 {x}\t|tiles of 16|8,16|false|0.001|-2\n"
    c, _, doc = cell(kc, "%matmul --size 16 --tile {tiles} --variant {variants} --reps 1 --warmup 0")
    assert c["status"] == "ok", c
    assert {r["variant"] for r in doc["runs"]} == {"naive", "tiled"}
    assert sorted(r["tile"] for r in doc["runs"] if r["variant"] == "tiled") == [8, 16]


def papermill_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a papermill process: the tree's package first on its path (the editable
    install of scripts/setup.sh declares the papermill.engine entry point that imports it)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(PYTHON_SRC), os.environ.get("PYTHONPATH", "")])}


def test_pyproject_declares_the_engine_entry_point():
    """papermill has no translator entry points: the engine's is what imports the translator."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["papermill.engine"]["cudalab"] == ENGINE_ENTRY_POINT
    from importlib.metadata import entry_points
    assert any(ep.value == ENGINE_ENTRY_POINT for ep in entry_points(group="papermill.engine")), \
        "the installed cudalab (scripts/setup.sh: pip install -e .) does not declare it"


def test_papermill_registry_finds_the_translator(tmp_path):
    probe = ("import papermill.translators as t\n"
             "print(t.papermill_translators.find_translator('cudalab', 'cudalab').__name__)\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                       env=papermill_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "CudalabTranslator"


def test_papermill_run_injects_parameters(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "cudalab", "display_name": "cudalab (CUDA)", "language": "cudalab"}
    nb.metadata["language_info"] = {"name": "cudalab", "pygments_lexer": "cudalab"}
    params = nbformat.v4.new_code_cell("# the defaults\n%param size 64")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params,
                nbformat.v4.new_code_cell("%matmul --size {size} --variant tiled --reps 1 --warmup 0"),
                nbformat.v4.new_code_cell("%assert matmul.m == {size}")]
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, src)
    r = subprocess.run([sys.executable, "-m", "papermill", str(src), str(out), "-p", "size", "128",
                        "--execution-timeout", "60", "--no-progress-bar"],
                       capture_output=True, text=True, timeout=180, env=papermill_env(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    done = nbformat.read(out, as_version=4)
    injected = [c for c in done.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and injected[0].source == "# Parameters\n%param size 128\n"
    assert done.cells.index(injected[0]) == 1, "right after the parameters cell"
    matmul = done.cells[2]
    docs = [o["data"]["application/vnd.cudalab.result+json"] for o in matmul.outputs
            if "application/vnd.cudalab.result+json" in o.get("data", {})]
    assert docs and docs[-1]["runs"][0]["m"] == 128
    assert not [o for c in done.cells for o in c.outputs if o.get("name") == "stderr" or o["output_type"] == "error"]
    assert done.metadata.papermill["parameters"] == {"size": 128}


def test_name_rule_is_the_kernels():
    """The translator's name limit is the kernel's (kernel/lang/params.h), and its name rule ASCII."""
    from cudalab.papermill import NAME, NAME_MAX
    header = (REPO / "kernel" / "lang" / "params.h").read_text()
    assert f"#define PARAM_NAME_MAX {NAME_MAX} " in header
    assert NAME.match("tile_2") and not NAME.match("sizé") and not NAME.match("2x")
