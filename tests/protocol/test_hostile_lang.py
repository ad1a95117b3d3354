"""Hostile input to the cell language and to the %assert/%score expressions, through a real client
(jupyter_client), with a heartbeat monitor running throughout (issue 11, items 1 and 8).

  * chains of every operator and nestings of every kind, at about 16 KB and 1 MB, in %score and
    %assert: a clear SyntaxError raised when the cell is parsed (nothing runs), never a crash,
    and the next cell works; chains within the limits still give their value;
  * numbers beyond 64 bits in every form (2^64, ...616000, 1.8446744073709551616e19, 16777216T,
    1e20) on integer flags of several magics and as expression literals: an error naming the flag
    and its range, never a silent 0; arithmetic beyond the doubles: an OverflowError naming the
    expression, never "out of memory";
  * escapes in quoted text, in both languages: decoded, or a SyntaxError naming the escape
    (NUL, malformed, unknown), never a character silently dropped.

Run it against the ASan kernel too: CUDALAB_BIN=build-asan/bin/cudalab."""
from __future__ import annotations

import re

import pytest

from conftest import HeartbeatMonitor, execute, kernel_conn, outputs, request, streams

pytestmark = pytest.mark.serial    # heartbeat stalls bounded in wall-clock time: run alone (conftest.py)

CPU = {"CUDALAB_BACKEND": "cpu"}
QUICK = "--reps 1 --warmup 0"
SLOW = 120                  # seconds for one cell: a megabyte through ASan on 2 shared cores
SIZES = {"16KB": 16 << 10, "1MB": 1 << 20}
LIMIT = 4096                # EXPR_MAX_TERMS in kernel/grade/expr.h
DEPTH = 64                  # EXPR_MAX_DEPTH

# name: (head, unit, tail): head + unit * n + tail, where the tail may close n openings. At 16 KB
# every kind is past a limit but these, whose units are long enough to stay within 4096 terms:
# their value, then. At 1 MB every kind is past the limits.
WITHIN_AT_16KB = {"and": "1", "or": "0", "selector keys": "1"}
CHAINS = {
    "+": ("1", "+1", ""), "-": ("1", "-1", ""), "*": ("1", "*1", ""), "/": ("1", "/1", ""),
    "%": ("7", "%5", ""), "and": ("1", " and 1", ""), "or": ("0", " or 0", ""), "&&": ("1", "&&1", ""),
    "||": ("0", "||0", ""), "==": ("1", "==1", ""), "<": ("1", " < 2", ""), "not": ("", "not ", "1"),
    "!": ("", "!", "1"), "unary -": ("", "- ", "1"), "unary +": ("", "+", "1"), "()": ("", "(", "1)"),
    "calls": ("", "abs(", "1)"), ".field": ("matmul", ".x", ""), "[index]": ("histo.bins", "[0]", ""),
    "selector keys": ("count(matmul[variant=naive", ",variant=naive", "])"),
    "arguments": ("min(1", ",1", ")"), "strings": ("len('a'", "+'a'", ")"),
    "mixed": ("1", "+2*3-4/5%6 and not -1 or (7)", ""),
}


