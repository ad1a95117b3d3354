"""The cheats of issue 35 as board submissions, on the CPU backend, each by a student who knows the board's
hidden size and seed (the strongest case: the inputs of the run's own seed learned by a spy kernel run in a
kernel of the student's own), and none may rank: a result cached from an earlier call and replayed, output
deferred into the untimed check (work done only on the run's own inputs), a time driven toward zero (no work
at the sizes a student did not check), a patched timer (the harness's clock redefined from the student's
source), and a kernel right only at the student's sizes. Each fails with the finding that caught it, and an
honest submission among them still ranks. tests/magics/test_redteam_reps.py tries the same tricks on a cell;
here they go through the board's runner, at sizes and seeds the student's own cell never used."""
from __future__ import annotations

import re

import pytest

from board_runs import CPU, HONEST_ADD, PROBLEMS, board, run_all, vecadd  # noqa: F401
from conftest import cell, compiled

HIDDEN = PROBLEMS["t.vecadd"]
SMALL = HIDDEN.sizes[0]                      # "--size 40": small enough to replay a whole answer
SEED = HIDDEN.seeds[0]
QUICK_CHECK_N = 100003                       # vecadd's quick check size: what a student's cell saw


@pytest.fixture
def spied(start_kernel):
    """What a spy kernel printed in one run at the hidden size and seed (one rep, on the run's own inputs):
    {"A0": A[0] as printed, "C": [C[i] ...]}."""
    kc = start_kernel(env=CPU)[1]
    spy = vecadd('if (i < n) { C[i] = A[i] + B[i]; printf("C[%d]=%.9g\\n", i, C[i]); }\n    '
                 'if (i == 0) printf("A0=%.9g\\n", A[0]);').replace("NAME", "spy")
    c, text, _ = compiled(kc, "%%kernel --for vecadd --name spy --no-check\n" + spy)
    assert c["status"] == "ok", text
    c, text, _ = cell(kc, f"%vecadd {SMALL} --seed {SEED} --variant spy --reps 1 --warmup 0")
    assert c["status"] == "ok", text
    kept = {int(m.group(1)): m.group(2) for m in re.finditer(r"C\[(\d+)\]=(\S+)", text)}
    return {"A0": re.search(r"A0=(\S+)", text).group(1), "C": [kept[i] for i in sorted(kept)]}


def cheats(spied) -> dict[str, tuple[str, str]]:
    """name -> (source, what its finding must say)."""
    n = len(spied["C"])
    table = ", ".join(f"{v}f" for v in spied["C"])
    return {
        "cached": (vecadd(f"const float kept[{n}] = {{{table}}};\n    "
                          f"if (i < n) C[i] = n == {n} ? kept[i] : A[i] + B[i];"),
                   "returned a result of other inputs"),
        "deferred": (vecadd(f"if (n == {n} && A[0] != {spied['A0']}f) return;   // at the hidden size, work only "
                            "in the untimed, checked launch\n    "
                            + HONEST_ADD), "never written"),
        "toward_zero": (vecadd(f"if (n != {QUICK_CHECK_N}) return;   // no work at any size but the checked one\n    "
                               + HONEST_ADD), "CheckError"),
        "patched_timer": ("#ifdef CUDALAB_CPU_RUNNER\n"
                          'extern "C" int clock_gettime(int clock, void *ts) { return 0; }\n'
                          "#endif\n" + vecadd(), "clock_gettime"),
        "student_sizes_only": (vecadd(f"if (i < n) C[i] = n == {QUICK_CHECK_N} ? A[i] + B[i] : A[i];"),
                               "CheckError"),
    }


def test_no_cheat_ranks_and_each_says_what_caught_it(board, spied):
    store, runner = board
    honest = store.submit("t.vecadd", vecadd(), name="honest")
    ids = {name: (store.submit("t.vecadd", src, name=name), says) for name, (src, says) in cheats(spied).items()}
    run_all(store, runner)
    assert store.subs[honest]["status"] == "ranked", store.subs[honest]
    assert store.ranked() == [honest]
    for name, (sid, says) in ids.items():
        sub = store.subs[sid]
        assert sub["status"] == "failed", (name, sub["status"], sub["finding"])
        assert says in sub["finding"], (name, sub["finding"])
        assert sub["result"].get("score") is None, name


def test_the_cheats_pass_a_students_own_cell(start_kernel, spied):
    """The attacks are real: each deferred, replaying or size-keyed kernel passes the student's own quick check
    and a one-rep run on the run's own inputs, as a cell shows it (so only the board's checks stop them)."""
    kc = start_kernel(env=CPU)[1]
    for name in ("cached", "deferred", "toward_zero", "student_sizes_only"):
        src, _ = cheats(spied)[name]
        c, text, _ = compiled(kc, f"%%kernel --for vecadd --name {name}\n" + src.replace("NAME", name))
        assert c["status"] == "ok", (name, text)
    for name in ("cached", "deferred"):
        c, text, doc = cell(kc, f"%vecadd {SMALL} --seed {SEED} --variant {name} --reps 1 --warmup 0")
        assert c["status"] == "ok" and doc["runs"][0]["check"]["passed"], (name, text)
