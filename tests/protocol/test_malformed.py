"""Malformed frames and unknown message types: dropped or ignored, and the kernel keeps answering."""
from __future__ import annotations

import json

import pytest

from conftest import DELIM, Raw, execute, request, streams


def signed(raw: Raw, header, parent=b"{}", metadata=b"{}", content=b"{}", ids=()) -> list[bytes]:
    """A message whose JSON frames are exactly these bytes, correctly signed."""
    parts = [raw.dumps(header), raw.dumps(parent), raw.dumps(metadata), raw.dumps(content)]
    return [*ids, DELIM, raw.sign(parts), *parts]


def malformed_cases(raw: Raw) -> dict[str, list[bytes]]:
    h = raw.header("kernel_info_request")
    full = raw.frames("kernel_info_request")
    d = full.index(DELIM)
    no_type = {k: v for k, v in h.items() if k != "msg_type"}
    no_id = {k: v for k, v in raw.header("kernel_info_request").items() if k != "msg_id"}
    return {
        "no-delimiter": full[d + 1:],
        "too-few-frames": full[:d + 5],
        "delimiter-only": [DELIM],
        "one-empty-frame": [b""],
        "non-json-header": signed(raw, b"this is not json"),
        "non-json-content": signed(raw, h, content=b"{'single': 'quotes'}"),
        "trailing-garbage": signed(raw, h, content=b"{} x"),
        "invalid-utf8": signed(raw, h, content=b'{"code": "\xff\xfe"}'),
        "invalid-utf8-header": signed(raw, b'{"msg_id": "\xc3\x28", "msg_type": "kernel_info_request",'
                                           b' "session": "s", "username": "u", "version": "5.3", "date": ""}'),
        "array-header": signed(raw, b"[]"),
        "array-content": signed(raw, h, content=b'["kernel_info_request"]'),
        "array-parent": signed(raw, h, parent=b"[1, 2]"),
        "string-metadata": signed(raw, h, metadata=b'"meta"'),
        "null-content": signed(raw, h, content=b"null"),
        "header-without-msg_type": signed(raw, no_type),
        "header-empty-msg_type": signed(raw, {**h, "msg_type": ""}),
        "header-msg_type-number": signed(raw, {**h, "msg_type": 7}),
        "header-without-msg_id": signed(raw, no_id),
        "version-4": signed(raw, {**raw.header("kernel_info_request"), "version": "4.1"}),
        "version-6": signed(raw, {**raw.header("kernel_info_request"), "version": "6.0"}),
        "version-number": signed(raw, {**raw.header("kernel_info_request"), "version": 5.3}),
        "version-55": signed(raw, {**raw.header("kernel_info_request"), "version": "55.0"}),
        "empty-frames": [DELIM, raw.sign([b"", b"", b"", b""]), b"", b"", b"", b""],
    }


CASES = ["no-delimiter", "too-few-frames", "delimiter-only", "one-empty-frame", "non-json-header",
         "non-json-content", "trailing-garbage", "invalid-utf8", "invalid-utf8-header", "array-header",
         "array-content", "array-parent", "string-metadata", "null-content", "header-without-msg_type",
         "header-empty-msg_type", "header-msg_type-number", "header-without-msg_id", "version-4",
         "version-6", "version-number", "version-55", "empty-frames"]


def assert_alive(kernel, raw: Raw) -> None:
    """kernel_info answered on shell and control, heartbeat echoed, a cell still runs."""
    for channel in ("shell", "control"):
        msg_id = raw.request(channel, "kernel_info_request")
        assert raw.reply(channel, msg_id)["msg_type"] == "kernel_info_reply"
    assert raw.heartbeat(b"still there?") == b"still there?"
    km, kc = kernel
    reply, msgs = execute(kc, "%echo alive")
    assert reply["content"]["status"] == "ok" and streams(msgs) == ["alive\n"]
    assert km.is_alive()


@pytest.mark.parametrize("channel", ["shell", "control"])
@pytest.mark.parametrize("case", CASES)
def test_malformed_message_dropped(kernel, raw, channel, case):
    frames = malformed_cases(raw)[case]
    raw.send(channel, frames)
    good = raw.request(channel, "kernel_info_request")
    reply = raw.reply(channel, good)            # the first reply must be the good request's
    assert reply["msg_type"] == "kernel_info_reply"
    assert raw.silent(channel) is None
    dropped = kernel.log.lines(f"dropped {channel} message")
    assert len(dropped) == 1, f"{case}: expected one 'dropped {channel} message' log line, got " \
                              f"{kernel.log.lines()}"
    assert_alive(kernel, raw)


def test_many_malformed_messages_in_a_row(kernel, raw):
    cases = malformed_cases(raw)
    for frames in cases.values():
        raw.send("shell", frames)
        raw.send("control", frames)
    assert_alive(kernel, raw)
    assert len(kernel.log.lines("dropped shell message")) == len(cases)
    assert len(kernel.log.lines("dropped control message")) == len(cases)


def test_too_many_frames_dropped(kernel, raw):
    frames = raw.frames("kernel_info_request", buffers=[b"x"] * 5000)
    raw.send("shell", frames)
    good = raw.request("shell", "kernel_info_request")
    raw.reply("shell", good)
    assert raw.silent("shell") is None
    assert len(kernel.log.lines("dropped shell message")) == 1
    assert_alive(kernel, raw)


def test_garbage_on_stdin(kernel, raw):
    raw.send("stdin", [b"garbage"])
    raw.send("stdin", raw.frames("input_reply", {"value": "unasked"}))
    raw.send("stdin", [DELIM, b"bad", b"{}"])
    assert_alive(kernel, raw)


