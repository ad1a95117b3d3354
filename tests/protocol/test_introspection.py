"""complete_request, inspect_request, is_complete_request and history_request."""
from __future__ import annotations

import pytest

from conftest import execute, request


def complete(kc, code, cursor_pos=None):
    content = {"code": code, "cursor_pos": len(code) if cursor_pos is None else cursor_pos}
    reply, _ = request(kc, "complete_request", content)
    assert reply["content"]["status"] == "ok"
    return reply["content"]


def inspect(kc, code, cursor_pos=None, detail_level=0):
    content = {"code": code, "cursor_pos": len(code) if cursor_pos is None else cursor_pos,
               "detail_level": detail_level}
    reply, _ = request(kc, "inspect_request", content)
    assert reply["content"]["status"] == "ok"
    return reply["content"]


def is_complete(kc, code):
    reply, _ = request(kc, "is_complete_request", {"code": code})
    return reply["content"]


def history(kc, **content):
    content.setdefault("output", False)
    content.setdefault("raw", True)
    reply, _ = request(kc, "history_request", content)
    assert reply["content"]["status"] == "ok"
    return reply["content"]["history"]


# ---- complete ----

def test_complete_magic_name(kernel):
    km, kc = kernel
    c = complete(kc, "%ec")
    assert "%echo" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 3)
    assert all(m.startswith("%ec") for m in c["matches"])
    assert isinstance(c["metadata"], dict)


def test_complete_all_magics_after_percent(kernel):
    km, kc = kernel
    c = complete(kc, "%")
    assert {"%echo", "%help", "%device"} <= set(c["matches"])
    assert (c["cursor_start"], c["cursor_end"]) == (0, 1)


def test_complete_cell_magic(kernel):
    km, kc = kernel
    c = complete(kc, "%%ec")
    assert "%%echo" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 4)


def test_complete_flag(kernel):
    km, kc = kernel
    c = complete(kc, "%echo --st")
    assert "--stderr" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (6, 10)


def test_complete_flags_of_device(kernel):
    km, kc = kernel
    c = complete(kc, "%device --")
    assert {"--index", "--brief"} <= set(c["matches"])
    assert (c["cursor_start"], c["cursor_end"]) == (8, 10)


def test_complete_unknown_prefix_has_no_matches(kernel):
    km, kc = kernel
    assert complete(kc, "%zzz")["matches"] == []


def test_complete_cursor_positions_are_code_points(kernel):
    km, kc = kernel
    code = "%echo héllo wörld --st"          # é and ö are two bytes each in UTF-8
    c = complete(kc, code)
    assert "--stderr" in c["matches"]
    assert c["cursor_end"] == len(code) == 22
    assert c["cursor_start"] == code.index("--st") == 18


def test_complete_astral_code_points(kernel):
    km, kc = kernel
    code = "%echo 🚀🚀 --st"                   # 4-byte UTF-8, one code point each
    c = complete(kc, code)
    assert "--stderr" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (code.index("--st"), len(code))


def test_complete_on_second_line(kernel):
    km, kc = kernel
    code = "%echo é\n%ec"
    c = complete(kc, code)
    assert "%echo" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (8, 11) == (code.rindex("%ec"), len(code))


def test_complete_cursor_in_the_middle(kernel):
    km, kc = kernel
    code = "%ec\n%help"
    c = complete(kc, code, cursor_pos=3)
    assert "%echo" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 3)


# ---- inspect ----

@pytest.mark.parametrize("code,pos", [("%echo", None), ("%echo hello", 2), ("%echo?", 3), ("%%echo\nbody", 3)])
def test_inspect_known_magic(kernel, code, pos):
    km, kc = kernel
    c = inspect(kc, code, pos)
    assert c["found"] is True
    text = c["data"]["text/plain"]
    assert "echo" in text and "--stderr" in text
    assert isinstance(c["metadata"], dict)


