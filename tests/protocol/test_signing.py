"""HMAC-SHA256 signatures: good ones answered, bad or replayed ones dropped with one log line."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from conftest import TIMEOUT, Raw, execute, raw_for, streams

CHANNELS = ["shell", "control"]


def wait_welcome(raw: Raw, timeout: float = TIMEOUT) -> None:
    """Subscribes raw's iopub socket and waits for its iopub_welcome, so nothing after is missed."""
    raw.socket("iopub")
    msg = raw.recv("iopub", timeout)
    assert msg is not None and msg["msg_type"] == "iopub_welcome", msg


def drain(raw: Raw, channel: str, timeout: float = 0.2) -> list[dict]:
    got = []
    while (m := raw.recv(channel, timeout)) is not None:
        got.append(m)
    return got


def bad_signatures(raw: Raw):
    """(name, frames, the log's reason) for one kernel_info_request each."""
    other = Raw({"key": b"not-the-kernel-key"})
    good = raw.frames("kernel_info_request")
    d = good.index(b"<IDS|MSG>")
    tampered = list(good)
    tampered[d + 5] = b'{"tampered": true}'
    return [
        ("other key", other.frames("kernel_info_request"), "wrong signature"),
        ("tampered content", tampered, "wrong signature"),
        ("zero signature", raw.frames(signature=b"0" * 64), "wrong signature"),
        ("uppercase hex", [*good[:d + 1], good[d + 1].upper(), *good[d + 2:]], "wrong signature"),
        ("truncated", raw.frames(signature=raw.frames()[d + 1][:-2]), "signature of wrong length"),
        ("too long", raw.frames(signature=raw.frames()[d + 1] + b"00"), "signature of wrong length"),
        ("missing", raw.frames(signature=b""), "missing signature"),
    ]


def test_signed_request_gets_signed_reply(raw):
    for channel in CHANNELS:
        msg_id = raw.request(channel, "kernel_info_request")
        reply = raw.reply(channel, msg_id)          # raw.parse checks the kernel's signature
        assert reply["msg_type"] == "kernel_info_reply"
        assert len(reply["signature"]) == 64


def test_iopub_messages_are_signed(raw):
    wait_welcome(raw)
    msg_id = raw.request("shell", "kernel_info_request")
    raw.reply("shell", msg_id)
    msgs = drain(raw, "iopub")
    assert [m["content"]["execution_state"] for m in msgs if m["msg_type"] == "status"] == ["busy", "idle"]


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("case", range(7), ids=["other-key", "tampered", "zero", "uppercase",
                                                 "truncated", "too-long", "missing"])
def test_bad_signature_dropped_with_one_log_line(kernel, raw, channel, case):
    name, frames, why = bad_signatures(raw)[case]
    wait_welcome(raw)
    raw.send(channel, frames)
    good = raw.request(channel, "kernel_info_request")
    # messages on one socket are handled in order: the first reply must be the good one's
    reply = raw.reply(channel, good)
    assert reply["msg_type"] == "kernel_info_reply"
    assert raw.silent(channel) is None
    lines = kernel.log.lines("dropped")
    assert lines == kernel.log.lines(f"dropped {channel} message: {why}") and len(lines) == 1, \
        f"{name}: expected one log line 'dropped {channel} message: {why}', got {lines}"
    # no busy/idle for the dropped message: only the good request's pair
    iopub = drain(raw, "iopub")
    parents = {m["parent_header"].get("msg_id") for m in iopub}
    assert parents == {good}, [(m["msg_type"], m["parent_header"].get("msg_id")) for m in iopub]


def test_each_drop_logs_exactly_one_line(kernel, raw):
    bad = bad_signatures(raw)
    for _, frames, _ in bad:
        raw.send("shell", frames)
    good = raw.request("shell", "kernel_info_request")
    raw.reply("shell", good)
    lines = kernel.log.lines("dropped shell message")
    assert len(lines) == len(bad), lines
    assert len(kernel.log.lines("dropped")) == len(bad)


@pytest.mark.parametrize("channel", CHANNELS)
def test_replayed_message_dropped(kernel, raw, channel):
    frames = raw.frames("kernel_info_request")
    raw.send(channel, frames)
    raw.reply(channel, raw.msg_id(frames))
    raw.send(channel, frames)                       # the very same frames again
    good = raw.request(channel, "kernel_info_request")
    raw.reply(channel, good)
    assert raw.silent(channel) is None
    lines = kernel.log.lines("dropped")
    assert len(lines) == 1 and f"dropped {channel} message: duplicate signature" in lines[0], lines


def test_replay_on_another_channel_dropped(kernel, raw):
    frames = raw.frames("kernel_info_request")
    raw.send("shell", frames)
    raw.reply("shell", raw.msg_id(frames))
    raw.send("control", frames)
    good = raw.request("control", "kernel_info_request")
    raw.reply("control", good)
    assert len(kernel.log.lines("dropped control message: duplicate signature")) == 1


def test_replayed_execute_does_not_run_twice(kernel, raw):
    km, kc = kernel
    frames = raw.frames("execute_request", {"code": "%echo once", "silent": False,
                                            "store_history": True, "user_expressions": {},
                                            "allow_stdin": False, "stop_on_error": True})
    raw.send("shell", frames)
    first = raw.reply("shell", raw.msg_id(frames))
    assert first["content"]["status"] == "ok" and first["content"]["execution_count"] == 1
    raw.send("shell", frames)
    assert raw.silent("shell") is None
    reply, _ = execute(kc, "%echo next")
    assert reply["content"]["execution_count"] == 2, "the replayed execute ran"


def test_kernel_signature_matches_hmac_of_frames(raw):
    msg_id = raw.request("shell", "kernel_info_request")
    frames = raw.recv_frames("shell")
    d = frames.index(b"<IDS|MSG>")
    mac = hmac.new(raw.key, digestmod=hashlib.sha256)
    for part in frames[d + 2:d + 6]:
        mac.update(part)
    assert frames[d + 1] == mac.hexdigest().encode()
    assert raw.parse(frames)["parent_header"]["msg_id"] == msg_id


# ---- unsigned kernels (empty key) ----

def test_unsigned_kernel_works_with_jupyter_client(start_kernel):
    pair = start_kernel(key=b"")
    km, kc = pair
    assert km.session.key == b""
    reply, msgs = execute(kc, "%echo unsigned")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs) == ["unsigned\n"]
    assert pair.log.lines("dropped") == []


def test_unsigned_kernel_sends_empty_signatures(start_kernel):
    pair = start_kernel(key=b"")
    raw = raw_for(pair.km.get_connection_info())
    try:
        assert raw.key == b""
        for channel in CHANNELS:
            msg_id = raw.request(channel, "kernel_info_request")
            reply = raw.reply(channel, msg_id)
            assert reply["signature"] == b""
    finally:
        raw.close()


def test_unsigned_kernel_from_hand_written_connection_file(spawn_kernel):
    sk = spawn_kernel(key=b"")
    kc = sk.client()
    reply, msgs = execute(kc, "%echo hi")
    assert reply["content"]["status"] == "ok" and streams(msgs) == ["hi\n"]
