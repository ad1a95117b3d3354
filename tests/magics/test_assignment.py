"""The assignment mode through a Jupyter kernel (jupyter_client): `%assignment NAME --graded
FAMILY,...` and CUDALAB_ASSIGNMENT make --show-source and --as-kernel refuse for the graded
families with an AssignmentError that says why, for the kernel's life: no later cell (another
%assignment, a %param, %interact) lifts it, a restart does; other families still show their
sources, the graded family still runs, the next cell works, and %help documents it.
Nothing here needs a GPU: --show-source runs nothing."""
from __future__ import annotations

import re

import pytest

from conftest import builtin_variants, execute, failed, quiet_ok

WHY = "ps2 grades your own matmul kernel: the built-in sources are not shown during it"
DECLARE = "%assignment ps2 --graded matmul,histo"


def refused(kc, code: str, why: str = WHY) -> None:
    """code fails with the assignment's error, and fills no next input."""
    reply, msgs = execute(kc, code)
    c = reply["content"]
    assert c["status"] == "error", c
    assert c["ename"] == "AssignmentError", c
    assert why in c["evalue"], c["evalue"]
    assert not c.get("payload"), c["payload"]         # no set_next_input: no %%kernel cell of the answer
    shown = "".join(str(m["content"]) for m in msgs if m["msg_type"] in ("execute_result", "display_data", "stream"))
    assert "__global__" not in shown and "Ads[" not in shown, shown


def shows_source(kc, code: str) -> None:
    msgs = quiet_ok(kc, code)
    assert any("__global__" in str(m["content"]) for m in msgs if m["msg_type"] == "execute_result"), code


def test_graded_families_refuse_their_sources_others_show_theirs(kernel):
    km, kc = kernel
    shows_source(kc, "%matmul --show-source tiled")               # before: the lecture's way
    msgs = quiet_ok(kc, DECLARE)
    said = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    assert "ps2 grades matmul, histo" in said, said
    for code in ("%matmul --show-source tiled", "%matmul --show-source tiled --as-kernel",
                 "%matmul --show-source naive", "%matmul --as-kernel"):
        refused(kc, code)
    for broken in builtin_variants("matmul", broken=True):      # a bug to fix is the answer, nearly
        refused(kc, f"%matmul --show-source {broken} --as-kernel")
    refused(kc, "%histo --show-source privatized --as-kernel",
            "ps2 grades your own histo kernel: the built-in sources are not shown during it")
    shows_source(kc, "%reduce --show-source convergent")          # not graded: shown as ever
    reply, _ = execute(kc, "%stencil --show-source tiled --as-kernel")
    assert reply["content"]["status"] == "ok" and reply["content"]["payload"], reply["content"]
    # the graded family still runs its built-in variants (the grade compares against them)
    quiet_ok(kc, "%matmul --variant naive,tiled --size 48 --reps 1 --warmup 0")


def test_every_family_that_shows_sources_refuses(kernel):
    """Every family that takes students' kernels (the kernel's own list, from its error) and has
    --show-source refuses it once graded: a family added later cannot forget the refusal."""
    km, kc = kernel
    c, _ = failed(kc, "%assignment all --graded nosuch")
    families = re.search(r"\(([a-z, ]+)\)$", c["evalue"]).group(1).split(", ")
    assert "matmul" in families and "reduce" in families, families
    quiet_ok(kc, f"%assignment all --graded {','.join(families)}")
    shown = 0
    for f in families:
        if "--show-source" not in "".join(str(m["content"]) for m in quiet_ok(kc, f"%help {f}")):
            continue
        shown += 1
        refused(kc, f"%{f} --show-source anything --as-kernel",
                f"all grades your own {f} kernel: the built-in sources are not shown during it")
    assert shown >= 6, shown


def test_a_later_cell_cannot_lift_it(kernel):
    km, kc = kernel
    quiet_ok(kc, DECLARE)
    msgs = quiet_ok(kc, '%assignment ps2 --graded "reduce, stencil"')   # adds them, keeps matmul
    said = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    assert "ps2 grades matmul, histo, reduce, stencil" in said, said
    quiet_ok(kc, "%assignment other --graded matmul")             # matmul stays ps2's
    refused(kc, "%matmul --show-source tiled")
    refused(kc, "%reduce --show-source convergent",
            "ps2 grades your own reduce kernel: the built-in sources are not shown during it")
    # what a student might try next: a parameter for the flag, a flag spelled =, %interact
    quiet_ok(kc, "%param v tiled")
    refused(kc, "%matmul --show-source {v}")
    refused(kc, "%matmul --show-source=tiled --as-kernel=yes")
    c, _ = failed(kc, "%interact %matmul --show-source tiled")
    assert c["ename"] in ("AssignmentError", "UsageError"), c
    if c["ename"] == "UsageError":          # %interact takes no --show-source: no source either way
        assert "__global__" not in c["evalue"]
    for bad in ("%assignment ps2", "%assignment --graded matmul", "%assignment ps2 --graded nosuch",
                "%assignment 'p s' --graded matmul"):
        c, _ = failed(kc, bad)
        assert c["ename"] == "UsageError", (bad, c)
    refused(kc, "%matmul --show-source tiled")                   # a failed declaration removed nothing
    quiet_ok(kc, "%echo the next cell works")


def test_a_restart_ends_it(kernel):
    km, kc = kernel
    quiet_ok(kc, DECLARE)
    refused(kc, "%matmul --show-source tiled")
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=20)
    shows_source(kc, "%matmul --show-source tiled")


@pytest.mark.parametrize("env, family, name", [
    ("ps2:matmul,histo,reduce", "reduce", "ps2"),
    ("ps2:matmul;ps3:stencil,coalesce", "coalesce", "ps3"),
])
def test_environment_declares_it_for_every_session(start_kernel, env, family, name):
    km, kc = start_kernel(env={"CUDALAB_ASSIGNMENT": env})
    variant = builtin_variants(family)[0]
    refused(kc, f"%{family} --show-source {variant}",
            f"{name} grades your own {family} kernel: the built-in sources are not shown during it")
    refused(kc, "%matmul --show-source tiled --as-kernel")
    shows_source(kc, "%histo --show-source privatized" if family != "reduce" else "%vecadd --show-source add")
    said = "".join(m["content"]["text"] for m in quiet_ok(kc, "%assignment") if m["msg_type"] == "stream")
    assert f"{name} grades" in said and family in said, said


def test_malformed_environment_grades_every_family(start_kernel):
    kernel = start_kernel(env={"CUDALAB_ASSIGNMENT": "ps2:matmull"})
    kc = kernel.kc
    for code in ("%matmul --show-source tiled", "%reduce --show-source convergent", "%vecadd --show-source add"):
        c, _ = failed(kc, code)
        assert c["ename"] == "AssignmentError", c
    assert kernel.log.wait_for("CUDALAB_ASSIGNMENT=ps2:matmull"), kernel.log.text()


def test_help(kernel):
    km, kc = kernel
    text = "".join(str(m["content"]) for m in quiet_ok(kc, "%help"))
    assert "%assignment" in text
    text = "".join(str(m["content"]) for m in quiet_ok(kc, "%help assignment"))
    for words in ("--graded", "CUDALAB_ASSIGNMENT", "until the kernel restarts", "cudalab --similarity"):
        assert words in text, words
    said = "".join(m["content"]["text"] for m in quiet_ok(kc, "%assignment") if m["msg_type"] == "stream")
    assert said.startswith("no assignment"), said
