"""The instructor's similarity report (`cudalab --similarity`, scripts/similarity.py) on a small fake
nbgrader course: a disguised copy of the built-in tiled kernel (taken from the kernel's own
--as-kernel cell) is flagged against the built-in, and so are copies of the tiled matmul and stencil
kernels with their aliases of threadIdx/blockDim written out (the course's sample copies), two students who share a kernel are flagged
against each other, and the independently written correct tiled kernels of tests/similarity/ (run
here through the CPU runner's check, so that "correct" is tested) are not flagged; the starter code
every student was handed is left out (--base); unreadable notebooks, cells that do not parse and
redefinitions are handled as the kernel would; the CSV and JSON outputs carry the same columns."""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, cli, compiled, kernel_binary

import similarity  # scripts/similarity.py (conftest puts scripts/ on the path)

INDEPENDENT = REPO / "tests" / "similarity"
COLUMNS = ["student", "assignment", "notebook", "kernel", "family", "builtin", "builtin_similarity", "peer",
           "peer_kernel", "peer_similarity", "flagged"]
SMEM = {"tiled_dyn": " --smem 2048"}     # the kernel that keeps its tiles in dynamic shared memory
# FINGERPRINT_FLAG, the default threshold, as the kernel's usage says it
THRESHOLD = float(re.search(r"flagged from T \(default ([0-9.]+)\)", cli("--similarity", "--help").stdout).group(1))


def kernel_name(source: str) -> str:
    return re.search(r"__global__\s+void\s+(\w+)", source).group(1)


def independent() -> dict[str, str]:
    """name -> source of the independently written tiled kernels."""
    return {kernel_name(p.read_text()): p.read_text() for p in sorted(INDEPENDENT.glob("*.cu"))}


def builtin_cell(variant: str = "tiled") -> str:
    """The %%kernel cell --as-kernel makes of a built-in matmul variant, from the kernel under test."""
    r = cli("--run", f"%matmul --show-source {variant} --as-kernel", "--json", env={"CUDALAB_BACKEND": "cpu"})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[0])["kernel_cell"]


def disguised(cell: str) -> str:
    """What a student who pasted the cell might hand in: names changed, comments added, reformatted."""
    body = cell.split("\n", 1)[1]
    for old, new in [("mytiled", "my_matmul"), ("Ads", "tileA"), ("Bds", "tileB"), ("pvalue", "result"),
                     ("ph", "phase"), ("row", "r"), ("col", "c")]:
        body = re.sub(rf"\b{old}\b", new, body)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    body = body.replace(";\n", ";  // my own work\n").replace("    ", "  ")
    return "%%kernel --for matmul --name my_matmul\n// Problem 1: tiled multiply, written by me\n" + body


def notebook(*cells: str, as_list: bool = True) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": c.splitlines(keepends=True) if as_list else c} for c in cells]}


def kernel_cell(source: str, extra: str = "") -> str:
    name = kernel_name(source)
    return f"%%kernel --for matmul --name {name}{SMEM.get(name, '')}{extra}\n{source}"