def test_multipart_heartbeat_echoed_whole(kernel, raw):
    """The heartbeat echoes the message it got, every part of it (as ipykernel's zmq device does)."""
    s = raw.socket("hb")
    s.send_multipart([b"multi", b"part", b"ping"])
    assert s.poll(2000), "no heartbeat answer"
    assert s.recv_multipart() == [b"multi", b"part", b"ping"]
    assert_alive(kernel, raw)


def test_binary_heartbeat_echoed_exactly(raw):
    # up to 4 KiB a frame (HEARTBEAT_MAX_BYTES): pings are a few bytes, and a peer must not
    # make the kernel hold memory through its heartbeat (test_hostile_kernel.py)
    for payload in (b"", b"\x00\xff\x00binary", b"x" * 4096):
        assert raw.heartbeat(payload) == payload


def test_extra_buffers_are_accepted(kernel, raw):
    msg_id = raw.request("shell", "kernel_info_request", buffers=[b"\x00\x01", b"more"])
    assert raw.reply("shell", msg_id)["msg_type"] == "kernel_info_reply"
    assert kernel.log.lines("dropped") == []


def test_routing_ids_are_echoed(raw):
    """Extra identities before the delimiter come back in front of the reply."""
    msg_id = raw.request("shell", "kernel_info_request", ids=[b"hop-1", b"hop-2"])
    reply = raw.reply("shell", msg_id)
    assert reply["ids"] == [b"hop-1", b"hop-2"]


def test_missing_header_version_is_accepted(kernel, raw):
    h = {k: v for k, v in raw.header("kernel_info_request").items() if k != "version"}
    msg_id = h["msg_id"]
    raw.send("shell", raw.frames(header=h))
    assert raw.reply("shell", msg_id)["msg_type"] == "kernel_info_reply"


def test_header_version_5_0_accepted(raw):
    h = raw.header("kernel_info_request", version="5.0")
    raw.send("shell", raw.frames(header=h))
    assert raw.reply("shell", h["msg_id"])["msg_type"] == "kernel_info_reply"


# ---- unknown message types ----

@pytest.mark.parametrize("channel", ["shell", "control"])
@pytest.mark.parametrize("msg_type", ["no_such_request", "execute_reply", "input_request", "x" * 300])
def test_unknown_message_type_no_reply_no_crash(kernel, raw, channel, msg_type):
    raw.send(channel, raw.frames(msg_type, {"anything": [1, 2, 3]}))
    good = raw.request(channel, "kernel_info_request")
    assert raw.reply(channel, good)["msg_type"] == "kernel_info_reply"
    assert raw.silent(channel) is None
    assert_alive(kernel, raw)


def test_unknown_type_logged_and_has_no_status(kernel, raw):
    raw.socket("iopub")
    welcome = raw.recv("iopub")
    assert welcome is not None and welcome["msg_type"] == "iopub_welcome"
    frames = raw.frames("frobnicate_request")
    raw.send("shell", frames)
    good = raw.request("shell", "kernel_info_request")
    raw.reply("shell", good)
    assert kernel.log.wait_for("frobnicate_request"), kernel.log.lines()
    seen = []
    while (m := raw.recv("iopub", 0.3)) is not None:
        seen.append(m["parent_header"].get("msg_id"))
    assert raw.msg_id(frames) not in seen


@pytest.mark.parametrize("msg_type", ["comm_msg", "comm_close"])
def test_comm_msg_and_close_ignored(kernel, raw, msg_type):
    raw.send("shell", raw.frames(msg_type, {"comm_id": "nope", "data": {}}))
    good = raw.request("shell", "kernel_info_request")
    assert raw.reply("shell", good)["msg_type"] == "kernel_info_reply"
    assert raw.silent("shell") is None
    assert_alive(kernel, raw)


def test_comm_open_without_id_no_crash(kernel, raw):
    raw.send("shell", raw.frames("comm_open", {"target_name": "t", "data": {}}))
    assert_alive(kernel, raw)


@pytest.mark.parametrize("content", [{"code": 42}, {"code": None}, {"code": ["%echo"]},
                                     {"code": "%echo x", "silent": "yes", "store_history": 3}])
def test_execute_with_odd_field_types(kernel, raw, content):
    msg_id = raw.request("shell", "execute_request", content)
    reply = raw.reply("shell", msg_id)
    assert reply["msg_type"] == "execute_reply"
    assert reply["content"]["status"] in ("ok", "error")
    assert_alive(kernel, raw)


@pytest.mark.parametrize("msg_type,content", [
    ("complete_request", {"code": 1, "cursor_pos": "x"}),
    ("complete_request", {"code": "%ec", "cursor_pos": 10_000}),
    ("complete_request", {"code": "%ec", "cursor_pos": -5}),
    ("inspect_request", {"code": None, "cursor_pos": 2**40}),
    ("is_complete_request", {}),
    ("history_request", {"hist_access_type": "search", "pattern": 5, "n": "ten"}),
    ("history_request", {"hist_access_type": "range", "start": -3, "stop": 2**40}),
])
def test_odd_request_contents_answered(kernel, raw, msg_type, content):
    msg_id = raw.request("shell", msg_type, content)
    reply = raw.reply("shell", msg_id)
    assert reply["msg_type"] == msg_type.replace("_request", "_reply")
    assert_alive(kernel, raw)


def test_jupyter_client_still_fine_after_garbage(kernel, raw):
    """The kernel's state is not disturbed: jupyter_client's session still works after garbage."""
    for frames in malformed_cases(raw).values():
        raw.send("shell", frames)
    km, kc = kernel
    reply, _ = request(kc, "kernel_info_request")
    assert reply["content"]["status"] == "ok"
    assert json.dumps(reply["content"])
