"""test_fuzz_live.py — a running kernel under a flood of random and mutated wire messages.

What it does: starts the kernel (the `kernel` fixture of conftest.py), opens raw pyzmq DEALER
sockets on shell, control and stdin, and sends at least CUDALAB_FUZZ_MESSAGES (default 100 000)
messages as fast as the kernel takes them, never waiting for a reply (replies are drained so no
high-water mark blocks either side), within CUDALAB_FUZZ_SECONDS (default 35). The kinds:

  signed           right key, a real msg_type, content of random values of random JSON types
  signed-type      right key, a random or near-miss msg_type (shutdown/interrupt mutated away)
  signed-header    right key, a header with missing fields or fields of the wrong type
  signed-utf8      right key, a JSON frame holding invalid UTF-8, NUL escapes, lone surrogates
  signed-truncated right key over a truncated JSON frame
  wrong-key        signed with another key
  unsigned         empty signature
  bad-signature    random hex, wrong length, upper case, a signature of other frames
  replayed         an earlier accepted message, byte for byte
  truncated        a valid message with frames cut off
  garbage          random frames, with or without a delimiter
  huge             a frame of 1 to 4 MiB (and, twice per run, a signed JSON frame over 64 MiB)
  many-frames      more parts than the kernel accepts in one message (4096)
  iopub-subscribe  raw subscription frames to the iopub XPUB from an XSUB socket: subscribe and
                   unsubscribe with random topics (invalid UTF-8 too), and frames of any shape

No signed message is a real shutdown_request or interrupt_request: those would end or disturb the
run on purpose. Then the kernel must still be there: alive, answering kernel_info on shell and on
control, echoing heartbeats, and running `%echo ok`. The counts per kind are printed (pytest -s)
and attached as the test's `messages_per_kind` property (junit XML).

Reproduce a failure with the seed it prints:  CUDALAB_FUZZ_SEED=1234 pytest -s tests/protocol/test_fuzz_live.py
(the same seed gives the same messages; only the kernel's key, so the signatures, and the timing differ).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import threading
import time
import uuid
from collections import Counter

import pytest
import zmq

from conftest import DELIM, Raw, execute, request, streams

MESSAGES = int(os.environ.get("CUDALAB_FUZZ_MESSAGES", "100000"))
BUDGET = float(os.environ.get("CUDALAB_FUZZ_SECONDS", "35"))
SEED = int(os.environ.get("CUDALAB_FUZZ_SEED") or random.SystemRandom().randrange(1 << 32))

SHELL_TYPES = ["kernel_info_request", "execute_request", "complete_request", "inspect_request",
               "is_complete_request", "history_request", "comm_info_request", "comm_open",
               "comm_msg", "comm_close"]
OTHER_TYPES = ["input_reply", "debug_request", "usage_request", "kernel_info_reply",
               "execute_reply", "status", "stream", "apply_request", "clear_request",
               "abort_request", "connect_request"]
FORBIDDEN = {"shutdown_request", "interrupt_request"}
# fields each request type reads, and values of the right type that still do little harm
FIELDS = {
    "execute_request": ["code", "silent", "store_history", "user_expressions", "allow_stdin",
                        "stop_on_error"],
    "complete_request": ["code", "cursor_pos"],
    "inspect_request": ["code", "cursor_pos", "detail_level"],
    "is_complete_request": ["code"],
    "history_request": ["output", "raw", "hist_access_type", "session", "start", "stop", "n",
                        "pattern", "unique"],
    "comm_info_request": ["target_name"],
    "comm_open": ["comm_id", "target_name", "data"],
    "comm_msg": ["comm_id", "data"],
    "comm_close": ["comm_id", "data"],
    "input_reply": ["value"],
    "shutdown_request": ["restart"],
}
# Code that parses and runs quickly: local magics, %device (the worker), and errors of every kind.
# Never magics that compute (%matmul, ...) nor %selftest: they would only slow the flood down.
CODE = ["%echo {w}", "%echo --stderr {w}", "%%echo {w}\n{w}", "%help", "%help {w}", "%{w}?", "?{w}",
        "%device", "%device --brief", "%device --index {i}", "%echo \"{w}", "%echo {w} \\",
        "{w}", "%{w} --{w}={i}", "%%{w}\n{w}", "%", "%%", "# {w}", "", "%echo {w}\n%nosuch {w}",
        "%help --{w}", "%echo \"{w}\" '{w}' --no-stderr"]
WORDS = ["ok", "x", "echo", "help", "device", "matmul", "--", "-n", "2^20", "64K", "1e999", "caf\u00e9",
         "\u65e5\u672c", "\U0001f680", "\u0000", "\\", "\"", "'", "#", "%", "\n", "\r\n", "\t",
         "a" * 300, "x" * 5000]


class Fuzzer:
    """Builds the messages. All randomness comes from one seeded Random."""

    def __init__(self, key: bytes, rng: random.Random):
        self.key, self.rng = key, rng
        self.session = f"{rng.getrandbits(128):032x}"
        self.accepted: list[list[bytes]] = []      # signed messages the kernel took, for replays
        self.n = 0

    # -- values

    def word(self) -> str:
        r = self.rng
        if r.random() < 0.7:
            return r.choice(WORDS)
        return "".join(chr(r.choice([r.randrange(32, 127), r.randrange(0x80, 0x800),
                                     r.randrange(0x800, 0xD800), r.randrange(0xE000, 0x110000)]))
                       for _ in range(r.randrange(0, 12)))

    def code(self) -> str:
        r = self.rng
        lines = [r.choice(CODE).format(w=self.word(), i=r.choice([0, 1, 63, 64, -1, 2 ** 62]))
                 for _ in range(r.choice([1, 1, 1, 2, 5]))]
        return "\n".join(lines)

    def value(self, depth: int = 0):
        """A JSON value of a random type."""
        r = self.rng
        k = r.randrange(12 if depth < 3 else 8)
        if k == 0:
            return None
        if k == 1:
            return r.random() < 0.5
        if k == 2:
            return r.choice([0, -1, 1, 2 ** 31, 2 ** 63 - 1, -2 ** 63, r.randrange(-10 ** 6, 10 ** 6)])
        if k == 3:
            return r.choice([0.5, -0.0, 1e308, -1e-308, float(r.randrange(100))])
        if k in (4, 5, 6, 7):
            return self.word()
        if k in (8, 9):
            return [self.value(depth + 1) for _ in range(r.randrange(4))]
        return {self.word(): self.value(depth + 1) for _ in range(r.randrange(4))}

    def field(self, name: str):
        """Half the time a value of the right type, else any type."""
        r = self.rng
        if r.random() < 0.5:
            return self.value()
        if name == "code":
            return self.code()
        if name in ("silent", "store_history", "allow_stdin", "stop_on_error", "output", "raw",
                    "unique", "restart"):
            return r.random() < 0.5
        if name in ("cursor_pos", "detail_level", "session", "start", "stop", "n"):
            return r.choice([0, 1, 3, 10, -1, -5, 1000, 2 ** 62, -2 ** 63])
        if name == "hist_access_type":
            return r.choice(["tail", "range", "search", "", "bogus"])
        if name == "pattern":
            return r.choice(["*", "%echo*", "*ok*", "?", "[", "[!a-z]*", "\\", "*a*a*a*a*a*a*b",
                             self.word()])
        return self.value()

    def content(self, msg_type: str) -> dict:
        r = self.rng
        names = FIELDS.get(msg_type, [])
        c = {n: self.field(n) for n in names if r.random() < 0.8}
        for _ in range(r.choice([0, 0, 1, 3])):
            c[self.word()] = self.value()
        return c

    def header(self, msg_type, **kw) -> dict:
        self.n += 1
        h = {"msg_id": f"{self.session}-{self.n}", "session": self.session, "username": "fuzz",
             "date": f"2024-01-01T00:00:{self.n % 60:02d}.{self.n % 1000000:06d}Z", "msg_type": msg_type,
             "version": "5.3"}
        h.update(kw)
        return h

    # -- frames

    def sign(self, parts: list[bytes], key: bytes | None = None) -> bytes:
        h = hmac.new(self.key if key is None else key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    @staticmethod
    def dumps(obj) -> bytes:
        return obj if isinstance(obj, bytes) else json.dumps(obj).encode()

    def frames(self, header, content, parent=None, metadata=None, sig: bytes | None = None,
               key: bytes | None = None, buffers=()) -> list[bytes]:
        parts = [self.dumps(header), self.dumps({} if parent is None else parent),
                 self.dumps({} if metadata is None else metadata), self.dumps(content)]
        return [DELIM, self.sign(parts, key) if sig is None else sig, *parts, *buffers]

    def mutate_type(self, t: str) -> str:
        """A near miss of t that is never a real request type."""
        r = self.rng
        while True:
            k = r.randrange(6)
            if k == 0:
                m = t[:-1]
            elif k == 1:
                m = t + r.choice(["_", " ", "s", "\u00e9"])
            elif k == 2:
                m = t.upper()
            elif k == 3:
                i = r.randrange(len(t))
                m = t[:i] + chr(r.randrange(33, 127)) + t[i + 1:]
            elif k == 4:
                m = " " + t
            else:
                m = t.replace("_", "-")
            if m not in FORBIDDEN and m != t:
                return m

    def random_type(self) -> str:
        r = self.rng
        k = r.randrange(4)
        if k == 0:
            return r.choice(OTHER_TYPES)
        if k == 1:
            return self.mutate_type(r.choice(sorted(FORBIDDEN)))
        if k == 2:
            return self.mutate_type(r.choice(SHELL_TYPES))
        return self.word() or "x"

    # -- the kinds

    def signed(self, channel: str) -> list[bytes]:
        t = self.rng.choice(SHELL_TYPES + ["input_reply"])
        f = self.frames(self.header(t), self.content(t),
                        parent=self.header(self.rng.choice(SHELL_TYPES)) if self.rng.random() < 0.2 else None,
                        metadata={self.word(): self.value()} if self.rng.random() < 0.2 else None)
        if len(self.accepted) < 2000:
            self.accepted.append(f)
        elif self.rng.random() < 0.05:
            self.accepted[self.rng.randrange(2000)] = f
        return f

    def signed_type(self, channel: str) -> list[bytes]:
        t = self.random_type()
        return self.frames(self.header(t), self.content(self.rng.choice(list(FIELDS))))

    def signed_header(self, channel: str) -> list[bytes]:
        r = self.rng
        h = self.header(r.choice(SHELL_TYPES))
        for _ in range(r.randrange(1, 4)):
            k = r.choice(["msg_id", "msg_type", "session", "version", "date", "username"])
            if r.random() < 0.3:
                h.pop(k, None)
            else:
                h[k] = r.choice([self.value(), "", "4.0", "5", "6.0", 5.3, None, []])
        if isinstance(h.get("msg_type"), str) and h["msg_type"] in FORBIDDEN:
            h["msg_type"] = self.mutate_type(h["msg_type"])
        return self.frames(h, self.content(r.choice(list(FIELDS))))

    def signed_utf8(self, channel: str) -> list[bytes]:
        r = self.rng
        t = r.choice(SHELL_TYPES)
        bad = r.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
                        b"\\u0000", b"\\ud800", b"\\udfff\\ud800", b"\x00"])
        parts = [self.dumps(self.header(t)), b"{}", b"{}", self.dumps({"code": "%echo X"})]
        i = r.randrange(4)
        if i == 0:
            parts[0] = parts[0].replace(b'"fuzz"', b'"fu' + bad + b'zz"')
        else:
            parts[i] = b'{"code":"%echo ' + bad + b'","x":"' + bad + b'"}'
        return [DELIM, self.sign(parts), *parts]

    def signed_truncated(self, channel: str) -> list[bytes]:
        f = self.frames(self.header(self.rng.choice(SHELL_TYPES)), self.content("execute_request"))
        i = self.rng.randrange(2, 6)
        f[i] = f[i][:self.rng.randrange(len(f[i]) + 1)]
        f[1] = self.sign(f[2:6])
        return f

    def wrong_key(self, channel: str) -> list[bytes]:
        r = self.rng
        key = r.choice([b"", b"x", self.key + b"x", self.key[:-1], self.key.upper(), r.randbytes(16)])
        if key == self.key:
            key = b"not-the-key"
        t = r.choice(SHELL_TYPES + sorted(FORBIDDEN))   # refused, so a real shutdown is harmless
        return self.frames(self.header(t), self.content(t), key=key or b"\0")

    def unsigned(self, channel: str) -> list[bytes]:
        t = self.rng.choice(SHELL_TYPES + sorted(FORBIDDEN))
        return self.frames(self.header(t), self.content(t), sig=b"")

    def bad_signature(self, channel: str) -> list[bytes]:
        r = self.rng
        t = r.choice(SHELL_TYPES + sorted(FORBIDDEN))
        f = self.frames(self.header(t), self.content(t))
        k = r.randrange(5)
        if k == 0:
            f[1] = f[1].upper()
        elif k == 1:
            f[1] = f[1][:r.randrange(64)]
        elif k == 2:
            f[1] = f[1] + b"0"
        elif k == 3:
            f[1] = bytes(r.choice(b"0123456789abcdef") for _ in range(64))
        else:
            f[1] = self.sign([f[2], f[3], f[4], f[5] + b" "])
        return f

    def replayed(self, channel: str) -> list[bytes]:
        if not self.accepted:
            return self.signed(channel)
        return list(self.rng.choice(self.accepted))

    def truncated(self, channel: str) -> list[bytes]:
        f = self.frames(self.header("kernel_info_request"), {})
        r = self.rng
        k = r.randrange(3)
        if k == 0:
            return f[:r.randrange(1, 6)]
        if k == 1:
            return f[r.randrange(1, 6):]
        return [x for i, x in enumerate(f) if i != r.randrange(len(f))]

    def garbage(self, channel: str) -> list[bytes]:
        r = self.rng
        n = r.randrange(1, 10)
        f = [bytes(r.randrange(256) for _ in range(r.choice([0, 1, 8, 64, 300]))) for _ in range(n)]
        if r.random() < 0.5:
            f.insert(r.randrange(len(f) + 1), DELIM)
        if r.random() < 0.3:
            f = [r.choice([b"{}", b"[]", b"null", b"{", b'{"msg_type":', DELIM, b"", b"\x00" * 4]) for _ in f]
        return f

    def huge(self, channel: str) -> list[bytes]:
        r = self.rng
        blob = b"x" * r.randrange(1 << 20, 4 << 20)
        k = r.randrange(4)
        if k == 0:      # a big code string, signed: the kernel parses and runs it
            code = "%echo " + "y" * len(blob)
            return self.frames(self.header("is_complete_request"), {"code": code})
        if k == 1:      # a big buffer after a signed message
            return self.frames(self.header("kernel_info_request"), {}, buffers=[blob])
        if k == 2:      # a big routing-looking frame before the delimiter
            return [blob, *self.frames(self.header("kernel_info_request"), {})]
        return self.frames(self.header("execute_request"), {"code": "%echo x"}, sig=blob[:100000])

    def oversized(self, channel: str) -> list[bytes]:
        """A signed JSON frame just over the kernel's 64 MiB limit for one frame."""
        pad = "z" * ((64 << 20) + 16)
        return self.frames(self.header("kernel_info_request"), {"pad": pad})

    def iopub_subscribe(self, channel: str) -> list[bytes]:
        r = self.rng
        topic = r.choice([b"", b"kernel.", b"\xff\xfe", b"\xc3", "caf\u00e9".encode(), b"x" * 3000,
                          self.word().encode("utf-8", "surrogatepass")])
        k = r.randrange(4)
        if k == 0:
            return [b"\x01" + topic]
        if k == 1:
            return [b"\x00" + topic]
        if k == 2:
            return [bytes([r.randrange(2, 256)]) + topic]
        return [b"", b"\x01" + topic, topic]

    def many_frames(self, channel: str) -> list[bytes]:
        f = self.frames(self.header("kernel_info_request"), {})
        return f + [b"b"] * self.rng.choice([4090, 4096, 5000])


