#!/usr/bin/env python3
"""valgrind-session.py — a scripted Jupyter session with the kernel and its device worker under
valgrind memcheck (`make valgrind`).

It writes a kernelspec whose argv is the real one prefixed with valgrind into a temporary
JUPYTER_PATH (as tests/conftest.py does), starts the kernel with jupyter_client and drives a
session: kernel_info on shell and control, executes (line and cell magics, %help, %device, usage
and syntax errors, a stop_on_error abort, an interrupted worker command when %selftest exists),
complete, inspect, is_complete, history, comm_info and comms, malformed and wrongly signed
messages, interrupts while idle (signal and message), then shutdown.

valgrind follows the worker (fork + exec of the same binary: --trace-children=yes) and writes one
log per process (vg.<pid>.log). The kernel SIGKILLs its worker at shutdown, which leaves that
worker no chance to print a leak summary, so the worker is also run on its own (`cudalab --worker
FD` fed over a socketpair until EOF) and the command line mode once: both exit normally and get a
full leak check.

Passes when every process ends with exit status != 99 (valgrind's --error-exitcode) and no log
reports an error or a definitely/indirectly lost block. Prints each log's summary and the time.

    scripts/valgrind-session.py [--binary build/bin/cudalab] [--keep] [--backend cpu|auto]
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from queue import Empty

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "share" / "jupyter" / "kernelspecs" / "cudalab" / "kernel.json"
VG_OPTS = ["--leak-check=full", "--show-leak-kinds=definite,indirect",
           "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99", "--track-fds=no",
           "--trace-children=yes", "--child-silent-after-fork=yes", "--num-callers=30"]
VG_EXIT = 99
STEP_TIMEOUT = 60.0          # valgrind makes everything 20-50x slower: be patient per step


class Failure(Exception):
    pass


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- the Jupyter session

def get_reply(kc, msg_id: str, channel: str = "shell", timeout: float = STEP_TIMEOUT) -> dict:
    get = kc.get_shell_msg if channel == "shell" else kc.get_control_msg
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = get(timeout=max(0.1, deadline - time.monotonic()))
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg
    raise Failure(f"no {channel} reply to {msg_id} within {timeout:.0f} s")


def iopub_until_idle(kc, msg_id: str, timeout: float = STEP_TIMEOUT) -> list[dict]:
    msgs = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return msgs
    raise Failure(f"no idle status for {msg_id} within {timeout:.0f} s")


def execute(kc, code: str, want: str = "ok", **kw) -> tuple[dict, list[dict]]:
    msg_id = kc.execute(code, **kw)
    msgs = iopub_until_idle(kc, msg_id)
    reply = get_reply(kc, msg_id)
    status = reply["content"]["status"]
    if want and status != want:
        raise Failure(f"execute {code!r}: status {status}, wanted {want}: {reply['content']}")
    return reply, msgs


def request(kc, msg_type: str, content: dict, channel: str = "shell") -> dict:
    msg = kc.session.msg(msg_type, content)
    getattr(kc, f"{channel}_channel").send(msg)
    reply = get_reply(kc, msg["header"]["msg_id"], channel)
    if channel == "shell":
        iopub_until_idle(kc, msg["header"]["msg_id"])
    return reply


def stdout_of(msgs: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


class RawSocket:
    """A DEALER on shell or control for messages jupyter_client would never send."""

    def __init__(self, conn: dict, channel: str):
        import zmq
        self.zmq = zmq
        key = conn["key"]
        self.key = key if isinstance(key, bytes) else key.encode()
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(f"tcp://{conn['ip']}:{conn[channel + '_port']}")

    def sign(self, parts: list[bytes], key: bytes | None = None) -> bytes:
        h = hmac.new(self.key if key is None else key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    def parts(self, msg_type: str, content) -> list[bytes]:
        # dated: the kernel drops signed messages without a date before their handlers see them
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        header = {"msg_id": uuid.uuid4().hex, "session": "valgrind", "username": "vg", "date": date,
                  "msg_type": msg_type, "version": "5.3"}
        return [json.dumps(header).encode(), b"{}", b"{}",
                content if isinstance(content, bytes) else json.dumps(content).encode()]

    def send(self, frames: list[bytes]) -> None:
        self.sock.send_multipart(frames)

    def malformed(self) -> dict[str, list[bytes]]:
        p = self.parts("kernel_info_request", {})
        good = [b"<IDS|MSG>", self.sign(p), *p]
        code = self.parts("execute_request", b'{"code": "%echo \xff\xfe"}')
        nocode = self.parts("execute_request", {"silent": False})
        unknown = self.parts("no_such_request", {"x": [1, {"y": None}]})
        dup = self.parts("kernel_info_request", b'{"a": 1, "a": 2}')
        return {
            "wrong key": [b"<IDS|MSG>", self.sign(p, b"not-the-key"), *p],
            "unsigned": [b"<IDS|MSG>", b"", *p],
            "bad signature length": [b"<IDS|MSG>", b"abc", *p],
            "no delimiter": [b"garbage", b"\x00\xff", b"{}"],
            "too few frames": good[:4],
            "accepted once": good,
            "replayed": good,
            "invalid UTF-8, signed": [b"<IDS|MSG>", self.sign(code), *code],
            "execute without code": [b"<IDS|MSG>", self.sign(nocode), *nocode],
            "unknown msg_type": [b"<IDS|MSG>", self.sign(unknown), *unknown],
            "duplicate keys": [b"<IDS|MSG>", self.sign(dup), *dup],
            "too many parts": good + [b"b"] * 4100,
        }

    def drain(self, wait: float) -> int:
        n = 0
        while self.sock.poll(int(wait * 1000)):
            self.sock.recv_multipart()
            n += 1
            wait = 0.5
        return n

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


def session(kc, km) -> list[str]:
    """The scripted session. Returns notes (skipped steps); raises Failure when a step fails."""
    notes = []
    for channel in ("shell", "control"):
        r = request(kc, "kernel_info_request", {}, channel)
        if r["content"].get("status") != "ok":
            raise Failure(f"kernel_info on {channel}: {r['content']}")
    _, msgs = execute(kc, "%echo hello valgrind")
    if stdout_of(msgs) != "hello valgrind\n":
        raise Failure(f"%echo printed {stdout_of(msgs)!r}")
    execute(kc, "%%echo a header\nline one\nline two")
    execute(kc, "# a comment\n%echo one\n%echo --stderr two\n%echo \"three  spaces\" \\\n  continued")
    for code in ("%help", "%help echo", "%echo?", "?device", "%device", "%device --brief",
                 "%device --index 0"):
        execute(kc, code)
    # %assert/%score run in the kernel process: results kept, expressions parsed, errors explained
    execute(kc, "%matmul --size 16 --variant naive,tiled --tile 4 --reps 1 --warmup 0\n"
                "%assert matmul.check.passed and matmul[variant=tiled].tile == 4\n"
                "%score count(matmul) + min(matmul.m) / 2")
    for code in ("%assert matmul.m == 17", "%assert matmul[variant=tild].m", "%assert matmul.gflops > 0",
                 "%assert (1", "%score 'x'", "%assert nosuch.x or 1 / 0"):
        execute(kc, code, want="error", stop_on_error=False)
    for code in ("%nosuch", "%mtamul --size 1", "echo without percent", '%echo "never closed',
                 "%device --index 99", "%device --bogus", "%device --index=2^70", "%echo first\n%%echo late",
                 "%help nosuch"):
        # stop_on_error=False: after an error the kernel aborts whatever reaches shell before
        # it polls again, and under valgrind the next cell of a quick client can be that early
        execute(kc, code, want="error", stop_on_error=False)
    # stop_on_error: the second request is queued behind the failing one (which fails in the
    # worker, so shell is not read meanwhile) and aborted
    first = kc.execute("%device --index 7")
    second = kc.execute("%echo aborted")
    third = kc.execute("%echo after the abort", stop_on_error=False)
    for mid, want in ((first, "error"), (second, "aborted")):
        r = get_reply(kc, mid)
        iopub_until_idle(kc, mid)
        if r["content"]["status"] != want:
            raise Failure(f"stop_on_error: {r['content']['status']}, wanted {want}")
    get_reply(kc, third)            # aborted too, or run: it depends on when it reached the kernel
    time.sleep(1.0)                 # the kernel aborts until shell is empty: let it get there first
    execute(kc, "%echo silent", silent=True)
    execute(kc, "%echo no history", store_history=False)
    for content in ({"code": "%ec", "cursor_pos": 3}, {"code": "%device --b", "cursor_pos": 11},
                    {"code": "%echo caf\u00e9 \U0001f680 %he", "cursor_pos": 16}, {"code": ""}):
        request(kc, "complete_request", content)
    for content in ({"code": "%echo hi", "cursor_pos": 2}, {"code": "%device", "detail_level": 1},
                    {"code": "nothing", "cursor_pos": 99}):
        request(kc, "inspect_request", content)
    for code in ("%echo done", '%echo "open', "%%echo", "%nosuch", "%echo a \\"):
        request(kc, "is_complete_request", {"code": code})
    for content in ({"hist_access_type": "tail", "n": 5, "output": True, "raw": True},
                    {"hist_access_type": "range", "session": 0, "start": 1, "stop": 4, "output": False,
                     "raw": True},
                    {"hist_access_type": "search", "pattern": "%echo*", "unique": True, "output": True,
                     "raw": True}):
        request(kc, "history_request", content)
    request(kc, "comm_info_request", {})
    request(kc, "comm_info_request", {"target_name": "jupyter.widget"})
    for msg_type, content in (("comm_open", {"comm_id": "c1", "target_name": "t", "data": {}}),
                              ("comm_msg", {"comm_id": "c1", "data": {"x": 1}}),
                              ("comm_close", {"comm_id": "c1", "data": {}})):
        kc.shell_channel.send(kc.session.msg(msg_type, content))

    conn = km.get_connection_info()
    for channel in ("shell", "control"):
        raw = RawSocket(conn, channel)
        for name, frames in raw.malformed().items():
            raw.send(frames)
        raw.drain(3.0)
        raw.close()

    km.interrupt_kernel()                                  # SIGINT while idle (interrupt_mode signal)
    r = request(kc, "interrupt_request", {}, "control")    # and the message form
    if r["content"].get("status") != "ok":
        raise Failure(f"interrupt_reply: {r['content']}")
    # an interrupted worker command: the kernel kills the worker and starts a fresh one
    mid = kc.execute("%selftest --sleep 60000")
    time.sleep(3.0)
    request(kc, "interrupt_request", {}, "control")
    r = get_reply(kc, mid)
    iopub_until_idle(kc, mid)
    ename = r["content"].get("ename", "")
    if r["content"]["status"] == "error" and ename == "UsageError":
        notes.append("%selftest is not available: the interrupted worker command was skipped")
    elif ename != "KeyboardInterrupt":
        raise Failure(f"interrupting %selftest --sleep gave {r['content']}")
    _, msgs = execute(kc, "%device --brief\n%echo still here")
    if not stdout_of(msgs).endswith("still here\n"):
        raise Failure(f"after the interrupt: {stdout_of(msgs)!r}")
    for channel in ("shell", "control"):
        request(kc, "kernel_info_request", {}, channel)
    return notes


# ---------------------------------------------------------------- the worker and the CLI alone

def frame(obj) -> bytes:
    b = json.dumps(obj).encode()
    return struct.pack(">I", len(b)) + b


def read_frames_until_done(sock: socket.socket, timeout: float) -> list[dict]:
    sock.settimeout(timeout)
    buf, out = b"", []
    while True:
        while len(buf) >= 4 and len(buf) - 4 >= struct.unpack(">I", buf[:4])[0]:
            n = struct.unpack(">I", buf[:4])[0]
            out.append(json.loads(buf[4:4 + n]))
            buf = buf[4 + n:]
            if out[-1].get("op") == "done":
                return out
        chunk = sock.recv(65536)
        if not chunk:
            raise Failure(f"the worker closed its socket before 'done' (got {out})")
        buf += chunk


def worker_alone(binary: Path, vg: list[str], env: dict) -> subprocess.Popen:
    """`cudalab --worker FD` fed a few commands, then EOF: it exits 0 with a full leak check."""
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([*vg, str(binary), "--worker", str(theirs.fileno())],
                            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    theirs.close()
    runs = [
        {"op": "run", "magic": "echo", "params": {"stderr": False, "text": "from the worker"}, "body": None},
        {"op": "run", "magic": "echo", "params": {"stderr": True, "text": None}, "body": "a body\n"},
        {"op": "run", "magic": "device", "params": {"index": None, "brief": False}},
        {"op": "run", "magic": "device", "params": {"index": 7, "brief": True}},
        {"op": "run", "magic": "help", "params": {"name": "device"}},
        {"op": "run", "magic": "no-such-magic", "params": {}},
        {"op": "run"},
    ]
    try:
        for r in runs:
            ours.sendall(frame(r))
            read_frames_until_done(ours, STEP_TIMEOUT)
        ours.sendall(frame({"op": "unknown"}) + frame([1, 2, 3]))
    finally:
        ours.close()                       # EOF: the worker leaves its loop and exits
    return proc


# ---------------------------------------------------------------- valgrind's logs

ERROR_LINE = re.compile(r"^==\d+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|"
                        r"Syscall param|Mismatched free|Source and destination overlap|"
                        r"Argument '.*' of function|Invalid (alignment|size)|Jump to the invalid)")


def parse_log(path: Path) -> dict:
    text = path.read_text(errors="replace")
    cmd = re.search(r"^==\d+== Command: (.*)$", text, re.M)
    errors = re.findall(r"ERROR SUMMARY: (\d+) errors", text)
    leaks = {kind: re.search(rf"{kind} lost: ([\d,]+) bytes in ([\d,]+) blocks", text)
             for kind in ("definitely", "indirectly", "possibly")}
    return {
        "path": path, "text": text, "command": cmd.group(1) if cmd else "?",
        "errors": int(errors[-1]) if errors else None,
        "error_lines": [l for l in text.splitlines() if ERROR_LINE.match(l)],
        "leaks": {k: (m.group(1), m.group(2)) if m else ("0", "0") for k, m in leaks.items()},
        "summary": "ERROR SUMMARY" in text,
        "signal": (re.search(r"Process terminating with default action of signal (\d+) \((\w+)\)", text)
                   or [None, None, None]),
    }


def describe(info: dict) -> str:
    role = ("worker" if "--worker" in info["command"] else
            "command line" if "--run" in info["command"] else "kernel")
    if not info["summary"]:
        sig = info["signal"][2] if info["signal"][0] else "SIGKILL"
        why = " (the kernel kills its worker)" if role == "worker" and sig == "SIGKILL" else ""
        state = f"ended by {sig} before its summary{why}; {len(info['error_lines'])} errors reported before"
    else:
        d, i, p = (info["leaks"][k] for k in ("definitely", "indirectly", "possibly"))
        state = (f"{info['errors']} errors; definitely lost {d[0]} B in {d[1]} blocks, "
                 f"indirectly {i[0]} B in {i[1]}, possibly {p[0]} B in {p[1]}")
    return f"  {info['path'].name:<18} {role:<12} {state}"


def bad(info: dict) -> bool:
    if info["error_lines"]:
        return True
    if not info["summary"]:
        return False
    return bool(info["errors"]) or any(info["leaks"][k][1] != "0" for k in ("definitely", "indirectly"))


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.environ.get("CUDALAB_BIN", "build/bin/cudalab"))
    ap.add_argument("--keep", action="store_true", help="keep the logs directory")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "auto"],
                    help="cpu (default): CUDA drivers under memcheck report their own errors")
    args = ap.parse_args()
    binary = Path(args.binary)
    binary = (binary if binary.is_absolute() else REPO / binary).resolve()
    valgrind = shutil.which("valgrind")
    if not valgrind:
        log("valgrind-session: valgrind is not installed (apt-get install valgrind; scripts/setup.sh does)")
        return 2
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        log(f"valgrind-session: no kernel binary at {binary}: run `make` first")
        return 2
    try:
        from jupyter_client import KernelManager
    except ImportError:
        log("valgrind-session: jupyter_client is missing: run it with the venv's python (.venv/bin/python)")
        return 2

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="cudalab-valgrind-"))
    logs = tmp / "logs"
    logs.mkdir()
    vg = [valgrind, *VG_OPTS, f"--log-file={logs}/vg.%p.log"]
    data = tmp / "share" / "jupyter"
    spec_dir = data / "kernels" / "cudalab"
    spec_dir.mkdir(parents=True)
    spec = json.loads(SPEC.read_text())
    spec["argv"] = [*vg, str(binary), *spec["argv"][1:]]
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    env = {**os.environ, "JUPYTER_PATH": str(data), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_PLATFORM_DIRS": "1",
           "CUDALAB_TESTING": "1"}
    env.pop("CUDALAB_DEBUG", None)
    if args.backend == "cpu":
        env["CUDALAB_BACKEND"] = "cpu"
    os.environ.update({k: env[k] for k in ("JUPYTER_PATH", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR",
                                           "JUPYTER_PLATFORM_DIRS")})
    log(f"valgrind-session: {binary} under {valgrind} ({subprocess.run([valgrind, '--version'], capture_output=True, text=True).stdout.strip()}), "
        f"backend {args.backend}; logs in {logs}")

    problems: list[str] = []
    notes: list[str] = []
    stderr_path = tmp / "kernel.stderr"
    km = KernelManager(kernel_name="cudalab")
    km.shutdown_wait_time = STEP_TIMEOUT
    kc = None
    kernel_rc = None
    with open(stderr_path, "wb") as fh:
        try:
            km.start_kernel(stderr=fh, env=env)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=120)
            t0 = time.monotonic()
            notes += session(kc, km)
            log(f"  session: every step answered ({time.monotonic() - t0:.1f} s)")
            kc.shutdown()
            kernel_rc = km.provisioner.process.wait(STEP_TIMEOUT)
        except (Failure, RuntimeError, subprocess.TimeoutExpired) as e:
            problems.append(f"session: {e}")
        finally:
            if kc is not None:
                kc.stop_channels()
            if km.has_kernel and km.provisioner.process.poll() is None:
                km.shutdown_kernel(now=True)
            km.cleanup_resources()
    if kernel_rc is not None and kernel_rc != 0:
        problems.append(f"the kernel exited {kernel_rc}" + (" (valgrind found errors)" if kernel_rc == VG_EXIT else ""))
    log(f"  kernel exit status: {kernel_rc}")

    try:
        t0 = time.monotonic()
        w = worker_alone(binary, vg, env)
        rc = w.wait(STEP_TIMEOUT)
        log(f"  worker on its own: exit status {rc} ({time.monotonic() - t0:.1f} s)")
        if rc != 0:
            problems.append(f"the worker on its own exited {rc}" + (" (valgrind found errors)" if rc == VG_EXIT else ""))
    except (Failure, OSError, subprocess.TimeoutExpired) as e:
        problems.append(f"worker on its own: {e}")
    t0 = time.monotonic()
    cli = subprocess.run([*vg, str(binary), "--run", "%echo cli\n%device --brief\n%help echo", "--json"],
                         env=env, capture_output=True, timeout=STEP_TIMEOUT)
    cli_bad = subprocess.run([*vg, str(binary), "--run", "%device --index 99"], env=env,
                             capture_output=True, timeout=STEP_TIMEOUT)
    log(f"  command line: exit status {cli.returncode} (a good cell), {cli_bad.returncode} (a usage error) "
        f"({time.monotonic() - t0:.1f} s)")
    if cli.returncode != 0:
        problems.append(f"the command line run exited {cli.returncode}: {cli.stderr.decode(errors='replace')[-500:]}")
    if cli_bad.returncode in (0, VG_EXIT):
        problems.append(f"the command line usage error exited {cli_bad.returncode}")

    infos = [parse_log(p) for p in sorted(logs.glob("vg.*.log"), key=lambda p: p.stat().st_mtime)]
    log(f"  {len(infos)} processes under valgrind:")
    for info in infos:
        log(describe(info))
        if bad(info):
            problems.append(f"{info['path'].name} ({info['command']}) reports errors or leaks")
    if not any("--worker" in i["command"] for i in infos):
        problems.append("no worker ran under valgrind (--trace-children did not follow the exec?)")
    for n in notes:
        log(f"  note: {n}")
    elapsed = time.monotonic() - started
    if problems:
        log("valgrind-session: FAILED")
        for p in problems:
            log(f"  - {p}")
        for info in infos:
            if bad(info):
                log(f"---- {info['path']} ----")
                log(info["text"][-12000:])
        log(f"---- kernel stderr (last lines) ----\n{stderr_path.read_text(errors='replace')[-3000:]}")
        log(f"logs kept in {tmp}")
        log(f"valgrind-session: {elapsed:.0f} s")
        return 1
    log(f"valgrind-session: OK, no memory errors and no definite or indirect leaks ({elapsed:.0f} s)")
    if args.keep:
        log(f"logs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
