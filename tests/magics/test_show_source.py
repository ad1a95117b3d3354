"""--show-source VARIANT and --as-kernel on every family magic, through a Jupyter kernel
(jupyter_client): the source of each built-in variant as text, escaped and highlighted HTML and
the result document; the source is the text of cuda/ (or cpu/) between its markers; an unknown
variant is a UsageError listing the family's variants; --as-kernel puts a %%kernel cell in the
execute_reply's set_next_input payload and shows it too; a variant without a student form
refuses --as-kernel. Nothing here needs a GPU: --show-source runs nothing."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from conftest import builtin_variants, execute, outputs, run_cell

ROOT = Path(__file__).resolve().parents[2]
RESULT_MIME = "application/vnd.cudalab.result+json"

VARIANTS = {f: builtin_variants(f) for f in ("matmul", "histo", "reduce", "stencil", "coalesce")}
VARIANTS["vecadd"] = ["add", "daxpy"]           # its operations (--op), each with its source
# the lecture variants: (family, variant, the kernel's name in the cell's code, its parameters)
LECTURE = [
    ("matmul", "naive", "const float *A, const float *B, float *C, int m, int n, int k"),
    ("matmul", "tiled", "const float *A, const float *B, float *C, int m, int n, int k"),
    ("vecadd", "add", "const float *__restrict__ x, const float *__restrict__ y, float *__restrict__ z, int n"),
    ("reduce", "divergent", "const float *in, float *out, int n"),
    ("reduce", "convergent", "const float *in, float *out, int n"),
    ("histo", "sectioned", "const uint8_t *in, long long n, unsigned *hist"),
    ("histo", "interleaved", "const uint8_t *in, long long n, unsigned *hist"),
    ("histo", "privatized", "const uint8_t *in, long long n, unsigned *hist"),
    ("stencil", "naive", "const float *__restrict__ in, float *__restrict__ out, const float *c_weights, int n, int R"),
    ("stencil", "tiled", "const float *__restrict__ in, float *__restrict__ out, const float *c_weights, int n, int R"),
    ("coalesce", "stride", "const float *__restrict__ in, float *__restrict__ out, unsigned long long n, "
                           "unsigned long long s"),
]


def result(kernel, cell: str) -> tuple[dict, dict]:
    """(execute_reply content, the execute_result's data) of a cell that succeeds."""
    reply, msgs = execute(kernel.kc, cell)
    assert reply["content"]["status"] == "ok", reply["content"]
    outs = [m for m in outputs(msgs) if m["msg_type"] == "execute_result"]
    assert len(outs) == 1, [m["msg_type"] for m in outputs(msgs)]
    return reply["content"], outs[0]["content"]["data"]


def like(family: str, variant: str) -> str | None:
    """The variant whose header regions VARIANT shows too (`/* show-source: FAMILY VARIANT like OTHER */`
    in its kernel file), or None."""
    for path in sorted((ROOT / "cuda").glob("*.cu")) + sorted((ROOT / "cpu").glob("*.c")):
        m = re.search(rf"/\* show-source: {re.escape(family)} {re.escape(variant)} like (\S+) \*/", path.read_text())
        if m:
            return m.group(1)
    return None


def marked_text(path: str, family: str, variant: str) -> list[str]:
    """The regions of path whose marker names family and variant (in a header, or the variant it is
    like), read here from the source."""
    names = {variant, like(family, variant)} if path.endswith(".h") else {variant}
    regions, cur = [], None
    for line in (ROOT / path).read_text().splitlines(keepends=True):
        m = re.search(r"/\* show-source: (.*?) \*/", line)
        words = m.group(1).split() if m else []
        if len(words) == 4 and words[2] == "like":
            continue
        if m and m.group(1) == "end":
            regions.append("".join(cur)) if cur is not None else None
            cur = None
        elif m:
            cur = [] if words[0] == family and names & set(words[1].split(",")) else None
        elif cur is not None:
            cur.append(line)
    return regions


@pytest.mark.parametrize("family", sorted(VARIANTS))
def test_every_variant_shows_its_marked_source(kernel, family):
    for variant in VARIANTS[family]:
        _, data = result(kernel, f"%{family} --show-source {variant}")
        doc = data[RESULT_MIME]
        assert doc["magic"] == family and doc["variant"] == variant
        assert doc["language"] == ("c" if doc["file"].startswith("cpu/") else "cuda")
        assert doc["file"] in doc["files"] and doc["file"] == doc["files"][-1]
        for path in doc["files"]:
            for region in marked_text(path, family, variant):
                assert region in doc["source"], (family, variant, path)
        # text/plain is the title and the source, line by line (trailing blanks dropped)
        plain = data["text/plain"]
        assert plain.startswith(f"%{family} --variant {variant}: {doc['file']}\n")
        for line in doc["source"].splitlines():
            assert line.rstrip() in plain
        # the HTML is the source, escaped, once the highlighting's tags are taken away
        page = data["text/html"]
        code = re.search(r'<pre class="cudalab-code"[^>]*><code>(.*?)</code></pre>', page, re.S).group(1)
        assert "<" not in re.sub(r"</?span[^>]*>", "", code)
        assert html.unescape(re.sub(r"</?span[^>]*>", "", code)) == doc["source"]


def test_html_highlights_cuda_and_escapes(kernel):
    _, data = result(kernel, "%matmul --show-source tiled")
    page = data["text/html"]
    for word in ("__global__", "__shared__", "__syncthreads", "threadIdx", "blockIdx"):
        assert re.search(rf'<span class="cl-cuda"[^>]*>{word}</span>', page), word
    assert re.search(r'<span class="cl-kw"[^>]*>template</span>', page)
    assert re.search(r'<span class="cl-ty"[^>]*>float</span>', page)
    assert re.search(r'<span class="cl-com"[^>]*>/\* Phase ph', page)
    assert re.search(r'<span class="cl-num"[^>]*>0\.0f</span>', page)
    assert re.search(r'<span class="cl-pp"[^>]*>#pragma unroll</span>', page)
    assert "template</span> &lt;" in page and "row &lt; m &amp;&amp; col &lt; n" in page


def test_unknown_variant_lists_the_family(kernel):
    reply, msgs = execute(kernel.kc, "%histo --show-source nope")
    content = reply["content"]
    assert content["status"] == "error" and content["ename"] == "UsageError"
    assert "has no variant nope" in content["evalue"]
    assert ", ".join(VARIANTS["histo"]) in content["evalue"]
    assert not [m for m in outputs(msgs) if m["msg_type"] in ("execute_result", "display_data")]


def test_show_source_runs_nothing_and_ignores_other_flags(kernel):
    # a size that would be refused (or take minutes) if anything ran
    _, data = result(kernel, "%matmul --size 2^40 --variant all --show-source naive")
    assert data[RESULT_MIME]["variant"] == "naive"
    assert "runs" not in data[RESULT_MIME]


@pytest.mark.parametrize("family,variant,params", LECTURE)
def test_as_kernel_sets_the_next_input(kernel, family, variant, params):
    content, data = result(kernel, f"%{family} --show-source {variant} --as-kernel")
    payloads = [p for p in content["payload"] if p.get("source") == "set_next_input"]
    assert len(payloads) == 1, content["payload"]
    cell = payloads[0]["text"]
    assert payloads[0]["replace"] is False
    assert cell.startswith(f"%%kernel --for {family} --name my{variant}")
    assert f"__global__ void my{variant}({params})" in cell
    assert data[RESULT_MIME]["kernel_cell"] == cell
    # the fallback: the same cell shown in the output
    for line in cell.splitlines():
        assert line.rstrip() in data["text/plain"]
    # the taught body follows the new declaration, unchanged
    decl = f"my{variant}({params})"
    body = cell[cell.index(decl) + len(decl):]
    assert body.startswith("\n{\n") and body in data[RESULT_MIME]["source"]
    if variant == "tiled" and family == "matmul":
        assert "#ifndef TILE\n#define TILE 16\n#endif\n" in cell and "template <int TILE>" not in cell


@pytest.mark.parametrize("code, why", [
    ("%matmul --show-source fast --as-kernel", "fast has no student-signature form"),
    ("%stencil --dim 2 --show-source tiled --as-kernel", "%stencil --dim 2 has no %%kernel cell of tiled"),
], ids=["without a student form", "a 2d stencil"])
def test_as_kernel_refused(kernel, code, why):
    reply, _ = execute(kernel.kc, code)
    content = reply["content"]
    assert content["status"] == "error" and content["ename"] == "UsageError"
    assert why in content["evalue"]
    assert not content.get("payload")


def test_as_kernel_needs_show_source(kernel):
    reply, _ = execute(kernel.kc, "%reduce --as-kernel")
    assert reply["content"]["ename"] == "UsageError"
    assert "--as-kernel goes with --show-source" in reply["content"]["evalue"]


def test_no_payload_without_as_kernel(kernel):
    content, _ = result(kernel, "%vecadd --show-source add")
    assert content["payload"] == []


def test_help_lists_the_flags():
    for family in VARIANTS:
        rc, _, out, err = run_cell(f"%help {family}", json_mode=False)
        assert rc == 0, err
        assert "--show-source" in out and "--as-kernel" in out, family