KINDS = [  # (name, weight per 1000 messages)
    ("signed", 300), ("signed-type", 60), ("signed-header", 60), ("signed-utf8", 50),
    ("signed-truncated", 40), ("wrong-key", 80), ("unsigned", 60), ("bad-signature", 60),
    ("replayed", 60), ("truncated", 70), ("garbage", 80), ("huge", 0.3), ("many-frames", 0.3),
    ("iopub-subscribe", 10),
]
CHANNELS = [("shell", 55), ("control", 40), ("stdin", 5)]


def sockets(ctx: zmq.Context, conn: dict) -> dict[str, list[zmq.Socket]]:
    """Two DEALER sockets per channel, so replies go to more than one routing identity; one XSUB
    on iopub for raw subscription frames."""
    out: dict[str, list[zmq.Socket]] = {}
    ip = conn["ip"] if conn["ip"] not in ("0.0.0.0", "*") else "127.0.0.1"
    xsub = ctx.socket(zmq.XSUB)
    xsub.linger = 0
    xsub.rcvhwm = 1000          # what it subscribed to may be dropped: it is not read for content
    xsub.connect(f"tcp://{ip}:{conn['iopub_port']}")
    out["iopub"] = [xsub]
    for channel, _ in CHANNELS:
        out[channel] = []
        for i in range(2):
            s = ctx.socket(zmq.DEALER)
            s.linger = 0
            s.sndhwm = 2000
            s.rcvhwm = 0            # keep every reply; drained as we go
            s.identity = f"fuzz-{channel}-{i}-{uuid.uuid4().hex[:6]}".encode()
            s.connect(f"tcp://{ip}:{conn[f'{channel}_port']}")
            out[channel].append(s)
    return out