STARTER = """%%kernel --for matmul --name mytiled
// Write a tiled multiply. Each block computes a TILE x TILE tile of C; each thread one element.
#define TILE 16
__global__ void mytiled(const float *A, const float *B, float *C, int m, int n, int k)
{
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    // BEGIN SOLUTION
    float sum = 0.0f;
    for (int p = 0; p < k; p++)
        sum += A[row * k + p] * B[p * n + col];
    // END SOLUTION
    if (row < m && col < n)
        C[row * n + col] = sum;
}
"""


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course with assignment ps9: its source, and the submissions of six students."""
    root = tmp_path / "course"
    (root / "source" / "ps9").mkdir(parents=True)
    (root / "source" / "ps9" / "kernels.ipynb").write_text(json.dumps(notebook("%assignment ps9 --graded matmul",
                                                                               STARTER)))
    mine = independent()
    friend = mine["tiled_dyn"].replace("total", "acc").replace("phase", "t")
    submissions = {
        "copier": [disguised(builtin_cell())],
        "honest_flat": [kernel_cell(mine["mm_flat"])],
        "honest_dyn": [kernel_cell(mine["tiled_dyn"])],
        "honest_two": [kernel_cell(mine["two_per_thread"])],
        # a first try replaced by a later cell under the same name: the later one counts
        "friend_a": ["%%kernel --for matmul --name tiled_dyn\n__global__ void tiled_dyn(const float *A, "
                     "const float *B, float *C, int m, int n, int k) {}", kernel_cell(friend)],
        "friend_b": [kernel_cell(friend.replace("tileA", "sa").replace("tileB", "sb"))],
    }
    for student, cells in submissions.items():
        d = root / "submitted" / student / "ps9"
        d.mkdir(parents=True)
        (d / "kernels.ipynb").write_text(json.dumps(notebook("%assignment ps9 --graded matmul", *cells,
                                                             as_list=student != "honest_two")))
    return root


def by_student(rows: list[dict]) -> dict[str, dict]:
    assert len({r["student"] for r in rows}) == len(rows), rows
    return {r["student"]: r for r in rows}


def test_independent_kernels_are_correct(kernel):
    """The independent solutions pass the family's check (the CPU runner, the quick check's size)."""
    km, kc = kernel
    for source in independent().values():
        c, text, doc = compiled(kc, kernel_cell(source))
        assert c["status"] == "ok", (c, text)
        assert "quick check" in text and "passed" in text, text


def test_the_report_flags_copies_not_independent_work(course):
    r = similarity.report(course)
    assert r.returncode == 0, r.stderr
    assert not r.stderr, r.stderr
    rows = by_student(list(csv.DictReader(io.StringIO(r.stdout))))
    assert set(rows) == {"copier", "honest_flat", "honest_dyn", "honest_two", "friend_a", "friend_b"}
    assert list(next(csv.reader(io.StringIO(r.stdout)))) == COLUMNS
    copier = rows["copier"]
    assert copier["kernel"] == "my_matmul" and copier["family"] == "matmul" and copier["assignment"] == "ps9"
    assert copier["builtin"] == "tiled" and float(copier["builtin_similarity"]) >= THRESHOLD, copier
    assert "builtin" in copier["flagged"].split(), copier
    for student in ("honest_flat", "honest_dyn", "honest_two"):
        row = rows[student]
        assert float(row["builtin_similarity"]) < THRESHOLD, row
        assert row["flagged"] == "" or row["flagged"] == "peer" and student == "honest_dyn", row
    for a, b in (("friend_a", "friend_b"), ("friend_b", "friend_a")):
        assert rows[a]["peer"] == b and float(rows[a]["peer_similarity"]) >= THRESHOLD, rows[a]
        assert "peer" in rows[a]["flagged"].split(), rows[a]
        assert "builtin" not in rows[a]["flagged"], rows[a]
    assert rows["friend_a"]["kernel"] == "tiled_dyn"
    # the friends' kernel is honest_dyn's, renamed: its author is reported as their peer as well
    assert rows["honest_dyn"]["peer"] in ("friend_a", "friend_b"), rows["honest_dyn"]


BUILTIN_ALIAS = re.compile(r"(\w+) = ((?:threadIdx|blockIdx|blockDim|gridDim)\.[xyz])")


def aliases_inlined(source: str) -> str:
    """source with its aliases of builtins ("int tx = threadIdx.x, ty = threadIdx.y;") written out where
    they are used and their declarators gone, as the sample copies of ps2 and ps3 hand them in."""
    names, lines = {}, []
    for line in source.splitlines(keepends=True):
        head, sep, decls = line.partition("int ")
        if sep and not head.strip() and decls.rstrip().endswith(";"):
            parts = decls.rstrip()[:-1].split(", ")
            kept = [d for d in parts if not BUILTIN_ALIAS.fullmatch(d)]
            names.update(m.groups() for d in parts if (m := BUILTIN_ALIAS.fullmatch(d)))
            if kept != parts:
                line = f"{head}int {', '.join(kept)};\n" if kept else ""
        lines.append(line)
    assert names, "the built-in kernel has no aliases of builtins any more: update the test"
    out = "".join(lines)
    for name, builtin in names.items():
        out = re.sub(rf"(?<![.\w]){name}\b", builtin, out)
    return out


def renamed(source: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        source = re.sub(rf"\b{old}\b", new, source)
    return source


def stencil_2d_as_student(source: str) -> str:
    """The built-in 2D stencil kernel (--show-source: its weights in __constant__ memory) in the signature
    of a student's `%%kernel --for stencil --dim 2` cell, its weights a parameter."""
    kernel = source[source.index("__global__ void stencil2d_tiled"):]
    kernel = kernel[:kernel.index("\n}\n") + 3]
    signature = kernel[:kernel.index(")") + 1]
    params = re.findall(r"(\w+)\s*[,)]", signature)
    assert len(params) == 5, signature      # in, out, the image's width and height, the radius
    body = renamed(kernel[len(signature):], dict(zip(params, ["in", "out", "width", "height", "r"])))
    return ("__global__ void myconv(const float *in, float *out, const float *w, int width, int height, int r)" +
            body.replace("c_weights", "w"))