def grown(kind: str, size: int) -> str:
    """The chain of that kind, about size bytes long (closing what it opened)."""
    head, unit, tail = CHAINS[kind]
    n = max(1, (size - len(head)) // len(unit))
    closing = tail[-1] * (n - 1) if kind in ("()", "calls") else ""
    return head + unit * n + tail + closing


@pytest.fixture
def kc(start_kernel):
    """A CPU-backend kernel with a heartbeat monitor pinging it for the whole test."""
    pair = start_kernel(env=CPU)
    with HeartbeatMonitor(kernel_conn(pair)) as hb:
        yield pair.kc
    hb.check(0.5)


def error(kc, code: str, timeout: float = SLOW) -> dict:
    reply, msgs = execute(kc, code, timeout=timeout)
    c = reply["content"]
    assert c["status"] == "error", (code[:80], c)
    errs = [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert len(errs) == 1 and errs[0]["ename"] == c["ename"], errs
    assert not streams(msgs, "stdout"), "something ran before the error"
    return c


def ok(kc, code: str, timeout: float = SLOW) -> list[dict]:
    reply, msgs = execute(kc, code, timeout=timeout)
    assert reply["content"]["status"] == "ok", (code[:80], reply["content"])
    assert not streams(msgs, "stderr"), streams(msgs, "stderr")
    return msgs


def score(kc, expr: str, timeout: float = SLOW) -> str:
    """The bare number a %score cell shows."""
    msgs = ok(kc, f"%score {expr}", timeout)
    results = [m["content"]["data"]["text/plain"] for m in msgs if m["msg_type"] == "execute_result"]
    assert len(results) == 1, outputs(msgs)
    return results[0].strip()


def with_results(kc) -> None:
    ok(kc, f"%matmul --size 16 --variant naive,tiled --tile 8 {QUICK}")
    ok(kc, f'%histo --text "programming massively parallel processors" --bin-width 4 {QUICK}')


# ---------------------------------------------------------------- item 1: long chains

@pytest.mark.parametrize("kind", list(CHAINS))
def test_long_chains_are_clear_errors_and_the_next_cell_works(kc, kind):
    with_results(kc)
    for label, size in SIZES.items():
        text = grown(kind, size)
        for magic in ("%score", "%assert"):
            if label == "16KB" and kind in WITHIN_AT_16KB:
                if magic == "%score":
                    assert score(kc, text) == WITHIN_AT_16KB[kind]
                else:
                    ok(kc, f"%assert {text} == {WITHIN_AT_16KB[kind]}")
                continue
            c = error(kc, f"%echo this must not run\n{magic} {text}")
            assert c["ename"] == "SyntaxError", (kind, label, magic, c)
            assert re.search(r"too long: (more than 4096 terms|\d+ bytes \(the limit is 65536\))"
                             r"|nested too deeply: more than 64 levels|comparisons do not chain",
                             c["evalue"]), (kind, label, magic, c["evalue"])
            assert len(c["evalue"]) < 2000 and all(len(line) < 2000 for line in c["traceback"])
            assert score(kc, "1 + 1") == "2"


def test_chains_within_the_limits_give_their_values(kc):
    with_results(kc)
    n = 1000
    assert score(kc, "+".join(["1"] * n)) == "1000"
    assert score(kc, "*".join(["1"] * n)) == "1"
    assert score(kc, f"{2 * n}" + "-1" * n) == "1000"
    assert score(kc, "+".join(["2*3-4/4"] * 500)) == "2500"      # 6 terms each
    assert score(kc, " and ".join(["1"] * n)) == "1"
    assert score(kc, " or ".join(["0"] * n) + " or 1") == "1"
    assert score(kc, "min(" + ",".join(["5"] * n) + ",1)") == "1"
    assert score(kc, "count(matmul[" + ",".join(["variant=naive"] * 500) + "])") == "1"
    assert score(kc, "(" * DEPTH + "1" + ")" * DEPTH) == "1"
    assert score(kc, "-" * DEPTH + "1") == "1"
    assert score(kc, "not " * DEPTH + "0") == "0"
    assert score(kc, "abs(" * (DEPTH - 1) + "-3" + ")" * (DEPTH - 1)) == "3"   # the minus is a level
    assert score(kc, "+".join(["1"] * (LIMIT - 10))) == str(LIMIT - 10)
    ok(kc, "%assert " + " and ".join(["matmul[variant=naive].check.passed"] * 500))
    # a false check over a long chain: explained, and bounded
    c = error(kc, "%assert " + " or ".join(["histo.bins['a-d'] == 7"] * 600))    # 6 terms each
    assert c["ename"] == "AssertionError" and "5 == 7 is false" in c["evalue"]
    assert len(c["evalue"]) <= 1024 and len(c["traceback"]) <= 16


def test_long_lines_in_completion_inspection_and_is_complete(kc):
    with_results(kc)
    for size in SIZES.values():
        for code in (f"%score {grown('+', size)}+matmul.", f"%assert {grown('.field', size)}.",
                     f"%score {grown('[index]', size)}[", f"%echo {grown('+', size)}"):
            reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": len(code)}, timeout=SLOW)
            assert reply["content"]["status"] == "ok"
            reply, _ = request(kc, "inspect_request", {"code": code, "cursor_pos": 3, "detail_level": 0},
                               timeout=SLOW)
            assert reply["content"]["status"] == "ok"
            reply, _ = request(kc, "is_complete_request", {"code": code}, timeout=SLOW)
            assert reply["content"]["status"] in ("complete", "invalid", "incomplete")
    assert score(kc, "1 + 1") == "2"


def test_many_words_on_one_line(kc):
    c = error(kc, "%echo" + " a" * 100_000)
    assert c["ename"] == "UsageError" and "%echo takes at most 65536 words" in c["evalue"]
    msgs = ok(kc, "%echo '" + "ab" * (256 << 10) + "'")       # one quoted word of 512 KB
    assert "".join(streams(msgs, "stdout")) == "ab" * (256 << 10) + "\n"
    msgs = ok(kc, "%echo" + " a" * 1000)
    assert "".join(streams(msgs, "stdout")) == " ".join(["a"] * 1000) + "\n"


# ---------------------------------------------------------------- item 8: numbers

BEYOND_64_BITS = ["18446744073709551616", "18446744073709551616000", "1.8446744073709551616e19", "2^64",
                  "16777216T", "17179869184G", "1e20", "18_446_744_073_709_551_616", "-18446744073709551616"]

# cell (with {} for the value), the flag, its range as the message gives it
INTEGER_FLAGS = [
    ("%matmul --size 16 --seed {}", "seed", "0 and 9223372036854775807"),
    ("%matmul --size 16 --variant tiled --tile 8,{}", "tile", "2 and 32"),
    ("%occupancy --smem {}", "smem", "0 and 1073741824"),
    ("%occupancy --regs {}", "regs", "0 and 1024"),
    ("%histo --size {}", "size", "1 and 1125899906842624"),
    ("%grid --data 16x{}", "data", "1 and 2147483647"),
    ("%reduce --size {}", "size", "1 and 9223372036854775807"),
]


@pytest.mark.parametrize("cell, flag, bounds", INTEGER_FLAGS, ids=[f[1] + ":" + f[0].split()[0] for f in INTEGER_FLAGS])
def test_integers_beyond_64_bits_are_errors_naming_the_flag_and_its_range(kc, cell, flag, bounds):
    for form in BEYOND_64_BITS:
        c = error(kc, cell.format(form), timeout=30)
        assert c["ename"] == "UsageError", (form, c)
        sizes = " sizes" if flag == "data" else ""
        assert c["evalue"] == (f"--{flag}: '{form}' is beyond the 64-bit integer range; "
                               f"--{flag}{sizes} must be between {bounds}"), (form, c["evalue"])
    ok(kc, f"%occupancy --smem 48K --regs 2^5")              # in range, any form: fine
    assert score(kc, "1 + 1") == "2"


@pytest.mark.parametrize("magic", ["%score", "%assert"])
def test_expression_literals_out_of_range_are_syntax_errors(kc, magic):
    with_results(kc)
    for literal, text in [("18446744073709551616", "the integer 18446744073709551616 is beyond the 64-bit range"),
                          ("18446744073709551616000", "is beyond the 64-bit range"),
                          ("2^64", "the integer 2^64 is beyond the 64-bit range"),
                          ("16777216T", "is beyond the 64-bit range"),
                          ("9223372036854775808", "is beyond the 64-bit range"),
                          ("1e400", "the number 1e400 is beyond the range of a double")]:
        c = error(kc, f"{magic} matmul.m > {literal}")
        assert c["ename"] == "SyntaxError" and text in c["evalue"], (literal, c["evalue"])
        c = error(kc, f"{magic} matmul[seed={literal}].m > 0")
        assert c["ename"] == "SyntaxError" and "beyond the" in c["evalue"], (literal, c["evalue"])
    assert score(kc, "1.8446744073709551616e19") == "1.84467440737096e+19"
    assert score(kc, "9007199254740993 - 9007199254740992") == "1"     # integers stay exact
    ok(kc, "%assert 9007199254740993 != 9007199254740992 and 2^62 == 4611686018427387904")


OVERFLOWING = ["1e308*10", "1e308 + 1e308", "-1e308 - 1e308", "1e308 / 1e-308", "1e300 * 1e300 * 0",
               "round(1.7e308, -308)", "1 + 1e308*10", "-(1e308*10)", "matmul.m * 1e307 * 1e307"]


@pytest.mark.parametrize("magic", ["%score", "%assert"])
def test_arithmetic_beyond_the_doubles_is_an_overflow_error(kc, magic):
    with_results(kc)
    for expr in OVERFLOWING:
        c = error(kc, f"{magic} {expr}")
        assert c["ename"] == "OverflowError", (expr, c)
        assert "overflows" in c["evalue"] and "beyond the largest double" in c["evalue"], c["evalue"]
        assert "memory" not in c["evalue"]
    c = error(kc, f"{magic} 1e308*10")
    assert c["evalue"].startswith("1e308*10 overflows: 1e+308 * 10")
    assert score(kc, "round(1.5, 400)") == "1.5"
    assert score(kc, "mean(matmul.m) * 2") == "32"


# ---------------------------------------------------------------- item 8: escapes

def test_escapes_in_expressions(kc):
    with_results(kc)
    ok(kc, "%assert '\\x41\\u00e9\\U0001F600' == 'A\u00e9\U0001F600' and len('a\\tb') == 3")
    ok(kc, "%assert 'it\\'s' == \"it's\" and histo.bins['a\\x2dd'] == 5")
    for code, text in [("%score len('a\\x00b')", "the escape \\x00 means NUL"),
                       ("%assert 'a\\u0000' == 'a'", "the escape \\u0000 means NUL"),
                       ("%assert 'a\\qb' == 'aqb'", "unknown escape \\q in a string; the escapes are"),
                       ("%assert 'a\\x4' == 'a'", "the escape \\x needs 2 hex digits"),
                       ("%assert '\\ud800' == 'a'", "is not a Unicode character"),
                       ("%assert matmul[variant='na\\x00ive'].m > 0", "means NUL")]:
        c = error(kc, code)
        assert c["ename"] == "SyntaxError" and text in c["evalue"], (code, c["evalue"])
    assert score(kc, "len('ab')") == "2"


def test_escapes_in_the_cell_language(kc):
    msgs = ok(kc, '%echo "a\\x41\\u00e9\\tb" \'c\\x41\' "C:\\path"')
    assert "".join(streams(msgs, "stdout")) == "aA\u00e9\tb c\\x41 C:\\path\n"
    for code, text in [('%echo "a\\x00b"', "the escape \\x00 means NUL"),
                       ('%histo --text "ab\\u0000"', "means NUL"),
                       ('%echo "\\x4g"', "the escape \\x needs 2 hex digits"),
                       ('%echo "\\U00110000"', "is not a Unicode character")]:
        c = error(kc, code)
        assert c["ename"] == "SyntaxError" and text in c["evalue"], (code, c["evalue"])
        assert any(line.startswith("  in cell line 1") for line in c["traceback"]), c["traceback"]
    msgs = ok(kc, "%echo next")
    assert "".join(streams(msgs, "stdout")) == "next\n"
