"""HMAC-SHA256 signatures: good ones answered, bad or replayed ones dropped with one log line.

Replays are refused whatever came in between (kernel/proto/replay.h): by signature while it is
remembered, then by date, on the clock each client session started with."""
from __future__ import annotations

import hashlib
import hmac
import time
from datetime import datetime, timedelta, timezone

import jupyter_client.session
import pytest
import zmq
from jupyter_client import BlockingKernelClient

from conftest import (TIMEOUT, HeartbeatMonitor, Raw, execute, kernel_conn, raw_for, streams,
                      wait_ready)

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


# ---- replays after many messages, dates and client clocks (issue 11, item 6) ----

EXECUTE = {"silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
           "stop_on_error": True}
FLOOD = 17000                   # more signatures than the kernel keeps (16,384)
BATCH = 500                     # under the kernel's send queue per peer (ZeroMQ's 1000)


def pipe(raw: Raw) -> zmq.Socket:
    """A shell DEALER of raw's session that queues without limit both ways, for pipelined sends."""
    s = raw.ctx.socket(zmq.DEALER)
    s.linger = 0
    s.sndhwm = s.rcvhwm = 0
    s.connect(raw.url("shell"))
    return s


def replies_until(raw: Raw, s: zmq.Socket, msg_id: str) -> list[dict]:
    """Every reply on s up to and including the one to msg_id."""
    got = []
    while True:
        assert s.poll(int(TIMEOUT * 1000)), f"no reply to {msg_id}; {len(got)} replies before"
        got.append(raw.parse(s.recv_multipart()))
        if got[-1]["parent_header"].get("msg_id") == msg_id:
            return got


def log_reasons(kernel) -> list[str]:
    return [l.split("] ", 1)[1] for l in kernel.log.lines("dropped")]


@pytest.mark.timeout(300)
@pytest.mark.serial              # a heartbeat stall bounded in wall-clock time
def test_old_execute_replayed_after_17000_messages_is_dropped(kernel, raw):
    s = pipe(raw)
    with HeartbeatMonitor(kernel_conn(kernel)) as hb:
        old = raw.frames("execute_request", {"code": "%echo once", **EXECUTE})
        s.send_multipart(old)
        first = replies_until(raw, s, raw.msg_id(old))[-1]
        assert first["content"]["execution_count"] == 1
        replies = []
        # in batches the kernel's send queue holds: a ROUTER drops what a peer does
        # not read fast enough (a loaded 2-core CI machine lost 380 of 17,000)
        for start in range(0, FLOOD + 1, BATCH):
            for _ in range(start, min(start + BATCH, FLOOD + 1)):
                s.send_multipart(mark := raw.frames("kernel_info_request"))
            replies += replies_until(raw, s, raw.msg_id(mark))
        assert len(replies) == FLOOD + 1 and {r["msg_type"] for r in replies} == {"kernel_info_reply"}

        s.send_multipart(old)                           # byte for byte
        fresh = raw.frames("execute_request", {"code": "%echo fresh", **EXECUTE})
        s.send_multipart(fresh)
        after = replies_until(raw, s, raw.msg_id(fresh))
    hb.check(0.5)
    assert len(after) == 1, "the replayed execute_request was answered"
    assert after[0]["content"]["status"] == "ok" and after[0]["content"]["execution_count"] == 2
    assert log_reasons(kernel) == ["dropped shell message: dated no later than a forgotten message of "
                                   "its session (over 16384 signatures in the replay window; replayed "
                                   "message)"]


@pytest.mark.serial              # a heartbeat stall bounded in wall-clock time
def test_message_dated_far_in_the_past_is_dropped(kernel, raw):
    with HeartbeatMonitor(kernel_conn(kernel)) as hb:
        first = raw.request("shell", "kernel_info_request")          # the session starts, sane date
        raw.reply("shell", first)
        day_old = (datetime.now(timezone.utc) - timedelta(days=1)).isoformat().replace("+00:00", "Z")
        raw.request("shell", "execute_request", {"code": "%echo old", **EXECUTE},
                    header=raw.header("execute_request", date=day_old))
        raw.request("control", "kernel_info_request",
                    header=raw.header("kernel_info_request", date=day_old))
        assert raw.silent("shell") is None and raw.silent("control") is None
        fresh = raw.request("shell", "execute_request", {"code": "%echo now", **EXECUTE})
        reply = raw.reply("shell", fresh)
    hb.check(0.5)
    assert reply["content"]["execution_count"] == 1, "the day-old execute_request ran"
    window = "older than the 600 s replay window on its session's clock (replayed, or the client's " \
             "clock was set back)"
    # shell and control are separate sockets: the kernel may read either message first
    assert sorted(log_reasons(kernel)) == [f"dropped control message: {window}", f"dropped shell message: {window}"]


@pytest.mark.serial              # a heartbeat stall bounded in wall-clock time
def test_signed_message_without_a_date_is_dropped(kernel, raw):
    with HeartbeatMonitor(kernel_conn(kernel)) as hb:
        for date in (None, "", "yesterday", 1700000000):
            raw.request("shell", "kernel_info_request", header=raw.header("kernel_info_request", date=date))
        good = raw.request("shell", "kernel_info_request")
        raw.reply("shell", good)                     # the first reply is the dated one's
        assert raw.silent("shell") is None
    hb.check(0.5)
    assert log_reasons(kernel) == ["dropped shell message: signed message without a parsable header "
                                   "date (needed to refuse replays)"] * 4


@pytest.mark.serial              # a heartbeat stall bounded in wall-clock time
def test_client_two_hours_behind_works(kernel, monkeypatch):
    """The client's clock is learned from its session's first message, not trusted as absolute."""
    km, _ = kernel
    real = jupyter_client.session.utcnow
    monkeypatch.setattr(jupyter_client.session, "utcnow", lambda: real() - timedelta(hours=2))
    kc = BlockingKernelClient()
    kc.load_connection_info(km.get_connection_info())     # a session of its own
    kc.start_channels()
    try:
        with HeartbeatMonitor(kernel_conn(kernel)) as hb:
            wait_ready(kc, kernel.log)
            for i in range(3):
                reply, msgs = execute(kc, f"%echo slow {i}")
                assert reply["content"]["status"] == "ok" and streams(msgs) == [f"slow {i}\n"]
            time.sleep(4 * hb.period)       # a few pings: the monitor's count is read when it stops
        hb.check(0.5)
    finally:
        kc.stop_channels()
    assert kernel.log.lines("dropped") == []