def drain(socks: dict[str, list[zmq.Socket]], replies: Counter) -> None:
    for channel, ss in socks.items():
        for s in ss:
            while True:
                try:
                    s.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                replies[channel] += 1


def send(s: zmq.Socket, frames: list[bytes], socks, replies: Counter, deadline: float) -> bool:
    """Sends without blocking forever: while the socket is full, drains replies and waits.
    A mutation that removed every frame still sends one (empty) frame: ZeroMQ has no empty message."""
    frames = frames or [b""]
    while True:
        try:
            s.send_multipart(frames, zmq.NOBLOCK, copy=len(frames) < 64)
            return True
        except zmq.Again:
            drain(socks, replies)
            if time.monotonic() > deadline:
                return False
            s.poll(50, zmq.POLLOUT)


class HeartbeatProbe(threading.Thread):
    """Pings the heartbeat every 0.1 s during the flood and keeps the slowest echo: the event loop
    must keep turning while requests pour in (a handler that blocks stops the heartbeat)."""

    def __init__(self, ctx: zmq.Context, url: str):
        super().__init__(daemon=True)
        self.ctx, self.url = ctx, url
        self.stop = threading.Event()
        self.worst = 0.0
        self.pings = 0

    def run(self) -> None:
        s = None
        while not self.stop.is_set():
            if s is None:
                s = self.ctx.socket(zmq.REQ)
                s.linger = 0
                s.connect(self.url)
            t0 = time.monotonic()
            s.send(b"probe")
            while not s.poll(100) and not self.stop.is_set():
                self.worst = max(self.worst, time.monotonic() - t0)
            if s.poll(0):
                s.recv()
                self.pings += 1
            else:                   # stopped while waiting: REQ cannot send again
                s.close(0)
                s = None
            self.worst = max(self.worst, time.monotonic() - t0)
            self.stop.wait(0.1)
        if s is not None:
            s.close(0)


