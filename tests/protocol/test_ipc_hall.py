"""test_ipc_hall.py — a small lecture hall over the IPC transport: several kernels started at once by
jupyter_client with `KernelManager.transport = "ipc"` (what bench/lecture_hall.py and the hub's
single-user configuration use, because kernels sharing a host race for TCP ports), each answering a
cell, listening on no TCP port, and leaving no socket file behind once shut down.

The CPU backend is enough: the transport is the kernel process's, not the backend's.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psutil

from conftest import execute, outputs, streams, summary

RESULT = "application/vnd.cudalab.result+json"
KERNELS = 4     # at once: enough for their starts to overlap, few enough for two shared cores


def test_kernels_started_at_once_over_ipc_each_run_a_cell(start_kernel, tmp_path):
    with ThreadPoolExecutor(KERNELS) as pool:
        pairs = list(pool.map(lambda _: start_kernel(transport="ipc", env={"CUDALAB_BACKEND": "cpu"}),
                              range(KERNELS)))

    prefixes = set()
    for km, kc in pairs:
        info = km.get_connection_info()
        assert info["transport"] == "ipc"
        prefixes.add(info["ip"])
        ports = [info[f"{c}_port"] for c in ("shell", "iopub", "stdin", "control", "hb")]
        for port in ports:
            assert (tmp_path.joinpath(f"{info['ip']}-{port}")).is_socket(), f"no socket {info['ip']}-{port}"
        proc = psutil.Process(km.provisioner.process.pid)
        assert [c for c in proc.net_connections(kind="inet")] == [], "an ipc kernel listens on a TCP port"
    assert len(prefixes) == KERNELS, f"kernels share socket paths: {sorted(prefixes)}"

    # each kernel runs a cell in its device worker, and answers it alone (its echo is its own)
    with ThreadPoolExecutor(KERNELS) as pool:
        results = list(pool.map(lambda i: execute(pairs[i][1], f"%echo hall seat {i}\n%device --brief"),
                                range(KERNELS)))
    for i, (reply, msgs) in enumerate(results):
        assert reply["content"]["status"] == "ok", reply["content"]
        assert streams(msgs, "stdout") == [f"hall seat {i}\n"], summary(msgs)
        assert streams(msgs, "stderr") == [], summary(msgs)
        docs = [m["content"]["data"][RESULT] for m in outputs(msgs) if RESULT in m["content"].get("data", {})]
        assert [(d["magic"], d["backend"]) for d in docs] == [("device", "cpu")], summary(msgs)

    sockets = [tmp_path.joinpath(f"{km.get_connection_info()['ip']}-{km.get_connection_info()[f'{c}_port']}")
               for km, _ in pairs for c in ("shell", "iopub", "stdin", "control", "hb")]
    for km, kc in pairs:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    assert [s for s in sockets if s.exists()] == [], "socket files left behind"
