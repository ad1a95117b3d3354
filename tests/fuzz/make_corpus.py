#!/usr/bin/env python3
"""make_corpus.py — writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/).

The seeds are small, meaningful inputs: real Jupyter messages signed with the fuzz key, connection
files as jupyter_client writes them, cells from the magics' help examples, worker frames. Run it
again after changing a seed below; it rewrites only the files it names (seed-*), so inputs that
`make fuzz` added to a corpus stay. Every input format is described at the top of its target.

    python3 tests/fuzz/make_corpus.py
"""
from __future__ import annotations

import hashlib
import hmac
import json
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
FUZZ_KEY = b"cudalab-fuzz-key"          # the key fuzz_wire.c signs and checks with
SEP = b"\x1e"
DELIM = b"<IDS|MSG>"


def write(target: str, name: str, data: bytes) -> None:
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def dumps(obj) -> bytes:
    return obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()


# ---------------------------------------------------------------- fuzz_wire

def header(msg_type: str, n: int = 0, **kw) -> dict:
    h = {"msg_id": f"{n:032x}", "session": "5a9f00d3c0ffee00", "username": "fuzz",
         "date": "2024-01-01T00:00:00.000000Z", "msg_type": msg_type, "version": "5.3"}
    h.update(kw)
    return {k: v for k, v in h.items() if v is not None}


