"""%param and {NAME} / $NAME through the kernel: a parameter lasts the session, a redefinition replaces
it, a %param line counts for the lines below it in its cell, the values reach a magic's flags and an
%assert; bad names, missing values and undefined references are errors that name the problem, stop the
cell before anything runs and leave the next cell working; nothing reaches stderr on success; completion
and help know %param. (tests/unit/test_subst.c covers the rules one by one.)"""
from __future__ import annotations

from conftest import cell, completions as complete, execute, streams


def ok(kc, code: str) -> tuple[str, dict | None]:
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert streams(msgs, "stderr") == [], "nothing on stderr when a cell succeeds"
    return shown(msgs)


def shown(msgs: list[dict]) -> tuple[str, dict | None]:
    """The text a cell showed (streams and results' text/plain, in order) and its last document."""
    text, doc = [], None
    for m in msgs:
        c = m["content"]
        if m["msg_type"] == "stream":
            text.append(c["text"])
        elif m["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            text.append(c["data"].get("text/plain", ""))
            doc = c["data"].get("application/vnd.cudalab.result+json", doc)
    return "".join(text), doc


def test_parameters_reach_later_cells(kernel):
    km, kc = kernel
    text, _ = ok(kc, "%param size 64")
    assert text == "", "defining prints nothing"
    _, doc = ok(kc, "%matmul --size {size} --variant tiled --reps 1 --warmup 0")
    assert doc["params"]["size"] == 64 and doc["runs"][0]["m"] == 64
    ok(kc, "%param size 2^5\n%param v naive,tiled")
    _, doc = ok(kc, "%matmul --size $size --variant $v --reps 1 --warmup 0\n%assert matmul.m == {size}")
    assert [r["variant"] for r in doc["runs"]] == ["naive", "tiled"] and doc["runs"][0]["m"] == 32
    text, _ = ok(kc, "%param")
    assert text == "%param size 2^5\n%param v naive,tiled\n"


def test_same_cell_literals_and_quotes(kernel):
    km, kc = kernel
    text, _ = ok(kc, "%param n 5\n%echo {n} $n {{n}} $$n '{n}' \"<{n}>\" # {nothing}\n%param n 6\n%echo {n}")
    assert text == "5 5 {n} $n {n} <5>\n6\n"
    text, _ = ok(kc, "%param t \"two  words\"\n%echo {t}")
    assert text == "two  words\n", "a value is one argument, spaces kept"


def test_errors_name_the_problem(kernel):
    km, kc = kernel
    ok(kc, "%param size 64")
    c, text, _ = cell(kc, "%echo ran\n%echo {sise}")
    assert c["status"] == "error" and c["ename"] == "NameError"
    assert c["evalue"] == "{sise} is not a parameter; did you mean {size}? (parameters: size)"
    assert "ran" not in text, "the cell stops before anything runs"
    assert c["traceback"][1] == "  in cell line 2: %echo {sise}"
    for code, ename, part in [
        ("%param 1x 3", "UsageError", "'1x' is not a parameter name"),
        ("%param x", "UsageError", "%param x needs a value"),
        ("%param x a b", "UsageError", "%param x takes one value; quote it"),
        ("%param --x 1", "UsageError", "%param takes no flags"),
        ("%matmul --size {size} --tile {tiel}", "NameError", "{tiel} is not a parameter"),
        ("%param w x\n%matmul --size {w}", "UsageError", "--size"),
    ]:
        c, _, _ = cell(kc, code)
        assert c["status"] == "error" and c["ename"] == ename, (code, c)
        assert part in c["evalue"], (code, c["evalue"])
    text, _ = ok(kc, "%echo {size}")
    assert text == "64\n", "the next cell works, and the failed cells defined nothing"


def test_cell_magic_bodies_are_not_expanded(kernel):
    km, kc = kernel
    ok(kc, "%param who class")
    text, _ = ok(kc, "%%echo hello {who}\nbody {who} $who {undefined}\n")
    assert text == "hello class\nbody {who} $who {undefined}\n"


def test_completion_and_help(kernel):
    km, kc = kernel
    ok(kc, "%param size 64\n%param seed 7")
    assert "%param" in complete(kc, "%par")
    assert set(complete(kc, "%matmul --size {s")) == {"{size}", "{seed}"}
    assert complete(kc, "%matmul --size $si") == ["$size"]
    assert complete(kc, "%matmul --size $$si") == []
    assert complete(kc, "%param se") == ["seed"]
    assert complete(kc, "%%echo\n{s") == [], "a cell magic's body is not arguments"
    c, text, _ = cell(kc, "%help param")
    assert c["status"] == "ok" and "%param NAME VALUE" in text and "{NAME}" in text
    c, text, _ = cell(kc, "%help")
    assert "%param" in text