def test_inspect_matches_help(kernel):
    km, kc = kernel
    text = inspect(kc, "%echo")["data"]["text/plain"]
    _, msgs = execute(kc, "%help echo")
    help_text = [m for m in msgs if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/plain"]
    assert "--stderr" in help_text and "--stderr" in text


@pytest.mark.parametrize("code", ["%nosuchmagic", "hello", "", "# comment"])
def test_inspect_unknown_not_found(kernel, code):
    km, kc = kernel
    c = inspect(kc, code)
    assert c["found"] is False
    assert c["data"] == {}


# ---- is_complete ----

@pytest.mark.parametrize("code", ["%echo hi", "%help", "%device --brief", "# only a comment", "",
                                  "%echo hi\n%echo there", '%echo "quoted text"'])
def test_is_complete_complete(kernel, code):
    km, kc = kernel
    assert is_complete(kc, code)["status"] == "complete"


@pytest.mark.parametrize("code", ['%echo "unterminated', "%echo hi \\", "%echo hi\\",
                                  '%echo ok\n%echo "open'])
def test_is_complete_incomplete(kernel, code):
    km, kc = kernel
    c = is_complete(kc, code)
    assert c["status"] == "incomplete"
    assert isinstance(c.get("indent"), str), "an incomplete reply must carry indent"


@pytest.mark.parametrize("code", ["%nosuchmagic", "plain text", "%echo --stdrr x"])
def test_is_complete_invalid(kernel, code):
    km, kc = kernel
    assert is_complete(kc, code)["status"] == "invalid"


# ---- history ----

CELLS = ["%echo one", "%help echo", "%echo two", "%help echo", "%echo three"]


def run_cells(kc, cells=CELLS):
    for code in cells:
        reply, _ = execute(kc, code)
        assert reply["content"]["status"] == "ok"


def test_history_tail(kernel):
    km, kc = kernel
    run_cells(kc)
    h = history(kc, hist_access_type="tail", n=2)
    assert h == [[1, 4, "%help echo"], [1, 5, "%echo three"]]
    assert history(kc, hist_access_type="tail", n=100) == [[1, i + 1, c] for i, c in enumerate(CELLS)]


def test_history_empty_at_start(kernel):
    km, kc = kernel
    assert history(kc, hist_access_type="tail", n=10) == []


def test_history_range(kernel):
    km, kc = kernel
    run_cells(kc)
    assert history(kc, hist_access_type="range", session=1, start=2, stop=4) == \
        [[1, 2, "%help echo"], [1, 3, "%echo two"]]
    assert history(kc, hist_access_type="range", session=1, start=1, stop=2) == [[1, 1, "%echo one"]]


def test_history_search_glob(kernel):
    km, kc = kernel
    run_cells(kc)
    h = history(kc, hist_access_type="search", pattern="%echo t*")
    assert h == [[1, 3, "%echo two"], [1, 5, "%echo three"]]
    assert history(kc, hist_access_type="search", pattern="%help*") == \
        [[1, 2, "%help echo"], [1, 4, "%help echo"]]


def test_history_search_unique_keeps_newest(kernel):
    km, kc = kernel
    run_cells(kc)
    assert history(kc, hist_access_type="search", pattern="%help*", unique=True) == [[1, 4, "%help echo"]]


def test_history_search_n_keeps_last_n(kernel):
    km, kc = kernel
    run_cells(kc)
    assert history(kc, hist_access_type="search", pattern="%echo*", n=2) == \
        [[1, 3, "%echo two"], [1, 5, "%echo three"]]


def test_history_output_pairs(kernel):
    km, kc = kernel
    run_cells(kc, ["%echo one", "%help echo"])
    h = history(kc, hist_access_type="tail", n=2, output=True)
    assert [e[:2] for e in h] == [[1, 1], [1, 2]]
    assert h[0][2] == ["%echo one", None]
    inp, out = h[1][2]
    assert inp == "%help echo"
    assert isinstance(out, str) and "--stderr" in out


def test_history_skips_silent_and_unstored(kernel):
    km, kc = kernel
    execute(kc, "%echo stored")
    execute(kc, "%echo hidden", silent=True)
    execute(kc, "%echo unstored", store_history=False)
    execute(kc, "%echo stored again")
    assert history(kc, hist_access_type="tail", n=10) == [[1, 1, "%echo stored"], [1, 2, "%echo stored again"]]


def test_history_records_failed_cells(kernel):
    km, kc = kernel
    execute(kc, "%nosuchmagic")
    assert history(kc, hist_access_type="tail", n=10) == [[1, 1, "%nosuchmagic"]]


def test_history_of_unicode_and_multiline_cells(kernel):
    km, kc = kernel
    code = "# ünïcødé 🚀\n%echo ok"
    execute(kc, code)
    assert history(kc, hist_access_type="tail", n=1) == [[1, 1, code]]
