"""The Pygments lexer of the cell language (python/cudalab/lexer.py): the tokens of a representative cell
and of a %%kernel body, the `pygments.lexers` entry point that finds it by name, nbconvert's HTML of a
cudalab notebook, and its agreement with the kernel's language_info."""
from __future__ import annotations

import os
import subprocess
import sys

import nbformat
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename, get_lexer_for_mimetype
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String

from conftest import REPO, request

PYTHON_SRC = REPO / "python"
sys.path.insert(0, str(PYTHON_SRC))     # the package of the tree under test, ahead of an installed copy
from cudalab.lexer import CudalabLexer  # noqa: E402

CELL = """\
# tiles of 16
%param size 64
%matmul --size {size} --variant naive,tiled --tile=8,16 --block 16x16 -n 2^20 # a comment
%histo --text "a\\tb $size" --bin-width 4 'as is {x}' --seed 64K --tol 1e-3
%assert matmul[variant=tiled].gflops > 2 * max(matmul.gflops) and not false
%score (histo.bins['a-d'] == 5) + all(histo.check.passed)
"""

KERNEL_CELL = """\
%%kernel --for matmul --name mine
__global__ void mine(const float *A, const float *B, float *C, int m, int n, int k) {
    __shared__ float tile[16][16];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
}
"""


def tokens(text: str) -> list[tuple]:
    return [(t, v) for t, v in CudalabLexer().get_tokens(text) if v.strip()]


def has(toks: list[tuple], ttype, value: str) -> bool:
    return any(t in ttype and v == value for t, v in toks)


def test_magic_lines():
    toks = tokens(CELL)
    assert not [v for t, v in toks if t in Error], "a valid cell has no Error tokens"
    assert has(toks, Comment, "# tiles of 16") and has(toks, Comment, "# a comment")
    for magic in ("param", "matmul", "histo", "assert", "score"):
        assert has(toks, Keyword, magic)
    assert ("%" in [v for t, v in toks if t in Operator])
    for flag in ("--size", "--variant", "--tile", "--block", "-n", "--text", "--bin-width", "--seed"):
        assert has(toks, Name.Attribute, flag), flag
    for number in ("64", "8", "16", "2^20", "4", "64K"):
        assert has(toks, Number.Integer, number), number
    assert has(toks, Number.Float, "1e-3")
    assert has(toks, Name.Variable, "{size}")
    assert has(toks, String.Interpol, "$size") and has(toks, String.Escape, "\\t")
    assert has(toks, String.Single, "'as is {x}'")
    assert has(toks, Punctuation, ",") and has(toks, Punctuation, "=")
    # the words of a comma list are not numbers
    assert not has(toks, Number, "naive")


def test_expressions():
    toks = tokens("%assert matmul[variant=tiled].gflops > 2 * max(matmul.gflops) and not false # why\n"
                  "%score (histo.bins['a-d'] == {n}) + all(histo.check.passed)\n")
    assert has(toks, Name, "matmul") and has(toks, Name.Attribute, "gflops")
    assert has(toks, Name.Function, "max") and has(toks, Name.Function, "all")
    assert has(toks, Operator, ">") and has(toks, Operator, "==") and has(toks, Operator.Word, "and")
    assert has(toks, Keyword.Constant, "false") and has(toks, Number.Integer, "2")
    assert has(toks, String.Single, "a-d") and has(toks, Name.Variable, "{n}")
    assert has(toks, Comment, "# why")


def test_kernel_body_is_cuda():
    toks = tokens(KERNEL_CELL)
    assert has(toks, Keyword, "kernel") and has(toks, Name.Attribute, "--for")
    assert has(toks, Keyword, "__global__")
    assert has(toks, Keyword.Type, "float") and has(toks, Keyword.Type, "void")
    assert has(toks, Keyword.Type, "__shared__")
    assert has(toks, Name.Builtin, "threadIdx") and has(toks, Name.Builtin, "blockIdx")
    assert not [v for t, v in toks if t in Error]


def test_other_cell_bodies_are_text():
    toks = tokens("%%histo --bin-width 4\nprogramming {x} %matmul # not a comment\n")
    assert has(toks, Keyword, "histo") and has(toks, Number.Integer, "4")
    body = [(t, v) for t, v in toks if "programming" in v]
    assert body and all(str(t) == "Token.Text" for t, _ in body)
    assert not has(toks, Keyword, "matmul") and not has(toks, Comment, "# not a comment")


def test_help_forms_and_stray_text():
    toks = tokens("%matmul?\n?histo\nhello\n")
    assert has(toks, Keyword, "matmul") and has(toks, Keyword, "histo") and has(toks, Operator, "?")
    assert has(toks, Error, "hello"), "a line that is not a magic is shown as an error, as the kernel says"


def test_found_through_the_entry_point():
    for lexer in (get_lexer_by_name("cudalab"), get_lexer_for_filename("lecture.cudalab"),
                  get_lexer_for_mimetype("text/x-cudalab")):
        assert type(lexer).__name__ == "CudalabLexer"
        assert type(lexer).__module__ == "cudalab.lexer"


def test_agrees_with_kernel_info(kernel):
    km, kc = kernel
    reply, _ = request(kc, "kernel_info_request", {})
    info = reply["content"]["language_info"]
    assert info["pygments_lexer"] in CudalabLexer.aliases
    assert info["mimetype"] in CudalabLexer.mimetypes
    assert "*" + info["file_extension"] in CudalabLexer.filenames


def test_nbconvert_html_highlights_cells(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "cudalab", "display_name": "cudalab (CUDA)", "language": "cudalab"}
    nb.metadata["language_info"] = {"name": "cudalab", "pygments_lexer": "cudalab",
                                    "mimetype": "text/x-cudalab", "file_extension": ".cudalab"}
    nb.cells = [nbformat.v4.new_code_cell(CELL), nbformat.v4.new_code_cell(KERNEL_CELL)]
    path = tmp_path / "lecture.ipynb"
    nbformat.write(nb, path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PYTHON_SRC), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--stdout", str(path)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    html = r.stdout
    # Pygments' short class names: k keyword, na attribute, nv variable, mi integer, c1 comment, kt type
    for fragment in ('<span class="k">matmul</span>', '<span class="na">--size</span>',
                     '<span class="nv">{size}</span>', '<span class="mi">2^20</span>',
                     '<span class="c1"># a comment</span>', '<span class="kt">float</span>',
                     '<span class="nb">threadIdx</span>'):
        assert fragment in html, f"{fragment} not in nbconvert's HTML"
    assert "Could not find lexer" not in r.stderr
