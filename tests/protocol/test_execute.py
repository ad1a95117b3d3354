"""execute_request: outputs, results, errors, counts, silent, store_history, stop_on_error."""
from __future__ import annotations

import ctypes
import time

import psutil
import pytest

from conftest import (TIMEOUT, assert_busy_idle, collect_iopub, execute, get_reply, gpu_visible,
                      kernel_children, outputs, streams)

MIME_RESULT = ("text/plain", "text/html", "application/vnd.cudalab.result+json")


def only(msgs, msg_type):
    return [m for m in msgs if m["msg_type"] == msg_type]


# ---- execute_input, streams, results ----

def test_execute_input_carries_code_and_count(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo hi")
    assert reply["content"]["status"] == "ok"
    inputs = only(msgs, "execute_input")
    assert len(inputs) == 1
    assert inputs[0]["content"] == {"code": "%echo hi", "execution_count": 1}
    assert reply["content"]["execution_count"] == 1
    assert_busy_idle(msgs, reply["parent_header"]["msg_id"])
    # execute_input comes right after busy, before any output
    assert msgs[1]["msg_type"] == "execute_input"


def test_echo_writes_stdout(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo hello, world")
    assert reply["content"]["status"] == "ok"
    outs = outputs(msgs)
    assert [(m["msg_type"], m["content"]) for m in outs] == \
        [("stream", {"name": "stdout", "text": "hello, world\n"})]


def test_echo_stderr_flag_writes_stderr(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo --stderr oops")
    assert reply["content"]["status"] == "ok"
    outs = outputs(msgs)
    assert [(m["msg_type"], m["content"]) for m in outs] == \
        [("stream", {"name": "stderr", "text": "oops\n"})]


def test_cell_magic_echo_prints_body(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%%echo\nfirst line\nsecond line")
    assert reply["content"]["status"] == "ok"
    text = "".join(streams(msgs, "stdout"))
    assert text.rstrip("\n") == "first line\nsecond line", repr(text)
    assert streams(msgs, "stderr") == []


def test_several_line_magics_run_in_order(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo one\n%echo two\n%echo --stderr three\n%echo four")
    assert reply["content"]["status"] == "ok"
    # stream text is coalesced, but never reordered across streams
    got = []
    for m in outputs(msgs):
        name, text = m["content"]["name"], m["content"]["text"]
        if got and got[-1][0] == name:
            got[-1] = (name, got[-1][1] + text)
        else:
            got.append((name, text))
    assert got == [("stdout", "one\ntwo\n"), ("stderr", "three\n"), ("stdout", "four\n")]


def test_comments_and_blank_lines_are_ignored(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "# a comment\n\n   \n%echo x\n# another\n\n")
    assert reply["content"]["status"] == "ok"
    assert [m["content"]["text"] for m in outputs(msgs)] == ["x\n"]


def test_only_comments_is_an_empty_ok_cell(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "# nothing here\n\n")
    assert reply["content"]["status"] == "ok"
    assert outputs(msgs) == []


def test_help_is_an_execute_result_with_three_mimetypes(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%help")
    assert reply["content"]["status"] == "ok"
    results = only(msgs, "execute_result")
    assert len(results) == 1, [m["msg_type"] for m in msgs]
    content = results[0]["content"]
    assert content["execution_count"] == reply["content"]["execution_count"] == 1
    for mime in MIME_RESULT:
        assert mime in content["data"], f"{mime} missing from %help's result"
    # JupyterLab ranks its JSON viewer above HTML: plain application/json would hide the table
    assert "application/json" not in content["data"]
    text = content["data"]["text/plain"]
    for name in ("echo", "help", "device"):
        assert name in text, f"%help's list does not mention {name}"
    assert not only(msgs, "display_data")


@pytest.mark.parametrize("code", ["%help echo", "%echo?"])
def test_help_for_one_magic(kernel, code):
    km, kc = kernel
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", reply["content"]
    results = only(msgs, "execute_result")
    assert len(results) == 1, [m["msg_type"] for m in msgs]
    text = results[0]["content"]["data"]["text/plain"]
    assert "echo" in text and "--stderr" in text, text
    # help for one magic, not the list of all of them
    _, listing = execute(kc, "%help")
    assert text != only(listing, "execute_result")[0]["content"]["data"]["text/plain"]


def test_help_echo_and_echo_question_mark_agree(kernel):
    km, kc = kernel
    _, a = execute(kc, "%help echo")
    _, b = execute(kc, "%echo?")
    ta = only(a, "execute_result")[0]["content"]["data"]["text/plain"]
    tb = only(b, "execute_result")[0]["content"]["data"]["text/plain"]
    assert ta == tb


def test_last_result_is_execute_result_earlier_are_display_data(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%help echo\n%help help\n%help device")
    assert reply["content"]["status"] == "ok"
    kinds = [m["msg_type"] for m in outputs(msgs)]
    assert kinds == ["display_data", "display_data", "execute_result"], kinds
    for m in outputs(msgs):
        for mime in MIME_RESULT:
            assert mime in m["content"]["data"]
    assert "--stderr" in outputs(msgs)[0]["content"]["data"]["text/plain"]
    assert outputs(msgs)[-1]["content"]["execution_count"] == reply["content"]["execution_count"]


def test_result_followed_by_stream_has_no_execute_result(kernel):
    """The LAST command's result is the execute_result; %echo has none, so %help before it is display_data."""
    km, kc = kernel
    reply, msgs = execute(kc, "%help echo\n%echo done")
    kinds = [m["msg_type"] for m in outputs(msgs)]
    assert kinds == ["display_data", "stream"], kinds


# ---- errors ----

def check_error(reply, msgs, ename):
    assert reply["content"]["status"] == "error", reply["content"]
    errors = only(msgs, "error")
    assert len(errors) == 1, [m["msg_type"] for m in msgs]
    err = errors[0]["content"]
    assert err["ename"] == ename, err
    assert err["traceback"], "empty traceback"
    assert err["traceback"][0] == f"{err['ename']}: {err['evalue']}", err["traceback"]
    assert all(isinstance(line, str) for line in err["traceback"])
    for key in ("ename", "evalue", "traceback"):
        assert reply["content"][key] == err[key], f"execute_reply's {key} differs from the error message's"
    assert "execution_count" in reply["content"]
    return err


def test_unknown_magic_is_usage_error_with_suggestion(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%matmull")
    err = check_error(reply, msgs, "UsageError")
    assert "did you mean" in err["evalue"], err["evalue"]


def test_unknown_magic_suggests_nearest_known(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%ehco hi")
    err = check_error(reply, msgs, "UsageError")
    assert "did you mean" in err["evalue"] and "echo" in err["evalue"], err["evalue"]


def test_unknown_flag_names_nearest_flag(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo --stdrr x")
    err = check_error(reply, msgs, "UsageError")
    assert "--stderr" in err["evalue"], err["evalue"]
    assert "--stdrr" in err["evalue"], f"the error does not name the wrong flag: {err['evalue']}"


def test_line_without_percent_is_syntax_error(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "print('hi')")
    check_error(reply, msgs, "SyntaxError")


def test_parse_error_runs_nothing(kernel):
    """The cell is validated whole first: a typo on the last line means nothing ran."""
    km, kc = kernel
    reply, msgs = execute(kc, "%echo first\n%nosuchmagic\n%echo third")
    check_error(reply, msgs, "UsageError")
    assert streams(msgs) == []


def test_runtime_error_stops_the_cell(kernel):
    """A command that fails while running stops the cell: earlier output stays, later never runs."""
    km, kc = kernel
    reply, msgs = execute(kc, "%echo first\n%device --index 63\n%echo third", timeout=30)
    check_error(reply, msgs, "UsageError")
    assert streams(msgs) == ["first\n"]
    kinds = [m["msg_type"] for m in outputs(msgs)]
    assert kinds == ["stream", "error"], kinds


def test_error_is_the_last_output_and_between_busy_idle(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%nosuchmagic")
    assert_busy_idle(msgs, reply["parent_header"]["msg_id"])
    assert outputs(msgs)[-1]["msg_type"] == "error"


def test_kernel_keeps_working_after_errors(kernel):
    km, kc = kernel
    for bad in ("%matmull", "%echo --stdrr x", "nonsense", '%echo "unterminated'):
        reply, _ = execute(kc, bad)
        assert reply["content"]["status"] == "error", bad
    reply, msgs = execute(kc, "%echo alive")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs) == ["alive\n"]


# ---- execution_count, silent, store_history, user_expressions ----

def test_execution_count_sequence(kernel):
    km, kc = kernel
    counts = []
    for code in ("%echo a", "%help", "%nosuchmagic", "%echo b"):
        reply, msgs = execute(kc, code)
        counts.append(reply["content"]["execution_count"])
        assert only(msgs, "execute_input")[0]["content"]["execution_count"] == counts[-1]
    assert counts == [1, 2, 3, 4]


def test_silent_has_no_input_no_outputs_no_count(kernel):
    km, kc = kernel
    execute(kc, "%echo one")
    reply, msgs = execute(kc, "%echo should not show\n%help", silent=True)
    assert reply["content"]["status"] == "ok"
    assert only(msgs, "execute_input") == []
    assert outputs(msgs) == [], [m["msg_type"] for m in msgs]
    assert [m["content"]["execution_state"] for m in msgs] == ["busy", "idle"]
    assert reply["content"]["execution_count"] == 1
    reply, msgs = execute(kc, "%echo two")
    assert reply["content"]["execution_count"] == 2


def test_silent_cell_with_worker_magic_shows_nothing(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%device", silent=True, timeout=30)
    assert reply["content"]["status"] == "ok"
    assert outputs(msgs) == [] and only(msgs, "execute_input") == []


def test_store_history_false_does_not_count(kernel):
    km, kc = kernel
    r1, _ = execute(kc, "%echo one")
    r2, msgs = execute(kc, "%echo two", store_history=False)
    assert r2["content"]["status"] == "ok"
    assert streams(msgs) == ["two\n"], "store_history=False must still show output"
    r3, _ = execute(kc, "%echo three")
    assert (r1["content"]["execution_count"], r3["content"]["execution_count"]) == (1, 2)
    assert r2["content"]["execution_count"] == 1


def test_user_expressions_answered_empty(kernel):
    km, kc = kernel
    reply, _ = execute(kc, "%echo hi", user_expressions={"x": "%help", "y": "1+1"})
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["user_expressions"] == {}


def test_execute_reply_ok_has_payload_list(kernel):
    km, kc = kernel
    reply, _ = execute(kc, "%echo hi")
    assert reply["content"]["status"] == "ok"
    assert reply["content"].get("payload", []) == []


def test_nothing_on_stderr_stream_for_successful_cells(kernel):
    km, kc = kernel
    cells = ["%echo hi", "%help", "%help echo", "%echo?", "%%echo\nbody", "# c\n%echo a\n%echo b",
             "%device", "%device --brief", "%help echo\n%help help"]
    for code in cells:
        reply, msgs = execute(kc, code, timeout=30)
        assert reply["content"]["status"] == "ok", (code, reply["content"])
        assert streams(msgs, "stderr") == [], f"stderr stream output for successful cell {code!r}"
        assert only(msgs, "error") == []


# ---- stop_on_error ----

def send_batch(kc, codes, **kw):
    """Sends execute requests back to back without waiting; returns their msg_ids."""
    return [kc.execute(code, **kw) for code in codes]


def replies_in_order(kc, ids):
    return [get_reply(kc, i) for i in ids]


@pytest.mark.serial    # the queued requests must arrive before the error ends: run alone
def test_stop_on_error_aborts_queued_executes(kernel):
    km, kc = kernel
    ids = send_batch(kc, ["%nosuchmagic", "%echo queued one", "%echo queued two"])
    replies = replies_in_order(kc, ids)
    assert replies[0]["content"]["status"] == "error"
    assert [r["content"]["status"] for r in replies[1:]] == ["aborted", "aborted"], \
        [r["content"] for r in replies]
    for i in ids:
        msgs = collect_iopub(kc, i)
        if i != ids[0]:
            assert streams(msgs) == [], "an aborted cell ran"
            assert [m["msg_type"] for m in msgs] == ["status", "status"]
            assert_busy_idle(msgs, i)
    # and the kernel runs the next cell normally
    reply, msgs = execute(kc, "%echo after")
    assert reply["content"]["status"] == "ok" and streams(msgs) == ["after\n"]


def test_stop_on_error_aborts_requests_queued_behind_a_running_cell(kernel):
    """The failing cell is queued behind one that runs in the worker, so the ones after it
    are certainly queued when it fails."""
    km, kc = kernel
    ids = send_batch(kc, ["%device", "%nosuchmagic", "%echo queued"])
    replies = replies_in_order(kc, ids)
    assert [r["content"]["status"] for r in replies] == ["ok", "error", "aborted"]


def test_aborted_execute_does_not_count(kernel):
    """Queued behind a cell that runs in the worker, so the cell after the error is certainly
    queued when it fails (sent back to back alone, a slow kernel under ASan may finish the error
    before the next request arrives)."""
    km, kc = kernel
    ids = send_batch(kc, ["%device", "%nosuchmagic", "%echo x"])
    replies = replies_in_order(kc, ids)
    assert [r["content"]["status"] for r in replies] == ["ok", "error", "aborted"]
    assert [r["content"]["execution_count"] for r in replies[:2]] == [1, 2]
    reply, _ = execute(kc, "%echo y")
    assert reply["content"]["execution_count"] == 3


def test_cell_sent_after_error_reply_and_idle_runs(kernel):
    """One cell at a time (as nbclient or an autograder runs them): after a failed cell's reply
    and idle status, nothing is queued, so the next cell must run, never be aborted."""
    km, kc = kernel
    statuses_seen = []
    for _ in range(100):
        bad, _ = execute(kc, "%nosuchmagic")
        assert bad["content"]["status"] == "error"
        good, _ = execute(kc, "%echo next")
        statuses_seen.append(good["content"]["status"])
    assert statuses_seen.count("aborted") == 0, \
        f"{statuses_seen.count('aborted')} of 100 cells sent after the error's reply and idle were aborted"


def test_request_sent_after_the_abort_replies_runs(kernel):
    """Only requests queued when the cell failed are aborted: one sent after the client got
    every earlier reply was not queued then and must run. (A race: repeated to catch it.)"""
    km, kc = kernel
    wrongly_aborted = 0
    for _ in range(50):
        failing, queued = send_batch(kc, ["%nosuchmagic", "%echo queued"])
        get_reply(kc, failing)
        get_reply(kc, queued)
        later = kc.execute("%echo later")
        if get_reply(kc, later)["content"]["status"] == "aborted":
            wrongly_aborted += 1
    assert wrongly_aborted == 0, \
        f"{wrongly_aborted} of 50 requests sent after the abort replies were aborted"


def test_stop_on_error_false_does_not_abort(kernel):
    km, kc = kernel
    ids = [kc.execute("%nosuchmagic", stop_on_error=False), kc.execute("%echo still runs")]
    replies = replies_in_order(kc, ids)
    assert [r["content"]["status"] for r in replies] == ["error", "ok"]
    msgs = collect_iopub(kc, ids[1])
    assert streams(msgs) == ["still runs\n"]


def test_successful_cell_does_not_abort_queue(kernel):
    km, kc = kernel
    ids = send_batch(kc, ["%echo a", "%echo b", "%echo c"])
    assert [r["content"]["status"] for r in replies_in_order(kc, ids)] == ["ok"] * 3


def test_non_execute_requests_queued_after_error_are_answered(kernel):
    km, kc = kernel
    bad = kc.execute("%nosuchmagic")
    info = kc.kernel_info()
    assert get_reply(kc, bad)["content"]["status"] == "error"
    reply = get_reply(kc, info)
    assert reply["msg_type"] == "kernel_info_reply" and reply["content"]["status"] == "ok"


# ---- the device worker ----

def test_device_runs_in_worker_child(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%device", timeout=30)
    assert reply["content"]["status"] == "ok", reply["content"]
    results = only(msgs, "execute_result")
    assert len(results) == 1
    doc = results[0]["content"]["data"]["application/vnd.cudalab.result+json"]
    assert doc["magic"] == "device"
    assert doc["backend"] in ("cpu", "cuda")
    workers = [p for p in kernel_children(kernel.pid) if p.cmdline()[1:] == ["--worker", "3"]]
    assert len(workers) == 1, [p.cmdline() for p in kernel_children(kernel.pid)]
    assert workers[0].ppid() == kernel.pid


@pytest.mark.skipif(gpu_visible(), reason="a GPU is visible: the CPU fallback is not what runs here")
def test_device_without_gpu_reports_cpu_backend_and_why(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%device", timeout=30)
    doc = only(msgs, "execute_result")[0]["content"]["data"]["application/vnd.cudalab.result+json"]
    assert doc["backend"] == "cpu"
    assert isinstance(doc["backend_note"], str) and doc["backend_note"].strip(), doc
    if not driver_installed() and "not built" not in doc["backend_note"]:     # a CPU-only build says so
        # not the CUDA runtime's "CUDA driver version is insufficient", which sends a student to update a
        # driver the machine does not have
        assert doc["backend_note"] == "no NVIDIA driver on this machine: libcuda.so.1 is not installed", doc


def driver_installed() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_worker_process_is_started_with_the_kernel(kernel):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        workers = [p for p in kernel_children(kernel.pid) if "--worker" in p.cmdline()]
        if workers:
            break
        time.sleep(0.05)
    assert len(workers) == 1
    assert workers[0].status() != psutil.STATUS_ZOMBIE


def test_execute_request_without_code_is_an_error_reply(kernel, raw):
    msg_id = raw.request("shell", "execute_request", {"silent": False})
    reply = raw.reply("shell", msg_id, TIMEOUT)
    assert reply["msg_type"] == "execute_reply"
    assert reply["content"]["status"] == "error"
    km, kc = kernel
    r, _ = execute(kc, "%echo ok")
    assert r["content"]["status"] == "ok"


# ---- volume and odd characters ----

def test_unicode_round_trips(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%echo héllo wörld 🚀 \u4e2d\u6587")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs) == ["héllo wörld 🚀 \u4e2d\u6587\n"]


def test_code_with_nul_character_is_answered(kernel):
    """"\\u0000" is valid JSON: the request must get a reply (ok or error), not silence,
    or the frontend waits for it forever."""
    km, kc = kernel
    reply, msgs = execute(kc, "%echo a\u0000b", timeout=5)
    assert reply["content"]["status"] in ("ok", "error")


def test_many_outputs_reach_a_slow_client(kernel, raw):
    """A client that reads iopub only after the cell ends (a slow frontend) still gets every
    line of output, however the kernel batches it, and the idle status."""
    n = 20000
    raw.socket("iopub")
    assert raw.recv("iopub")["msg_type"] == "iopub_welcome"
    msg_id = raw.request("shell", "execute_request", {
        "code": "%echo x\n" * n, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    assert raw.reply("shell", msg_id, timeout=30)["content"]["status"] == "ok"
    time.sleep(1.0)
    mine = []
    while (m := raw.recv("iopub", 1.0)) is not None:
        if m["parent_header"].get("msg_id") == msg_id:
            mine.append(m)
    text = "".join(m["content"]["text"] for m in mine if m["msg_type"] == "stream")
    idle = [m for m in mine if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"]
    assert text.count("x\n") == n and idle, \
        f"the client got {text.count('x')} of {n} lines and {len(idle)} idle status"
