"""test_hostile_conn.py — edges of the connection file (issue 11, item 12), through jupyter_client.

  * All ports 0, tcp or ipc: the kernel binds free ones and writes them back to its connection
    file (as ipykernel does), so a client that reads the file once the kernel has started connects.
  * "ip": "localhost" (any host name) is resolved to the address that is bound.
  * Every SHA-2 signature_scheme (hmac-sha224/256/384/512) works with jupyter_client's Session;
    a message signed with another hash is dropped.
  * A scheme outside that family, or a host name that does not resolve, stops the kernel at once:
    one clear line on its stderr and a non-zero exit, not a kernel nobody can reach.

Every kernel that starts is watched by a HeartbeatMonitor.
"""
from __future__ import annotations

import json
import stat
import subprocess
import time
import uuid

import psutil
import pytest
import zmq
from jupyter_client.session import Session

from conftest import (SILENCE, TIMEOUT, HeartbeatMonitor, SpawnedKernel, execute, free_tcp_ports,
                      streams)

pytestmark = pytest.mark.serial    # heartbeat stalls bounded in wall-clock time: run alone (conftest.py)

PORT_KEYS = ["shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"]
SCHEMES = ["hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"]
SUPPORTED = ", ".join(SCHEMES)


def conn_info(ip: str = "127.0.0.1", transport: str = "tcp", ports: list[int] | None = None,
              scheme: str = "hmac-sha256") -> dict:
    ports = free_tcp_ports(5) if ports is None else ports
    return {**dict(zip(PORT_KEYS, ports)), "ip": ip, "transport": transport, "key": uuid.uuid4().hex,
            "signature_scheme": scheme, "kernel_name": "cudalab"}


def written_back(sk: SpawnedKernel, timeout: float = TIMEOUT) -> dict:
    """The kernel's connection file once it holds the ports the kernel was given (it is replaced
    whole, never seen half written)."""
    deadline = time.monotonic() + timeout
    while True:
        assert sk.proc.poll() is None, f"the kernel exited {sk.proc.returncode}:\n{sk.log.text()}"
        conn = json.loads(sk.conn_file.read_text())
        if all(conn[k] for k in PORT_KEYS):
            return conn
        assert time.monotonic() < deadline, \
            f"ports still 0 in {sk.conn_file} after {timeout} s:\n{sk.log.text()}"
        time.sleep(0.02)


def let_it_ping(hb: HeartbeatMonitor) -> None:
    """Keeps the monitor on for a few pings (its count is read only when it stops, and a quick
    test body could end before its first echo)."""
    time.sleep(4 * hb.period)


def run_echo(sk: SpawnedKernel, conn: dict) -> None:
    """Connects a jupyter_client client with conn, and runs a cell, under a heartbeat monitor."""
    sk.conn = conn
    with HeartbeatMonitor(conn) as hb:
        kc = sk.client()
        reply, msgs = execute(kc, "%echo reached")
        assert reply["content"]["status"] == "ok", reply["content"]
        assert streams(msgs) == ["reached\n"]
        let_it_ping(hb)
    hb.check(0.5)


@pytest.mark.parametrize("transport,ip", [("tcp", "127.0.0.1"), ("tcp", "localhost"), ("ipc", None)],
                         ids=["tcp", "tcp-localhost", "ipc"])
def test_ports_of_zero_are_chosen_and_written_back(spawn_conn, tmp_path, transport, ip):
    ip = ip or str(tmp_path / "kernel-ipc")
    conn = conn_info(ip, transport, ports=[0] * 5)
    sk = spawn_conn(conn)
    back = written_back(sk)
    ports = [back[k] for k in PORT_KEYS]
    assert len(set(ports)) == 5, f"ports not distinct: {ports}"
    # everything else is as it was written, the key still readable by its owner only
    assert {k: v for k, v in back.items() if k not in PORT_KEYS} == \
        {k: v for k, v in conn.items() if k not in PORT_KEYS}
    assert stat.S_IMODE(sk.conn_file.stat().st_mode) == 0o600
    if transport == "ipc":      # as ipykernel and jupyter_client pick them: free suffixes from 1
        assert ports == [1, 2, 3, 4, 5]
        assert all((tmp_path / f"kernel-ipc-{p}").exists() for p in ports)
    run_echo(sk, back)


