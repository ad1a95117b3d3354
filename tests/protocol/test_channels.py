"""Channels: iopub_welcome, status around every request, heartbeat, several clients, transports,
kernel_info and comms."""
from __future__ import annotations

import time

import psutil
import pytest
import zmq
from jupyter_client import BlockingKernelClient

from conftest import (SILENCE, TIMEOUT, assert_busy_idle, cli, collect_iopub, execute, get_reply,
                      no_message, raw_for, request, streams)


# ---- iopub_welcome (JEP 65) ----

def test_client_gets_iopub_welcome_for_its_subscription(kernel):
    km, _ = kernel
    kc = second_client(km)        # subscribes to "" (everything)
    try:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        assert msg["msg_type"] == "iopub_welcome"
        assert msg["content"] == {"subscription": ""}
        assert msg["parent_header"] == {}
    finally:
        kc.stop_channels()


def test_each_subscription_gets_its_own_welcome(raw):
    sub = raw.ctx.socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"kernel.")
    sub.connect(raw.url("iopub"))
    assert sub.poll(int(TIMEOUT * 1000)), "no iopub_welcome for topic 'kernel.'"
    msg = raw.parse(sub.recv_multipart())
    assert msg["msg_type"] == "iopub_welcome"
    assert msg["content"]["subscription"] == "kernel."
    # a second topic on the same socket: a second welcome
    sub.setsockopt(zmq.SUBSCRIBE, b"kernel.x")
    assert sub.poll(int(TIMEOUT * 1000))
    topics = {raw.parse(sub.recv_multipart())["content"]["subscription"]}
    while sub.poll(200):
        topics.add(raw.parse(sub.recv_multipart())["content"]["subscription"])
    assert "kernel.x" in topics
    sub.close(0)


def test_welcome_topic_frame_and_signature(raw):
    raw.socket("iopub")
    frames = raw.recv_frames("iopub")
    assert frames is not None
    assert frames[0].startswith(b"kernel.") and frames[0].endswith(b".iopub_welcome"), frames[0]
    msg = raw.parse(frames)
    assert msg["header"]["version"].startswith("5.")


def test_iopub_topics_name_the_message_type(kernel, raw):
    kc = kernel.kc
    raw.socket("iopub")
    raw.recv("iopub")                     # welcome
    execute(kc, "%echo topic")
    seen = []
    while (frames := raw.recv_frames("iopub", 0.3)) is not None:
        seen.append((frames[0], raw.parse(frames)["msg_type"]))
    assert seen
    for topic, msg_type in seen:
        assert topic.endswith(b"." + msg_type.encode()), (topic, msg_type)


# ---- status busy/idle around every request ----

