"""%assert and %score through a real kernel (jupyter_client), as a notebook and nbgrader use them:
checks over results of earlier cells, errors that say what was compared, partial credit as the
cell's execute_result, nothing on stderr, and the next cell working after every kind of failure.
(That results are deterministic given a seed, which grading relies on, is tests/gpu/test_determinism.py.)"""
from __future__ import annotations

import pytest

from conftest import failed, outputs, quiet_ok as ok, run_cell, streams

CPU = {"CUDALAB_BACKEND": "cpu"}
QUICK = "--reps 2 --warmup 0"
TEXT = '"programming massively parallel processors"'


@pytest.fixture
def kc(start_kernel):
    return start_kernel(env=CPU)[1]


def error(kc, code):
    c, msgs = failed(kc, code)
    errs = [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert len(errs) == 1 and errs[0]["ename"] == c["ename"]
    return c


def test_true_checks_show_nothing(kc):
    ok(kc, f"%matmul --size 64 --variant naive,tiled --tile 8,16 {QUICK}")
    ok(kc, f"%histo --text {TEXT} --bin-width 4 {QUICK}")
    msgs = ok(kc, "%assert matmul.check.passed\n"
                  "%assert all(matmul.check.passed) and count(matmul) == 3\n"
                  "%assert matmul[variant=tiled,tile=16].m == 64\n"
                  "%assert histo.bins['a-d'] == 5 and histo.bins['m-p'] == 10\n"
                  "%assert histo[variant=cub].check.passed  # a comment")
    assert outputs(msgs) == [] and streams(msgs) == []


def test_false_assert_says_what_was_compared(kc):
    ok(kc, f"%histo --text {TEXT} --variant cpu,privatized {QUICK}")
    ok(kc, f"%matmul --size 64 --variant naive {QUICK}")
    c = error(kc, "%assert histo.bins['a-d'] == 7")
    assert c["ename"] == "AssertionError"
    assert c["evalue"] == "histo.bins['a-d'] == 7: 5 == 7 is false"
    assert "  in cell line 1: %assert histo.bins['a-d'] == 7" in c["traceback"]
    assert any(l.startswith("  where histo.bins['a-d'] = 5, from %histo in cell 1") for l in c["traceback"])
    c = error(kc, "%assert matmul[variant=naive].gflops > 1e9 * matmul[variant=naive].m")
    assert c["ename"] == "AssertionError" and " > 64000000000 is false" in c["evalue"]
    assert any("where matmul[variant=naive].gflops = " in l and "from %matmul in cell 2" in l
               for l in c["traceback"])
    ok(kc, "%echo the next cell works")


@pytest.mark.parametrize("code, ename, text", [
    ("%assert reduce.check.passed", "LookupError", "no %reduce result in this session yet"),
    ("%assert matmul[variant=tild].gflops > 0", "LookupError", "did you mean variant=tiled?"),
    ("%assert matmul.gflop > 0", "LookupError", "did you mean 'gflops'?"),
    ("%assert matmul.gflops > 0", "ValueError", "has 2 values, one per run"),
    ("%assert matmul[variant=naive].variant + 1", "TypeError", "'+' needs numbers"),
    ("%assert 1 / (matmul.m - 64)", "ZeroDivisionError", "division by zero"),
    ("%assert matmull.m", "LookupError", "did you mean matmul?"),
    ("%score matmul[variant=tiled].variant", "TypeError", "a score must be a number"),
    ("%assert 1 = 1", "SyntaxError", "'=' is not a comparison"),
    # the check's old spellings, before it was one document in every family, name the new one
    ("%assert matmul[variant=tiled].check.tol < 1", "LookupError", "did you mean check.tolerance?"),
    ("%assert matmul[variant=tiled].check.first_mismatch.bin == 'a'", "LookupError",
     "did you mean check.wrong.first? (its bin is check.wrong.first.at.bin"),
    ("%assert matmul[variant=tiled].found", "LookupError", "did you mean check.tools.racecheck?"),
    ("%assert", "SyntaxError", "an expression is missing"),
])
def test_bad_checks_are_clear_errors(kc, code, ename, text):
    ok(kc, f"%matmul --size 64 --variant naive,tiled {QUICK}")
    c = error(kc, code)
    assert c["ename"] == ename and text in c["evalue"], c
    ok(kc, "%assert matmul[variant=tiled].check.passed")      # and the next cell works


def test_syntax_error_stops_the_cell_before_anything_runs(kc):
    c = error(kc, f"%matmul --size 64 --variant naive {QUICK}\n%assert (matmul.m")
    assert c["ename"] == "SyntaxError" and "expected ')'" in c["evalue"]
    assert "LookupError" in error(kc, "%assert matmul.m == 64")["ename"]   # %matmul never ran


def test_score_is_the_cells_bare_number(kc):
    ok(kc, f"%histo --text {TEXT} --variant cpu {QUICK}")
    msgs = ok(kc, "%score (histo.bins['a-d'] == 5) + (histo.bins['m-p'] == 9) + 0.5")
    results = [m for m in outputs(msgs) if m["msg_type"] == "execute_result"]
    assert len(results) == 1 and len(outputs(msgs)) == 1
    data = results[0]["content"]["data"]
    assert data["text/plain"].strip() == "1.5"  # nbgrader: float(text/plain) is the points
    doc = data["application/vnd.cudalab.result+json"]
    assert doc == {"magic": "score", "expr": "(histo.bins['a-d'] == 5) + (histo.bins['m-p'] == 9) + 0.5",
                   "value": 1.5}
    # a %score before another command is a display, not the cell's value
    msgs = ok(kc, "%score 2\n%echo done")
    assert [m["msg_type"] for m in outputs(msgs)] == ["display_data", "stream"]


def test_checks_see_silent_cells_and_the_same_cell(kc):
    ok(kc, f"%matmul --size 32 --variant naive {QUICK}", silent=True)
    ok(kc, "%assert matmul.m == 32")
    ok(kc, f"%matmul --size 48 --variant naive {QUICK}\n%assert matmul.m == 48")


def test_selector_finds_an_earlier_cells_run(kc):
    ok(kc, f"%matmul --size 64 --variant naive {QUICK}")
    ok(kc, f"%matmul --size 64 --variant tiled --tile 16 {QUICK}")
    ok(kc, "%assert matmul.variant == 'tiled'\n"                 # the newest result
           "%assert matmul[variant=naive].m == 64\n"             # an earlier cell's run
           "%score matmul[variant=tiled,tile=16].gflops > 0")


def test_help_and_completion(kc):
    msgs = ok(kc, "%assert?")
    text = outputs(msgs)[0]["content"]["data"]["text/plain"]
    assert "%assert EXPR" in text and "matmul[variant=tiled,tile=16]" in text
    reply = kc.complete("%sco", 4, reply=True)["content"]
    assert "%score" in reply["matches"]


def test_completion_from_the_sessions_results(kc):
    ok(kc, f"%matmul --size 32 --variant naive,tiled {QUICK}")

    def complete(code):
        c = kc.complete(code, len(code), reply=True)["content"]
        return c["matches"], c["cursor_start"]

    assert complete("%assert mat") == (["matmul"], 8)
    assert "min" in complete("%assert m")[0] and "matmul" in complete("%assert m")[0]
    matches, start = complete("%assert matmul.ch")
    assert matches == ["check", "check_reps"] and start == len("%assert matmul.")   # the run's, its params'
    assert complete("%assert matmul[variant=tiled].check.pa")[0] == ["passed"]
    assert "seed" in complete("%score matmul.")[0]            # params are fields too
    assert "gflops" in complete("%assert count(matmul) > 1 and matmul[variant=naive].")[0]
    assert complete("%assert nosuch.")[0] == []


def test_command_line_mode_keeps_results_within_the_cell():
    rc, docs, out, err = run_cell(f"%histo --text {TEXT} --variant cpu {QUICK}\n"
                                  "%assert histo.bins['y-z'] == 1\n%score histo.nbins")
    assert rc == 0, err
    assert docs[-1] == {"magic": "score", "expr": "histo.nbins", "value": 7}
    rc, _, _, err = run_cell("%assert histo.nbins == 7")
    assert rc == 1 and "LookupError: no %histo result" in err