def test_copies_with_the_aliases_of_builtins_inlined_are_flagged(tmp_path):
    """The disguise of the course's sample copies: the built-in kernels' aliases of threadIdx and
    blockDim written out, names changed, declarations and independent loads reordered."""
    env = {"CUDALAB_BACKEND": "cpu"}
    matmul = aliases_inlined(builtin_cell().split("\n", 1)[1])
    matmul = renamed(matmul, {"mytiled": "mymm", "Ads": "sa", "Bds": "sb", "pvalue": "acc", "ph": "t",
                              "row": "r", "col": "c", "m": "M", "n": "N", "k": "K"})
    loads = re.findall(r"^ *s[ab]\[threadIdx\.y\]\[threadIdx\.x\] = .*\n", matmul, flags=re.M)
    assert len(loads) == 2, matmul
    matmul = matmul.replace(loads[0], "\0").replace(loads[1], loads[0]).replace("\0", loads[1])
    r = cli("--run", "%stencil --show-source tiled --as-kernel", "--json", env=env)
    stencil = json.loads(r.stdout.splitlines()[0])["kernel_cell"].split("\n", 1)[1]
    stencil = renamed(aliases_inlined(stencil), {"mytiled": "mystencil", "tile": "buf", "base": "first",
                                                 "acc": "a", "p": "q", "i": "o"})
    r = cli("--run", "%stencil --dim 2 --show-source tiled", "--json", env=env)
    conv = stencil_2d_as_student(json.loads(r.stdout.splitlines()[0])["source"])
    conv = renamed(aliases_inlined(conv), {"tile": "buf", "acc": "a", "SX": "sx", "SY": "sy", "x0": "ox",
                                           "y0": "oy", "row": "line", "ty": "j", "tx": "i"})
    assert "threadIdx.x" in matmul and "blockDim.x" in stencil and "blockDim.y" in conv, (matmul, stencil, conv)
    d = tmp_path / "course" / "submitted" / "copier" / "ps8"
    d.mkdir(parents=True)
    (d / "kernels.ipynb").write_text(json.dumps(notebook(
        "%%kernel --for matmul --name mymm\n" + matmul, "%%kernel --for stencil --name mystencil\n" + stencil,
        "%%kernel --for stencil --dim 2 --name myconv\n" + conv)))
    r = similarity.report(tmp_path / "course")
    assert r.returncode == 0 and not r.stderr, r.stderr
    rows = {row["kernel"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert set(rows) == {"mymm", "mystencil", "myconv"}, r.stdout
    for kernel, builtin in (("mymm", "tiled"), ("mystencil", "tiled"), ("myconv", "tiled 2D")):
        row = rows[kernel]
        assert row["builtin"] == builtin and float(row["builtin_similarity"]) >= THRESHOLD, row
        assert row["flagged"] == "builtin", row


def test_json_lines_have_the_same_columns(course):
    notebooks = sorted(str(p) for p in (course / "submitted").glob("*/ps9/*.ipynb"))
    r = cli("--similarity", "--json", *notebooks)
    assert r.returncode == 0, r.stderr
    docs = [json.loads(l) for l in r.stdout.splitlines()]
    assert len(docs) == 6 and all(list(d) == COLUMNS for d in docs), docs
    assert all(isinstance(d["flagged"], list) and 0 <= d["builtin_similarity"] <= 1 for d in docs)
    # the default threshold is the kernel's FINGERPRINT_FLAG: a row is flagged exactly from it
    for d in docs:
        assert ("builtin" in d["flagged"]) == (d["builtin_similarity"] >= THRESHOLD), d
    # an instructor's shell that has a deployment's CUDALAB_ASSIGNMENT still sees the built-ins
    r2 = cli("--similarity", "--json", *notebooks, env={"CUDALAB_ASSIGNMENT": "ps9:matmul"})
    assert r2.stdout == r.stdout, r2.stderr
    # a lower threshold flags more, a threshold of 1 only exact copies
    low = [json.loads(l) for l in cli("--similarity", "--json", "--threshold", "0.2", *notebooks).stdout.splitlines()]
    assert sum(bool(d["flagged"]) for d in low) > sum(bool(d["flagged"]) for d in docs)


def test_the_starter_code_is_left_out(tmp_path):
    """Two students who were handed a long scaffold and wrote different bodies: alike with the
    scaffold counted, not once it is base code."""
    scaffold = "\n".join(f"    float pad{i} = A[{i}] * B[{i}];" for i in range(12))
    starter = STARTER.replace("    // BEGIN SOLUTION", scaffold + "\n    // BEGIN SOLUTION")
    one = starter.replace("sum += A[row * k + p] * B[p * n + col];", "sum = fmaf(A[row * k + p], B[p * n + col], sum);")
    two = starter.replace("    float sum = 0.0f;\n    for (int p = 0; p < k; p++)\n        sum += A[row * k + p] * B[p * n + col];",
                          "    float sum = 0;\n    int p = 0;\n    while (p < k) {\n        sum += B[p * n + col] * A[row * k + p];\n        p += 1;\n    }")
    assert one != starter and two != starter
    paths = []
    for student, cell in (("s1", one), ("s2", two)):
        p = tmp_path / "submitted" / student / "ps9" / "nb.ipynb"
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps(notebook(cell)))
        paths.append(str(p))
    src = tmp_path / "source.ipynb"
    src.write_text(json.dumps(notebook(starter)))
    base = similarity.base_notebook(src, tmp_path / "base.ipynb")
    without = [json.loads(l) for l in cli("--similarity", "--json", *paths).stdout.splitlines()]
    with_base = [json.loads(l) for l in cli("--similarity", "--json", "--base", str(base), *paths).stdout.splitlines()]
    assert without[0]["peer_similarity"] >= THRESHOLD, without
    assert with_base[0]["peer_similarity"] < THRESHOLD, with_base
    assert with_base[0]["peer_similarity"] < without[0]["peer_similarity"]


def test_what_cannot_be_read_is_said_and_the_rest_reported(tmp_path, course):
    broken = tmp_path / "submitted" / "mallory" / "ps9" / "kernels.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"cells": [')                                 # not JSON
    odd = tmp_path / "submitted" / "oscar" / "ps9" / "kernels.ipynb"
    odd.parent.mkdir(parents=True)
    odd.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "source": "%%kernel --for matmul --name md\n__global__ void md() {}"},
        {"cell_type": "code", "source": "%%kernel --for nosuch --name x\n__global__ void x() {}"},
        {"cell_type": "code", "source": "%%kernel --for matmul --bogus\n__global__ void y() {}"},
        {"cell_type": "code", "source": 42},
        {"cell_type": "code"},
        {"cell_type": "code", "source": ["%%kernel --for matmul\n", "__global__ void unnamed(const float *A, "
                                         "const float *B, float *C, int m, int n, int k) { C[0] = A[0] * B[0]; }"]},
    ]}))
    good = str(course / "submitted" / "copier" / "ps9" / "kernels.ipynb")
    r = cli("--similarity", str(broken), str(odd), good, "/nonexistent.ipynb")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "cannot read the notebook" in r.stderr and str(broken) in r.stderr and "/nonexistent.ipynb" in r.stderr
    assert "does not parse" in r.stderr, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["student"], x["kernel"]) for x in rows] == [("oscar", "unnamed"), ("copier", "my_matmul")], rows


@pytest.mark.parametrize("args, says", [
    (["--threshold", "2"], "a number from 0 to 1"),
    (["--threshold", "x"], "a number from 0 to 1"),
    (["--frobnicate"], "unknown or incomplete argument"),
    ([], "usage: cudalab --similarity"),
])
def test_usage_errors(args, says):
    r = cli("--similarity", *args)
    assert r.returncode == 2 and says in r.stderr, (r.returncode, r.stderr)


def test_the_script_writes_csv(course, tmp_path):
    out = tmp_path / "report.csv"
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "similarity.py"), "--course", str(course),
                        "--csv", str(out), "--binary", str(kernel_binary())], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = similarity.rows(course, binary=kernel_binary())
    assert list(csv.DictReader(out.open())) == [{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()}
                                                for row in rows]
    assert by_student(rows)["copier"]["builtin_similarity"] >= THRESHOLD