SHELL_REQUESTS = [
    ("kernel_info_request", {}),
    ("complete_request", {"code": "%ec", "cursor_pos": 3}),
    ("inspect_request", {"code": "%echo", "cursor_pos": 5, "detail_level": 0}),
    ("is_complete_request", {"code": "%echo hi"}),
    ("history_request", {"output": False, "raw": True, "hist_access_type": "tail", "n": 5}),
    ("comm_info_request", {}),
    ("execute_request", {"code": "%echo hi", "silent": False, "store_history": True,
                         "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}),
    ("execute_request", {"code": "%nosuchmagic", "silent": False, "store_history": True,
                         "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}),
    ("execute_request", {"code": "%device", "silent": False, "store_history": True,
                         "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}),
]


@pytest.mark.parametrize("msg_type,content", SHELL_REQUESTS,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(SHELL_REQUESTS)])
def test_shell_request_status_busy_first_idle_last(kernel, msg_type, content):
    km, kc = kernel
    reply, msgs = request(kc, msg_type, content, timeout=30)
    assert reply["msg_type"] == msg_type.replace("_request", "_reply")
    assert_busy_idle(msgs, reply["parent_header"]["msg_id"])


@pytest.mark.parametrize("msg_type,content", [("kernel_info_request", {}), ("interrupt_request", {})])
def test_control_request_status_busy_first_idle_last(kernel, msg_type, content):
    km, kc = kernel
    reply, msgs = request(kc, msg_type, content, channel="control")
    assert reply["msg_type"] == msg_type.replace("_request", "_reply")
    assert reply["content"]["status"] == "ok"
    assert_busy_idle(msgs, reply["parent_header"]["msg_id"])


def test_comm_open_answered_with_comm_close(kernel):
    km, kc = kernel
    reply_less = kc.session.msg("comm_open", {"comm_id": "c0ffee", "target_name": "jupyter.widget",
                                              "data": {}})
    kc.shell_channel.send(reply_less)
    msgs = collect_iopub(kc, reply_less["header"]["msg_id"])
    closes = [m for m in msgs if m["msg_type"] == "comm_close"]
    assert len(closes) == 1, [m["msg_type"] for m in msgs]
    assert closes[0]["content"]["comm_id"] == "c0ffee"
    assert_busy_idle(msgs, reply_less["header"]["msg_id"])
    assert no_message(kc.get_shell_msg) is None, "comm_open must have no shell reply"


def test_comm_info_is_empty(kernel):
    km, kc = kernel
    for content in ({}, {"target_name": "jupyter.widget"}):
        reply, _ = request(kc, "comm_info_request", content)
        assert reply["content"]["status"] == "ok"
        assert reply["content"]["comms"] == {}


def test_comm_info_after_comm_open_still_empty(kernel):
    km, kc = kernel
    kc.shell_channel.send(kc.session.msg("comm_open", {"comm_id": "abc", "target_name": "t", "data": {}}))
    reply, _ = request(kc, "comm_info_request", {})
    assert reply["content"]["comms"] == {}


# ---- kernel_info ----

@pytest.mark.parametrize("channel", ["shell", "control"])
def test_kernel_info(kernel, channel):
    km, kc = kernel
    reply, _ = request(kc, "kernel_info_request", {}, channel=channel)
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["protocol_version"] == "5.3"
    assert c["implementation"] == "cudalab"
    assert isinstance(c["implementation_version"], str) and c["implementation_version"]
    assert c["language_info"]["name"] == "cudalab"
    assert c["language_info"]["file_extension"] == ".cudalab"
    assert c["language_info"]["mimetype"] == "text/x-cudalab"
    assert c["language_info"]["pygments_lexer"] == "cudalab"      # python/cudalab/lexer.py
    assert c["language_info"]["codemirror_mode"] == "shell"
    links = c["help_links"]
    assert links and all(set(l) == {"text", "url"} and l["url"].startswith("https://") for l in links)
    assert "CUDA C++ Programming Guide" in [l["text"] for l in links]
    assert isinstance(c["banner"], str)
    assert reply["header"]["version"] == "5.3"
    assert reply["header"]["msg_type"] == "kernel_info_reply"


def test_reply_headers_are_complete(kernel):
    km, kc = kernel
    reply, msgs = execute(kc, "%help")
    for m in [reply, *msgs]:
        h = m["header"]
        for key in ("msg_id", "session", "username", "date", "msg_type", "version"):
            assert key in h, f"{m['msg_type']} header lacks {key}"
        assert h["version"].startswith("5.")
    ids = [m["header"]["msg_id"] for m in [reply, *msgs]]
    assert len(set(ids)) == len(ids), "msg_ids are not unique"
    sessions = {m["header"]["session"] for m in [reply, *msgs]}
    assert len(sessions) == 1, "the kernel changed its session id"


# ---- heartbeat ----

def test_heartbeat_echoes(raw):
    for i in range(50):
        payload = f"ping {i}".encode()
        assert raw.heartbeat(payload) == payload


def test_jupyter_client_heartbeat_beats(kernel):
    km, kc = kernel
    kc.hb_channel.time_to_dead = 0.5
    time.sleep(1.5)
    assert kc.hb_channel.is_beating()
    assert kc.is_alive()


def test_heartbeat_and_control_answer_while_a_cell_runs(kernel, raw):
    """The loop serves control and heartbeat while a worker command is in flight."""
    kc = kernel.kc
    ids = [kc.execute("%device") for _ in range(5)]
    assert raw.heartbeat(b"during") == b"during"
    msg_id = raw.request("control", "kernel_info_request")
    assert raw.reply("control", msg_id)["msg_type"] == "kernel_info_reply"
    for i in ids:
        assert get_reply(kc, i, timeout=30)["content"]["status"] == "ok"


# ---- two clients on one kernel ----

def second_client(km):
    """A client with its own Session (km.client() would share km's, and with it the
    replay history, so the second client would refuse every iopub message the first one saw)."""
    kc = BlockingKernelClient()
    kc.load_connection_info(km.get_connection_info())
    kc.start_channels()
    return kc


def test_two_clients_share_iopub_reply_goes_to_requester(kernel):
    km, kc1 = kernel
    kc2 = second_client(km)
    try:
        welcome = kc2.get_iopub_msg(timeout=TIMEOUT)
        assert welcome["msg_type"] == "iopub_welcome"
        # kc1 got a welcome too (every subscriber sees every welcome); drop iopub leftovers
        while no_message(kc1.get_iopub_msg, 0.2) is not None:
            pass
        reply, msgs1 = execute(kc1, "%echo shared")
        msgs2 = collect_iopub(kc2, reply["parent_header"]["msg_id"])
        assert streams(msgs1) == streams(msgs2) == ["shared\n"]
        assert [m["msg_type"] for m in msgs1] == [m["msg_type"] for m in msgs2]
        assert no_message(kc2.get_shell_msg, SILENCE) is None, "kc2 got kc1's reply"
        # and the other way round
        reply2, msgs2 = execute(kc2, "%echo back")
        msgs1 = collect_iopub(kc1, reply2["parent_header"]["msg_id"])
        assert streams(msgs1) == ["back\n"]
        assert no_message(kc1.get_shell_msg, SILENCE) is None, "kc1 got kc2's reply"
        assert reply2["content"]["execution_count"] == reply["content"]["execution_count"] + 1
    finally:
        kc2.stop_channels()


def test_two_clients_control_replies_go_to_requester(kernel):
    km, kc1 = kernel
    kc2 = second_client(km)
    try:
        msg = kc2.session.msg("kernel_info_request", {})
        kc2.control_channel.send(msg)
        reply = kc2.get_control_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
        assert no_message(kc1.get_control_msg, SILENCE) is None
    finally:
        kc2.stop_channels()


def test_raw_and_jupyter_client_interleaved(kernel, raw):
    km, kc = kernel
    a = raw.request("shell", "kernel_info_request")
    b = kc.kernel_info()
    assert raw.reply("shell", a)["msg_type"] == "kernel_info_reply"
    assert get_reply(kc, b)["msg_type"] == "kernel_info_reply"
    assert raw.silent("shell") is None


# ---- transports ----

def test_ipc_transport(spawn_kernel, tmp_path):
    sk = spawn_kernel(transport="ipc")
    kc = sk.client()
    reply, msgs = execute(kc, "%echo over ipc")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs) == ["over ipc\n"]
    for port in range(1, 6):
        assert (tmp_path / f"k0-{port}").exists(), f"no ipc socket file k0-{port}"
    raw = raw_for(sk.conn | {"key": sk.conn["key"].encode()})
    try:
        assert raw.heartbeat(b"ipc") == b"ipc"
        msg_id = raw.request("control", "kernel_info_request")
        assert raw.reply("control", msg_id)["msg_type"] == "kernel_info_reply"
    finally:
        raw.close()


def test_tcp_all_interfaces(spawn_kernel):
    sk = spawn_kernel(ip="0.0.0.0")
    kc = sk.client(connect_ip="127.0.0.1")
    reply, msgs = execute(kc, "%echo everywhere")
    assert reply["content"]["status"] == "ok" and streams(msgs) == ["everywhere\n"]
    listening = {(c.laddr.ip, c.laddr.port) for c in psutil.Process(sk.pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN}
    for name in ("shell", "iopub", "stdin", "control", "hb"):
        assert ("0.0.0.0", sk.conn[f"{name}_port"]) in listening, (name, listening)


def test_tcp_loopback_binds_loopback_only(spawn_kernel):
    sk = spawn_kernel(ip="127.0.0.1")
    sk.client()
    listening = {(c.laddr.ip, c.laddr.port) for c in psutil.Process(sk.pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN}
    for name in ("shell", "iopub", "stdin", "control", "hb"):
        assert ("127.0.0.1", sk.conn[f"{name}_port"]) in listening


def test_bad_connection_file_fails_cleanly(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = cli("-f", str(bad), timeout=10)
    assert r.returncode != 0
    assert "connection file" in r.stderr
    r = cli("-f", str(tmp_path / "missing.json"), timeout=10)
    assert r.returncode != 0 and "connection file" in r.stderr


# ---- "starting" ----

def test_starting_status_at_most_once_and_first(spawn_kernel):
    """status "starting" goes out once, at start, before anything else the kernel publishes.

    A subscriber connected before the kernel binds usually still misses it (it is published
    right after the bind, before any subscription can arrive), so this checks what can be seen:
    never twice, never after the kernel has started answering, never on a worker restart."""
    sk = spawn_kernel()
    raw = raw_for(sk.conn | {"key": sk.conn["key"].encode()})
    try:
        sub = raw.ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.setsockopt(zmq.RECONNECT_IVL, 1)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(raw.url("iopub"))
        kc = sk.client()
        execute(kc, "%echo a\n%device", timeout=30)
        request(kc, "interrupt_request", {}, channel="control")
        execute(kc, "%device", timeout=30)
        seen = []
        while sub.poll(300):
            seen.append(raw.parse(sub.recv_multipart()))
        states = [m["content"]["execution_state"] for m in seen if m["msg_type"] == "status"]
        assert states.count("starting") <= 1, states
        if "starting" in states:
            non_welcome = [m for m in seen if m["msg_type"] != "iopub_welcome"]
            assert non_welcome[0]["content"].get("execution_state") == "starting"
            assert non_welcome[0]["parent_header"] == {}
        assert "busy" in states and "idle" in states
    finally:
        raw.close()