def sign(parts: list[bytes]) -> bytes:
    h = hmac.new(FUZZ_KEY, digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.hexdigest().encode()


def message(mode: int, hdr, content=None, parent=None, metadata=None, ids=(b"client-1",),
            buffers=(), signature: bytes | None = None) -> bytes:
    parts = [dumps(hdr), dumps({} if parent is None else parent),
             dumps({} if metadata is None else metadata), dumps({} if content is None else content)]
    sig = (sign(parts) if mode & 1 else b"") if signature is None else signature
    return bytes([mode]) + SEP.join([*ids, DELIM, sig, *parts, *buffers])


def wire_seeds() -> None:
    SIGNED, UNSIGNED, RESIGN, REPLAY = 0x01, 0x00, 0x03, 0x05
    requests = {
        "kernel_info_request": {},
        "execute_request": {"code": "%echo hello", "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        "complete_request": {"code": "%matmul --va", "cursor_pos": 12},
        "inspect_request": {"code": "%echo hi", "cursor_pos": 3, "detail_level": 0},
        "is_complete_request": {"code": "%echo \"open"},
        "history_request": {"output": True, "raw": True, "hist_access_type": "tail", "n": 10},
        "comm_info_request": {"target_name": "jupyter.widget"},
        "comm_open": {"comm_id": "c0ffee", "target_name": "t", "data": {}},
        "comm_msg": {"comm_id": "c0ffee", "data": {"x": 1}},
        "comm_close": {"comm_id": "c0ffee", "data": {}},
        "shutdown_request": {"restart": False},
        "interrupt_request": {},
        "input_reply": {"value": "42"},
        "debug_request": {"type": "request", "seq": 1, "command": "initialize"},
    }
    for i, (t, c) in enumerate(requests.items()):
        write("wire", f"signed-{t}", message(SIGNED, header(t, i), c))
    write("wire", "resign-execute", message(RESIGN, header("execute_request", 40), {"code": "%help"},
                                            signature=b"0" * 64))
    write("wire", "unsigned-kernel_info", message(UNSIGNED, header("kernel_info_request", 41)))
    write("wire", "unsigned-with-sig", message(UNSIGNED, header("kernel_info_request", 42),
                                               signature=b"f" * 64))
    write("wire", "replay-execute", message(REPLAY, header("execute_request", 43), {"code": "%device"}))
    write("wire", "no-ids", message(SIGNED, header("kernel_info_request", 44), ids=()))
    write("wire", "three-ids", message(SIGNED, header("kernel_info_request", 45),
                                       ids=(b"a", b"\x00\x80\xff", b"router-id")))
    write("wire", "buffers", message(SIGNED, header("comm_msg", 46), {"comm_id": "x", "data": {}},
                                     buffers=(b"\x00\x01\x02", b"", b"buffer")))
    write("wire", "parent-header", message(SIGNED, header("execute_request", 47), {"code": "%echo x"},
                                           parent=header("kernel_info_request", 1),
                                           metadata={"deletedCells": [], "cellId": "abc"}))
    write("wire", "wrong-signature", message(SIGNED, header("execute_request", 48), {"code": "%echo"},
                                             signature=b"0123456789abcdef" * 4))
    write("wire", "short-signature", message(SIGNED, header("kernel_info_request", 49), signature=b"abc"))
    write("wire", "missing-signature", message(SIGNED, header("kernel_info_request", 50), signature=b""))
    write("wire", "version-4", message(RESIGN, header("kernel_info_request", 51, version="4.1")))
    write("wire", "no-version", message(RESIGN, header("kernel_info_request", 52, version=None)))
    write("wire", "session-int", message(RESIGN, header("kernel_info_request", 53, session=7)))
    write("wire", "no-msg-id", message(RESIGN, header("kernel_info_request", 54, msg_id=None)))
    write("wire", "empty-msg-type", message(RESIGN, header("", 55)))
    write("wire", "msg-type-number", message(RESIGN, header(12, 56)))
    write("wire", "content-array", message(RESIGN, header("execute_request", 57), b"[\"%echo\"]"))
    write("wire", "content-invalid-json", message(RESIGN, header("execute_request", 58), b"{\"code\":"))
    write("wire", "content-invalid-utf8", message(RESIGN, header("execute_request", 59),
                                                  b"{\"code\":\"%echo \xff\xfe\xc3\"}"))
    write("wire", "content-nul-escape", message(RESIGN, header("execute_request", 60),
                                                b"{\"code\":\"%echo a\\u0000b\"}"))
    write("wire", "content-lone-surrogate", message(RESIGN, header("execute_request", 61),
                                                    b"{\"code\":\"\\ud800\"}"))
    write("wire", "duplicate-keys", message(RESIGN, b"{\"msg_id\":\"1\",\"msg_type\":\"kernel_info_request\","
                                                    b"\"msg_type\":\"shutdown_request\"}"))
    write("wire", "header-not-object", message(RESIGN, b"\"kernel_info_request\""))
    write("wire", "deep-nesting", message(RESIGN, header("execute_request", 62),
                                          b"{\"code\":" + b"[" * 300 + b"]" * 300 + b"}"))
    write("wire", "wrong-types", message(RESIGN, header("execute_request", 63),
                                         {"code": 5, "silent": "yes", "store_history": None,
                                          "user_expressions": [], "stop_on_error": 1.5}))
    no_delim = bytes([SIGNED]) + SEP.join([b"client", b"sig", b"{}", b"{}", b"{}", b"{}"])
    write("wire", "no-delimiter", no_delim)
    four = message(SIGNED, header("kernel_info_request", 64))
    write("wire", "four-json-frames", four[:four.rfind(SEP)])
    write("wire", "only-delimiter", bytes([SIGNED]) + DELIM)
    write("wire", "two-delimiters", message(SIGNED, header("kernel_info_request", 65), ids=(DELIM,)))
    # the replay cache's promise: mode 0x08 | (digests - 1) << 4, then one op per byte (a message
    # id below 0xf0, or a clock step)
    write("wire", "replay-model-cap1", bytes([0x08]) + bytes([1, 1, 2, 1, 17, 17, 33]))
    write("wire", "replay-model-cap4", bytes([0x08 | 3 << 4]) + bytes(range(0, 64, 3)) + bytes([0, 3, 6, 9]))
    write("wire", "replay-model-cap8", bytes([0x08 | 7 << 4]) + bytes([i * 16 + 1 for i in range(16)] * 2))
    write("wire", "replay-model-clock", bytes([0x08 | 1 << 4]) + bytes([0, 1, 2, 3, 4, 5, 0, 1, 0xf5, 0, 6, 7,
                                                                    11, 0xff, 0xff, 1, 9, 23, 0xf1, 23]))
    write("wire", "small-cache", message(0x87, header("execute_request", 66), {"code": "%echo"}))


# ---------------------------------------------------------------- fuzz_conn

def conn_seeds() -> None:
    base = {"shell_port": 53794, "iopub_port": 53795, "stdin_port": 53796, "control_port": 53797,
            "hb_port": 53798, "ip": "127.0.0.1", "key": "a0436f6c-1916-498b-8eb9-e81ab9368e84",
            "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "cudalab"}

    def conn(name: str, drop=(), **kw) -> None:
        c = {k: v for k, v in base.items() if k not in drop}
        c.update(kw)
        write("conn", name, json.dumps(c, indent=1).encode())

    conn("jupyter-client")
    conn("ipc", transport="ipc", ip="/tmp/cudalab-kernel", shell_port=1, iopub_port=2, stdin_port=3,
         control_port=4, hb_port=5)
    conn("ipv6", ip="::1")
    conn("any-address", ip="0.0.0.0")
    conn("star", ip="*")
    conn("ports-zero", shell_port=0, iopub_port=0, stdin_port=0, control_port=0, hb_port=0)
    conn("unsigned", key="")
    conn("no-key", drop=("key",))
    conn("no-scheme", drop=("signature_scheme",))
    conn("scheme-sha512", signature_scheme="hmac-sha512")
    conn("scheme-number", signature_scheme=256)
    conn("scheme-md5", signature_scheme="hmac-md5")
    conn("ip-localhost", ip="localhost")
    conn("key-number", key=12345)
    conn("port-string", shell_port="53794")
    conn("port-float", shell_port=53794.0)
    conn("port-negative", hb_port=-1)
    conn("port-too-big", hb_port=65536)
    conn("port-huge", hb_port=10 ** 19)
    conn("missing-port", drop=("control_port",))
    conn("transport-udp", transport="udp")
    conn("transport-long", transport="tcp-and-more")
    conn("ip-empty", ip="")
    conn("ip-long", ip="h" * 300)
    conn("kernel-name-long", kernel_name="k" * 70)
    conn("unicode-key", key="clé-日本-\U0001f511")
    conn("no-transport-no-ip", drop=("transport", "ip"))
    write("conn", "nul-in-ip", json.dumps(base).replace("127.0.0.1", "127.0.0.1\\u0000evil").encode())
    write("conn", "duplicate-key", b'{"key": "a", "key": "b", "shell_port": 1}')
    write("conn", "top-level-array", b'[{"shell_port": 1}]')
    write("conn", "empty-object", b"{}")
    write("conn", "truncated", json.dumps(base).encode()[:60])
    write("conn", "invalid-utf8", json.dumps(base).encode().replace(b"cudalab", b"cuda\xff\xfelab"))
    write("conn", "empty", b"")


# ---------------------------------------------------------------- fuzz_cell

def cell_seeds() -> None:
    cells = [
        # the magics' help examples
        "%help", "%help echo", "%echo?", "%echo Tile sizes from 8 to 32:", '%echo "two  spaces, kept"',
        '%echo --stderr "goes to the stderr stream"', "%device", "%device --brief", "%device --index 0",
        "%matmul --size 1024 --variant naive,tiled --tile 16",
        "%matmul --size 2048 --variant tiled --tile 2,4,8,16,32",
        "%matmul --size 4096 --variant all --sort",
        "%matmul --size 512,1024,2048,4096 --variant fast,cublas",
        "%matmul --m 1000 --n 300 --k 77 --variant all",
        # the fake registry's flag types (fuzz_cell.c)
        "%matmul -n 2^20 --tile 8,16,32 --variant=naive,cublas --block 16x16x4 --tol 1e-6 --no-check",
        "%matmul --size 64K --scale -1.5e3,2_000.25 --grid 76x62,8 --seed -9223372036854775808",
        "%matmul --title 'a b' --title=\"c \\\"d\\\"\" -c -n1.5Mi",
        "%matmul --size 1e999 --tol nan --tile 0 --block 0x1 --variant tiledd",
        "%need --m 5 -M tiled", "%need", "%need --m=101 --mode=",
        "%%note --loud\nbody with \"unclosed quote\nand # no comment\n",
        "%%script\nanything at all \\\n%echo not parsed",
        "%%echo header text\nline one\nline two",
        # the grammar: continuation, quotes, comments, help forms, CRLF, errors
        "%echo a \\\n  b \\\n  c", "%echo \"open quote\nspans lines\"", "%echo 'single\nquoted'",
        "# a comment\n\n   \n%echo after blanks # trailing comment", "%echo a\r\n%echo b\r\n",
        "?echo", "%?", "??", "%help?", "%%echo?", "%", "%%", "%%%echo", "echo hi", "\"%echo\" quoted",
        "%mtamul --size 1", "%MatMul", "%echo ok\n%%echo late cell magic",
        "%echo --stderr=maybe x", "%echo --no-stderr --stderr=yes -- --not-a-flag",
        "%device --index 64", "%device --index -1", "%device --index 2^62 --brief=0",
        "%echo h\u00e9llo \u00fcn\u00efcode \u65e5\u672c \U0001f680",
        "%echo \"trailing backslash\\", "%echo a \\", "\\\n\\\n%echo",
    ]
    for i, c in enumerate(cells):
        write("cell", f"{i:02d}", c.encode())
    write("cell", "invalid-utf8", b"%echo caf\xe9 \xff\xfe %matmul --title \xc3")
    write("cell", "cut-utf8-in-name", "%".encode() + ("\u00e9" * 40).encode()[:-1])
    write("cell", "long-magic-name", ("%" + "x" * 200 + "?").encode())
    write("cell", "many-continuations", ("%echo " + "word \\\n" * 40 + "end").encode())


# ---------------------------------------------------------------- fuzz_frame

def frame(obj) -> bytes:
    b = dumps(obj)
    return struct.pack(">I", len(b)) + b


def frame_seeds() -> None:
    hello = {"op": "hello", "backend": "cpu", "note": "no CUDA device"}
    stream = {"op": "stream", "name": "stdout", "text": "hello\n"}
    result = {"op": "result", "doc": {"magic": "device", "backend": "cpu", "runs": [{"time_ms": 0.27}]},
              "view": {"title": "x", "blocks": []}, "display_id": "d1", "mode": 1}
    error = {"op": "error", "ename": "UsageError", "evalue": "bad --size", "traceback": ["line"]}
    done = {"op": "done"}
    run = {"op": "run", "magic": "echo", "params": {"text": "hi", "stderr": False}, "body": None}
    seeds = {
        "hello": frame(hello), "stream": frame(stream), "result": frame(result), "error": frame(error),
        "done": frame(done), "run": frame(run),
        "session": frame(hello) + frame(stream) + frame(result) + frame(done),
        "error-session": frame(stream) + frame(error) + frame(done),
        "empty-frame": struct.pack(">I", 0),
        "empty-object": struct.pack(">I", 2) + b"{}",
        "too-big": struct.pack(">I", (256 << 20) + 1) + b"{}",
        "incomplete": struct.pack(">I", 100) + b"{\"op\":\"stream\"",
        "short-header": b"\x00\x00",
        "invalid-json": struct.pack(">I", 5) + b"{op:}",
        "invalid-utf8": struct.pack(">I", 12) + b"{\"a\":\"\xff\xfe\xfd\"}",
        "scalar": struct.pack(">I", 2) + b"42",
        "deep": frame(json.loads("[" * 100 + "]" * 100)),
        "reals": frame({"x": [0.1, -0.0, 1e308, 5e-324, 123456789012345678]}),
        "unicode": frame({"text": "h\u00e9 \u65e5 \U0001f680 \\u0000"}),
        "trailing-garbage": frame(done) + b"\x00\x00\x00\x03{}x",
        "chunk-1": frame(stream) + frame(done) + b"\x00",
        "chunk-7": frame(result) + b"\x05",
        "chunk-4096": frame(hello) * 3 + b"\x07",
    }
    for name, data in seeds.items():
        write("frame", name, data)


# ---------------------------------------------------------------- fuzz_chain

def chain_seeds() -> None:
    """The header of fuzz_chain.c: mode (bit 7: N up to 65535), N little endian, a unit or nesting
    pair by index (modulo the target's table, so the seeds need not know its size), then
    PREFIX NUL UNIT NUL SUFFIX."""
    def seed(mode: int, n: int, index: int, prefix: bytes = b"", unit: bytes = b"", suffix: bytes = b"") -> bytes:
        return bytes([mode, n & 0xFF, n >> 8, index]) + prefix + b"\0" + unit + b"\0" + suffix
    for i in range(96):                                  # every unit, past the term limit
        write("chain", f"unit-{i:02d}", seed(0x80, 5000, i))
    for i in range(16):                                  # every nesting, at and far past the limit
        write("chain", f"nest-{i:02d}-64", seed(2, 64, i))
        write("chain", f"nest-{i:02d}-20000", seed(0x82, 20000, i))
    write("chain", "mix-all", seed(0x81, 65535, 0))
    write("chain", "mix-picked", seed(1, 8191, 0, unit=bytes(range(0, 96, 7))))
    write("chain", "sum-1000", seed(0, 999, 0, prefix=b"1"))
    write("chain", "sum-limit", seed(0, 4095, 0, prefix=b"1"))
    write("chain", "fields", seed(0, 30000, 0, prefix=b"matmul", unit=b".x"))
    write("chain", "indexes", seed(0x80, 30000, 0, prefix=b"histo.big", unit=b"[0]"))
    write("chain", "selector", seed(0, 5000, 0, prefix=b"count(matmul[tile=8", unit=b",tile=8", suffix=b"])"))
    write("chain", "arguments", seed(0, 5000, 0, prefix=b"min(1", unit=b",1", suffix=b")"))
    write("chain", "comparisons", seed(0, 5000, 0, prefix=b"1", unit=b" < 2"))
    write("chain", "overflow", seed(0, 40, 0, prefix=b"1e300", unit=b"*1e300"))
    write("chain", "megabyte", seed(0x80, 65535, 0, prefix=b"1", unit=b"+1" * 8))


if __name__ == "__main__":
    wire_seeds()
    conn_seeds()
    cell_seeds()
    frame_seeds()
    chain_seeds()
    for t in ("wire", "conn", "cell", "frame", "chain"):
        n = len(list((HERE / "corpus" / t).glob("seed-*")))
        print(f"tests/fuzz/corpus/{t}: {n} seeds")