def heartbeat_ok(raw: Raw) -> bool:
    for payload in (b"ping", bytes(range(64))):
        if raw.heartbeat(payload, timeout=5.0) != payload:
            return False
    return True


@pytest.mark.serial    # 100 000 messages within 35 s: run alone
@pytest.mark.timeout(90)
def test_kernel_survives_a_flood_of_random_messages(kernel, record_property):
    km, kc = kernel
    conn = km.get_connection_info()
    key = conn["key"] if isinstance(conn["key"], bytes) else conn["key"].encode()
    assert key, "the fixture's kernel signs its messages"
    rng = random.Random(SEED)
    print(f"\nlive fuzz: seed {SEED} (CUDALAB_FUZZ_SEED={SEED} reproduces), target {MESSAGES} "
          f"messages within {BUDGET:.0f} s")
    fz = Fuzzer(key, rng)
    ctx = zmq.Context()
    socks = sockets(ctx, conn)
    ip = conn["ip"] if conn["ip"] not in ("0.0.0.0", "*") else "127.0.0.1"
    probe = HeartbeatProbe(ctx, f"tcp://{ip}:{conn['hb_port']}")
    probe.start()
    time.sleep(0.2)                                   # let the TCP connections come up
    builders = {name: getattr(fz, name.replace("-", "_")) for name, _ in KINDS}
    names, weights = zip(*KINDS)
    chans, cweights = zip(*CHANNELS)
    sent: Counter = Counter()
    per_channel: Counter = Counter()
    replies: Counter = Counter()
    oversized_at = {MESSAGES // 3, 2 * MESSAGES // 3}
    start = time.monotonic()
    deadline = start + BUDGET
    total = 0
    try:
        while total < MESSAGES and time.monotonic() < deadline:
            # draw kinds in batches: random.choices is much quicker per item that way
            for name, channel in zip(rng.choices(names, weights, k=256), rng.choices(chans, cweights, k=256)):
                if total in oversized_at:
                    name = "oversized"
                if name == "iopub-subscribe":
                    channel = "iopub"
                frames = (fz.oversized if name == "oversized" else builders[name])(channel)
                if not send(rng.choice(socks[channel]), frames, socks, replies, deadline):
                    break
                sent[name] += 1
                per_channel[channel] += 1
                total += 1
                if total % 512 == 0:
                    drain(socks, replies)
                if total >= MESSAGES:
                    break
        flood_s = time.monotonic() - start
        drain(socks, replies)
    finally:
        probe.stop.set()
        probe.join(5)
        for ss in socks.values():
            for s in ss:
                s.close(0)
        ctx.term()

    lines = [f"live fuzz: {total} messages in {flood_s:.1f} s ({total / max(flood_s, 1e-9):.0f}/s), "
             f"{sum(replies.values())} replies drained during the flood"]
    lines += [f"  {name:<17}{sent[name]:>8}" for name in [*names, "oversized"] if sent[name]]
    lines.append("  per channel: " + ", ".join(f"{c} {per_channel[c]}" for c in [*chans, "iopub"]))
    lines.append(f"  heartbeat during the flood: {probe.pings} echoes, slowest {probe.worst:.2f} s")
    print("\n".join(lines))
    record_property("fuzz_seed", SEED)
    record_property("messages_per_kind", json.dumps(dict(sent), sort_keys=True))
    record_property("messages_per_channel", json.dumps(dict(per_channel), sort_keys=True))
    record_property("flood_seconds", round(flood_s, 2))
    record_property("heartbeat_worst_seconds", round(probe.worst, 3))

    # the kernel is alive and answers on every channel; it may still be working through the
    # tail of the flood, so the first answers get a longer wait than usual
    proc = km.provisioner.process
    assert proc.poll() is None, f"the kernel died during the flood (exit {proc.returncode}); " \
                                f"seed {SEED}; its stderr:\n{kernel.log.text()[-4000:]}"
    raw = Raw(conn)
    try:
        t0 = time.monotonic()
        ok = heartbeat_ok(raw)
        hb_s = time.monotonic() - t0
        assert ok, f"no heartbeat echo after the flood (seed {SEED})"
        for channel in ("control", "shell"):
            msg_id = raw.request(channel, "kernel_info_request")
            reply = raw.reply(channel, msg_id, timeout=30)
            assert reply["msg_type"] == "kernel_info_reply" and reply["content"]["status"] == "ok"
    finally:
        raw.close()
    # kc read nothing during the flood, so iopub dropped what did not fit its queue (PUB
    # semantics): empty that queue first, or the messages of the next cell are dropped too
    iopub = kc.iopub_channel.socket
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 0.5:
        if iopub.poll(100):
            iopub.recv_multipart(copy=False)
            quiet_since = time.monotonic()
    reply, msgs = execute(kc, "%echo ok", timeout=30)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert streams(msgs, "stdout") == ["ok\n"], msgs
    reply, _ = request(kc, "kernel_info_request", channel="control")
    assert reply["content"]["status"] == "ok"
    assert proc.poll() is None
    dropped = len(kernel.log.lines("dropped"))
    print(f"live fuzz: alive afterwards (heartbeat {hb_s:.2f} s), {dropped} 'dropped' lines in its log, "
          f"whole run {time.monotonic() - start:.1f} s")
    record_property("kernel_log_dropped_lines", dropped)
    assert total >= MESSAGES, (f"only {total} of {MESSAGES} messages went out within {BUDGET:.0f} s: "
                               f"the kernel took them too slowly (seed {SEED})")