def test_ipc_ports_of_zero_skip_files_that_exist(spawn_conn, tmp_path):
    prefix = tmp_path / "busy"
    (tmp_path / "busy-1").write_text("someone else's socket")
    sk = spawn_conn(conn_info(str(prefix), "ipc", ports=[0, 0, 2, 0, 0]))
    back = written_back(sk)
    assert [back[k] for k in PORT_KEYS] == [3, 4, 2, 5, 6]
    run_echo(sk, back)


def test_given_ports_leave_the_file_alone(spawn_conn):
    sk = spawn_conn(conn_info())
    before = sk.conn_file.read_bytes()
    run_echo(sk, sk.conn)
    assert sk.conn_file.read_bytes() == before


def test_ip_localhost_binds_the_loopback(spawn_conn):
    conn = conn_info("localhost")
    sk = spawn_conn(conn)
    run_echo(sk, conn)
    listening = {(c.laddr.ip, c.laddr.port) for c in psutil.Process(sk.pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN}
    assert listening == {("127.0.0.1", conn[k]) for k in PORT_KEYS}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_sha2_scheme_works_with_jupyter_client(spawn_conn, scheme):
    conn = conn_info(scheme=scheme)
    sk = spawn_conn(conn)
    run_echo(sk, conn)
    assert sk.kc.session.signature_scheme == scheme    # the client signed and checked with it

    # a message signed with another SHA-2 hash, same key: dropped with one log line
    other = Session(key=conn["key"].encode(), signature_scheme="hmac-sha512" if scheme != "hmac-sha512"
                    else "hmac-sha256")
    right = Session(key=conn["key"].encode(), signature_scheme=scheme)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://127.0.0.1:{conn['shell_port']}")
    try:
        other.send(sock, "kernel_info_request", {})
        assert not sock.poll(int(SILENCE * 1000)), "the kernel answered a wrongly signed message"
        sent = right.send(sock, "kernel_info_request", {})
        assert sock.poll(int(TIMEOUT * 1000)), f"no reply to a {scheme} message"
        _, reply = right.feed_identities(sock.recv_multipart())
        reply = right.deserialize(reply)             # checks the kernel's signature
        assert reply["parent_header"]["msg_id"] == sent["header"]["msg_id"]
    finally:
        ctx.destroy(linger=0)
    assert [l.split("] ", 1)[1] for l in sk.log.lines("dropped")] == \
        ["dropped shell message: signature of wrong length"], sk.log.text()


def refused_cases() -> list[tuple[str, dict, str]]:
    return [
        ("hmac-md5", {"signature_scheme": "hmac-md5"},
         f'signature_scheme "hmac-md5" is not supported (supported: {SUPPORTED})'),
        ("hmac-sha1", {"signature_scheme": "hmac-sha1"},
         f'signature_scheme "hmac-sha1" is not supported (supported: {SUPPORTED})'),
        ("hmac-sha3_256", {"signature_scheme": "hmac-sha3_256"},
         f'signature_scheme "hmac-sha3_256" is not supported (supported: {SUPPORTED})'),
        ("unresolvable", {"ip": "nonexistent-host.invalid"},
         'ip "nonexistent-host.invalid" does not resolve to an address: '),
        ("not-a-name", {"ip": "no such host"}, 'ip "no such host" does not resolve to an address: '),
    ]


@pytest.mark.parametrize("case", range(len(refused_cases())), ids=[c[0] for c in refused_cases()])
def test_refused_at_startup_with_one_clear_line(spawn_conn, case):
    name, change, message = refused_cases()[case]
    sk = spawn_conn({**conn_info(), **change})
    try:
        rc = sk.proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: the kernel is still running {TIMEOUT} s after its start")
    assert rc == 2, f"{name}: exit code {rc}"
    lines = sk.log.lines()
    assert len(lines) == 1 and f"] connection file: {message}" in lines[0], lines


def test_address_of_another_machine_is_a_startup_error(spawn_conn):
    """An address this machine does not have (TEST-NET-1) cannot be bound: exit, saying so."""
    sk = spawn_conn(conn_info("192.0.2.1"))
    try:
        rc = sk.proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the kernel is still running {TIMEOUT} s after its start")
    assert rc != 0
    assert sk.log.lines("cannot bind shell socket to tcp://192.0.2.1:"), sk.log.text()
