"""Hostile sweeps and hostile sizes through a real client, with the heartbeat watched throughout.

A sweep of 10,000 cheap points once sent an update_display_data with the whole table before every
point (8,343 messages and 749 MB on iopub, still running after 300 s). Progress is now throttled in
time and small: what is asserted here is the count and size of the updates (bounded by the time the
sweep took, at most one per 250 ms, and far fewer than its points), that the final result has every
run, and that the next cell works. Absurd work is refused before it starts: more points than a sweep
may have, and host work over CUDALAB_HOST_WORK_LIMIT (unless --force)."""
from __future__ import annotations

import json
import time

import pytest

from conftest import HeartbeatMonitor, execute, kernel_conn, outputs, streams
from magics.test_host_work import OVER, SMALL      # the cells the command-line tests use

pytestmark = pytest.mark.serial    # heartbeat stalls bounded in wall-clock time: run alone (conftest.py)

RESULT_MIME_TYPE = "application/vnd.cudalab.result+json"
POINTS = 10_000
THREADS = ",".join(str(t) for t in range(1, 101))
REGS = ",".join(str(r) for r in range(100))
SWEEP = f"%occupancy --threads {THREADS} --regs {REGS}"     # 100 x 100 cheap points
PROGRESS_MAX_BYTES = 16 * 1024      # a progress line and the last few rows, in text and HTML


def size_of(msg: dict) -> int:
    return len(json.dumps(msg["content"], default=str))


def assert_next_cell_works(kc) -> None:
    reply, msgs = execute(kc, "%echo still here")
    assert reply["content"]["status"] == "ok"
    assert streams(msgs, "stdout") == ["still here\n"]


def error_of(reply: dict, msgs: list[dict]) -> dict:
    assert reply["content"]["status"] == "error"
    errors = [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert len(errors) == 1, [m["msg_type"] for m in msgs]
    assert not [m for m in outputs(msgs) if m["msg_type"] != "error"], "output before the refusal"
    return errors[0]


@pytest.fixture
def cpu_kernel(start_kernel):
    return start_kernel(env={"CUDALAB_BACKEND": "cpu"})


@pytest.mark.timeout(300)
def test_a_big_cheap_sweep_sends_few_small_updates(cpu_kernel):
    _, kc = cpu_kernel
    with HeartbeatMonitor(kernel_conn(cpu_kernel)) as hb:
        t0 = time.monotonic()
        reply, msgs = execute(kc, SWEEP, timeout=240)
        elapsed = time.monotonic() - t0
        assert reply["content"]["status"] == "ok", reply["content"]
        # the sweep's own displays (not the line a long command shows, cudalab-run-…)
        displays = [m for m in outputs(msgs) if m["msg_type"] in ("display_data", "update_display_data")
                    and not m["content"]["transient"].get("display_id", "").startswith("cudalab-run-")]
        final = [m for m in displays if RESULT_MIME_TYPE in m["content"]["data"]]
        progress = [m for m in displays if RESULT_MIME_TYPE not in m["content"]["data"]]
        # throttled: the first at once, then at most one per 250 ms of the sweep...
        assert 1 <= len(progress) <= 3 + 4 * elapsed, (len(progress), elapsed)
        assert len(progress) <= POINTS // 10, len(progress)
        # ...and small: never the whole table
        sizes = [size_of(m) for m in progress]
        assert max(sizes) <= PROGRESS_MAX_BYTES, sizes
        assert sum(sizes) <= PROGRESS_MAX_BYTES * len(progress)
        # the final result is one new output with every run, after the progress display's last state:
        # how many points ran in how long (never emptied: a saved notebook would keep an empty output)
        assert len(final) == 1 and final[0]["msg_type"] == "display_data"
        doc = final[0]["content"]["data"][RESULT_MIME_TYPE]
        assert doc["sweep"]["points"] == POINTS and len(doc["runs"]) == POINTS
        assert progress[-1]["msg_type"] == "update_display_data", progress[-1]
        assert f"{POINTS} points done in" in progress[-1]["content"]["data"]["text/plain"], progress[-1]
        assert displays.index(progress[-1]) < displays.index(final[0])
        ids = {m["content"]["transient"].get("display_id") for m in progress}
        assert len(ids) == 1 and None not in ids, ids
        assert not streams(msgs, "stderr")
        assert_next_cell_works(kc)
    hb.check(0.5)


def test_too_many_points_refused_before_anything_runs(cpu_kernel):
    _, kc = cpu_kernel
    threads = ",".join(str(t) for t in range(1, 1001))
    with HeartbeatMonitor(kernel_conn(cpu_kernel)) as hb:
        reply, msgs = execute(kc, f"%occupancy --threads {threads} --regs {REGS}", timeout=30)
        err = error_of(reply, msgs)
        assert err["ename"] == "UsageError"
        assert "this sweep has 100000 points (1000 × 100: --threads, --regs); the limit is 10000" in err["evalue"]
        assert_next_cell_works(kc)
    hb.check(0.5)


@pytest.mark.timeout(120)
def test_host_work_over_the_limit_refused_in_every_family(cpu_kernel):
    _, kc = cpu_kernel
    with HeartbeatMonitor(kernel_conn(cpu_kernel)) as hb:
        for magic, (cell, point) in sorted(OVER.items()):
            reply, msgs = execute(kc, cell, timeout=30)
            err = error_of(reply, msgs)
            assert err["ename"] == "UsageError", err
            assert err["evalue"].startswith(point), err
            assert "of host work, estimated from this host's CPU backend" in err["evalue"], err
            assert "the limit is 30 s (CUDALAB_HOST_WORK_LIMIT)" in err["evalue"], err
            assert err["evalue"].endswith("or --force"), err
        # a sweep each of whose points is under the limit, but not their sum
        reply, msgs = execute(kc, "%reduce --size 2^26 --dtype float,int --variant cpu --reps 400", timeout=30)
        assert "the sweep's 2 points: about" in error_of(reply, msgs)["evalue"]
        assert_next_cell_works(kc)
    hb.check(0.5)


@pytest.mark.timeout(180)
def test_force_runs_over_a_small_limit_in_every_family(start_kernel):
    pair = start_kernel(env={"CUDALAB_BACKEND": "cpu", "CUDALAB_HOST_WORK_LIMIT": "1e-6"})
    _, kc = pair
    with HeartbeatMonitor(kernel_conn(pair)) as hb:
        for magic, cell in sorted(SMALL.items()):
            reply, msgs = execute(kc, cell, timeout=30)
            err = error_of(reply, msgs)
            assert err["evalue"].startswith(f"%{magic} "), err
            assert "the limit is 1e-06 s (CUDALAB_HOST_WORK_LIMIT)" in err["evalue"], err
            reply, msgs = execute(kc, cell + " --force", timeout=60)
            assert reply["content"]["status"] == "ok", reply["content"]
            assert not streams(msgs, "stderr")
            docs = [m["content"]["data"][RESULT_MIME_TYPE] for m in outputs(msgs)
                    if RESULT_MIME_TYPE in m["content"].get("data", {})]
            doc = [d for d in docs if d.get("magic") == magic][-1]
            assert doc["params"]["force"] is True
            runs = doc["runs"] if "runs" in doc else [doc["run"]]
            assert runs and all(r["check"]["passed"] for r in runs), runs
        # a magic with no host work is not held to the limit
        reply, _ = execute(kc, "%occupancy --threads 64,128 --regs 32", timeout=30)
        assert reply["content"]["status"] == "ok"
        assert_next_cell_works(kc)
    hb.check(0.5)
