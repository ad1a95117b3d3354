"""The board's runner (issue 35) on the CPU backend, driving a real cudalab kernel through jupyter_client:
an honest submission is timed at every hidden size and seed with the problem's references in the same run
and every rep checked, and is ranked with its score; a kernel that does not build, fails its quick check,
misses a lesson or hangs is failed with its finding and line; the physical bound turns a time faster than
the device's roof into "impossible"; the runner's lanes take submissions in order, two at a time, in warm
kernels, each run timed alone, and say when each problem's board changed; a hostile submission (one that
leaves state, crashes, hangs) does not reach the next in a warm kernel; the problems file refuses what
would change the timing."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from board_runs import (CPU, HONEST_ADD, PROBLEMS, REPO, TILED_MATMUL, MemoryStore, board, run_all, vecadd)  # noqa: F401
from cudalab_board.problems import ProblemError, load_problems, problem_from_json, submission_flags
from cudalab_board.runner import (CHECK_REPS_FLAG, LANES_ENV, PIPELINE_LANES, SCRUBBED_ENV, Runner,
                                  default_lanes, physical_bound, unchecked_reps)
from conftest import kernel_binary

# The CPU runner's reps per run (CL_SIMT_MAX_REPS, include/cudalab/simt.h): --reps auto stops there.
CPU_RUNNER_REPS = 3


def test_honest_vecadd_is_ranked_at_every_hidden_size_against_its_reference(board):
    store, runner = board
    sid = store.submit("t.vecadd", vecadd())
    run_all(store, runner)
    sub = store.subs[sid]
    assert sub["status"] == "ranked", sub
    res = sub["result"]
    problem = PROBLEMS["t.vecadd"]
    assert [(r["size"], r["seed"]) for r in res["sizes"]] == problem.timed_runs()
    for row in res["sizes"]:
        assert row["reps"] == CPU_RUNNER_REPS                 # every timed rep, each checked (the CPU runner)
        assert row["reps_checked"] == row["reps"]             # as the backend said it
        assert set(row["references"]) == {"builtin"}          # the reference ran in the same run
        assert row["median_ms"] > 0 and row["bound"]["bound_ms"] < row["median_ms"]
    assert res["backend"] == "cpu" and res["gpu"] and res["run_at"]
    assert [r["variant"] for r in res["references"]] == ["builtin"]
    # the score is the geometric mean of the sizes' ratios to the fastest reference: recomputed here
    ratios = [row["median_ms"] / row["references"]["builtin"]["median_ms"] for row in res["sizes"]]
    assert res["score"] == pytest.approx((ratios[0] * ratios[1]) ** 0.5)
    assert res["gpu_ms"] > 0 and res["wall_s"] > 0
    assert res["timing"].startswith("--reps auto")


def test_tiled_matmul_under_two_seeds_is_ranked_with_a_flops_bound(board):
    store, runner = board
    sid = store.submit("t.matmul", TILED_MATMUL)
    run_all(store, runner)
    sub = store.subs[sid]
    assert sub["status"] == "ranked", sub
    rows = sub["result"]["sizes"]
    assert [r["seed"] for r in rows] == [31, 41]
    for row in rows:
        assert row["bound"]["unit"] == "GFLOP/s" and row["bound"]["bound_ms"] < row["median_ms"]
        assert set(row["references"]) == {"naive", "tiled"}


def test_build_errors_quick_checks_and_lessons_fail_with_their_finding_and_line(board):
    store, runner = board
    broken = store.submit("t.vecadd", vecadd("if (i < n) C[i] = A[i] + B[i]  // no semicolon"))
    wrong = store.submit("t.vecadd", vecadd("if (i < n) C[i] = A[i] - B[i];"), name="myadd")
    naive = store.submit("t.matmul", TILED_MATMUL.replace("As[ty][k] * Bs[k][tx]",
                                                          "A[row * K + p * TILE + k] * B[(p * TILE + k) * N + col]")
                         .replace("for (int k = 0; k < TILE; k++)", "for (int k = 0; k < TILE && p * TILE + k < K && row < M && col < N; k++)"))
    bad_flags = store.submit("t.vecadd", vecadd(), flags="--name other")
    run_all(store, runner)
    s = store.subs
    assert s[broken]["status"] == "failed" and "CompileError" in s[broken]["finding"], s[broken]
    assert s[broken]["line"] == 6, s[broken]      # the closing brace after the missing semicolon (%%kernel is line 1)
    assert s[wrong]["status"] == "failed" and "CheckError" in s[wrong]["finding"], s[wrong]
    assert "sub_" not in s[wrong]["finding"] and "myadd" in s[wrong]["finding"], s[wrong]   # the student's name
    assert s[naive]["status"] == "failed", s[naive]
    assert s[naive]["finding"].startswith("lesson check "), s[naive]
    assert s[bad_flags]["status"] == "failed" and "--name" in s[bad_flags]["finding"]
    assert store.ranked() == []


def test_a_kernel_that_hangs_is_failed_and_the_next_submission_runs_in_a_fresh_kernel(tmp_path):
    store = MemoryStore()
    runner = Runner(store, PROBLEMS, kernel_binary(), env={**os.environ, **CPU, "CUDALAB_KERNEL_TIMEOUT": "2"},
                    cache_dir=tmp_path / "c2", cell_timeout_s=15)
    try:
        warm = store.submit("t.vecadd", vecadd())
        hang = store.submit("t.vecadd", vecadd("volatile int spin = 1;\n    while (spin) {}\n    " + HONEST_ADD))
        good = store.submit("t.vecadd", vecadd())
        run_all(store, runner)
    finally:
        runner.close()
    s = store.subs
    assert s[hang]["status"] == "failed", s[hang]
    assert s[good]["status"] == "ranked", s[good]
    # the hang ran in the warm kernel of the honest one before it; the kernel it hung in was not reused
    assert [s[i]["result"]["kernel_turn"] for i in (warm, hang, good)] == [1, 2, 1]


def test_state_a_ranked_kernel_leaves_in_a_warm_kernel_does_not_reach_the_next(board):
    """A writes a __device__ variable and ranks, so its kernel stays warm; B, next in the same kernel,
    declares the same variable and adds it to every element: B is right only if it starts from zero."""
    store, runner = board
    setter = store.submit("t.vecadd", "__device__ int board_state;\n" + vecadd("board_state = 1;\n    " + HONEST_ADD))
    reader = store.submit("t.vecadd", "__device__ int board_state;\n"
                          + vecadd("if (i < n) C[i] = A[i] + B[i] + (float)board_state;"))
    run_all(store, runner)
    s = store.subs
    assert s[setter]["status"] == "ranked" and s[reader]["status"] == "ranked", (s[setter], s[reader])
    assert [s[i]["result"]["kernel_turn"] for i in (setter, reader)] == [1, 2]     # one warm kernel


def test_a_kernel_that_crashes_is_failed_and_the_next_runs_in_a_fresh_kernel(board):
    store, runner = board
    warm = store.submit("t.vecadd", vecadd())
    crash = store.submit("t.vecadd", vecadd("if (i == 0) *(volatile int *)0 = 1;\n    " + HONEST_ADD))
    good = store.submit("t.vecadd", vecadd())
    run_all(store, runner)
    s = store.subs
    assert s[crash]["status"] == "failed" and s[crash]["finding"], s[crash]
    assert s[good]["status"] == "ranked", s[good]
    assert [s[i]["result"]["kernel_turn"] for i in (warm, crash, good)] == [1, 2, 1]


def test_the_physical_bound_rejects_a_time_faster_than_the_roof(board):
    """An honest run's own document, with the device's roof put below what it achieved: impossible."""
    store, runner = board
    sid = store.submit("t.matmul", TILED_MATMUL)
    run_all(store, runner)
    row = store.subs[sid]["result"]["sizes"][0]
    rate, median = row["bound"]["rate"], row["median_ms"]
    run = {"variant": "sub_1", "gflops": rate, "time_ms": {"median": median}}
    honest = physical_bound(PROBLEMS["t.matmul"], {"peak_fp32_gflops": rate * 2}, run)
    assert honest["bound_ms"] == pytest.approx(median / 2)
    fake = physical_bound(PROBLEMS["t.matmul"], {"peak_fp32_gflops": rate / 10}, run)
    assert fake["bound_ms"] == pytest.approx(median * 10) and median < fake["bound_ms"]
    # bytes: the larger of the theoretical and measured bandwidths is the roof
    vec = problem_from_json("v", {"family": "vecadd", "sizes": ["--size 9"], "bound": "bytes"})
    b = physical_bound(vec, {"peak_bandwidth_gbs": None, "measured_bandwidth_gbs": 10.0},
                       {"kernel_gbs": 40.0, "time_ms": {"median": 1.0}})
    assert b["bound_ms"] == pytest.approx(4.0)
    assert physical_bound(problem_from_json("n", {"family": "vecadd", "sizes": ["--size 9"]}), {}, run) is None


def test_the_lanes_pipeline_turns_in_warm_kernels_each_run_timed_alone(tmp_path):
    """Two lanes take two submissions at once (one built and checked while the other is timed); no more
    than two are ever running; each lane's second turn reuses its kernel; every run says it was timed alone
    (the kernels' admission: a run that was not would be an error, never a rank)."""
    store = MemoryStore()
    changed = []
    runner = Runner(store, PROBLEMS, kernel_binary(), env={**os.environ, **CPU, "JUPYTERHUB_API_TOKEN": "secret"},
                    cache_dir=tmp_path / "cache", on_change=changed.append, lanes=2)
    assert not any(k in runner.env for k in SCRUBBED_ENV)        # the service's token never reaches a kernel
    ids = [store.submit("t.vecadd", vecadd()) for _ in range(4)]
    runner.start()
    try:
        runner.wake()
        store.wait_all(timeout=180)
    finally:
        runner.stop(timeout=30)
    running, most = 0, 0
    for event, _ in store.events:
        running += 1 if event == "claim" else -1
        most = max(most, running)
    assert most == 2, store.events                                # pipelined, two lanes, never more
    assert [i for e, i in store.events if e == "claim"] == ids    # taken in queue order
    assert changed == ["t.vecadd"] * 4
    assert all(store.subs[i]["status"] == "ranked" for i in ids), store.subs
    # two kernels started, one a lane, and each lane counts its turns 1, 2, …: which lane is free first
    # decides how the four split (2 + 2 usually; 3 + 1 on a loaded machine)
    turns = sorted(store.subs[i]["result"]["kernel_turn"] for i in ids)
    assert turns in ([1, 1, 2, 2], [1, 1, 2, 3]), turns
    assert all(row["timed_alone"] for i in ids for row in store.subs[i]["result"]["sizes"])
    with pytest.raises(ValueError):
        Runner(store, PROBLEMS, kernel_binary(), lanes=0)
    # the host's choice of lanes: CUDALAB_BOARD_LANES, a bad value said and refused
    assert default_lanes({LANES_ENV: "6"}) == 6 and default_lanes({}) == PIPELINE_LANES
    assert default_lanes({LANES_ENV: "0"}) == default_lanes({LANES_ENV: "two"}) == PIPELINE_LANES


def test_a_run_whose_backend_checked_fewer_reps_than_it_timed_is_not_ranked(board):
    """The runner reads check.reps_checked, what the backend's harness says it checked: an honest run's own
    document ranks; the same with one rep fewer checked, or none said, does not, and says why."""
    store, runner = board
    sid = store.submit("t.vecadd", vecadd())
    run_all(store, runner)
    assert store.subs[sid]["status"] == "ranked", store.subs[sid]
    row = store.subs[sid]["result"]["sizes"][0]
    honest = {"check": {"passed": True, "reps_checked": row["reps_checked"]}, "time_ms": {"reps": row["reps"]}}
    assert unchecked_reps(honest) is None
    fewer = {**honest, "check": {"passed": True, "reps_checked": row["reps"] - 1}}
    assert f"checked {row['reps'] - 1} of its {row['reps']} timed reps" in unchecked_reps(fewer)
    assert CHECK_REPS_FLAG in unchecked_reps(fewer)
    assert "did not say" in unchecked_reps({**honest, "check": {"passed": True}})


def test_unknown_problem_and_family_mismatch_are_errors_not_runs(board):
    store, runner = board
    sid = store.submit("no.such", vecadd())
    mismatch = store.submit("t.matmul", vecadd())
    store.subs[mismatch]["family"] = "vecadd"
    store.queued[-1]["family"] = "vecadd"
    run_all(store, runner)
    assert store.subs[sid]["status"] == "error" and "unknown problem" in store.subs[sid]["finding"]
    assert store.subs[mismatch]["status"] == "error" and "family" in store.subs[mismatch]["finding"]


def test_problems_file_of_the_course_loads_and_refuses_what_is_the_runners(tmp_path):
    course = load_problems(REPO / "notebooks" / "assignments" / "board-problems.json")
    assert {p.split(".")[0] for p in course} == {"ps2", "ps3"}
    for p in course.values():
        assert p.sizes and p.seeds and p.references
    for bad, says in [({"family": "nope", "sizes": ["--size 1"]}, "family"),
                      ({"family": "vecadd", "sizes": []}, "sizes"),
                      ({"family": "vecadd", "sizes": ["--size 9 --reps 1"]}, "--reps"),
                      ({"family": "vecadd", "sizes": ["--size 9"], "flags": "--no-check"}, "--no-check"),
                      ({"family": "vecadd", "sizes": ["--size 9"], "flags": CHECK_REPS_FLAG}, "--check-reps"),
                      ({"family": "histo", "sizes": ["--size 9"], "bound": "flops"}, "bound"),
                      ({"family": "vecadd", "sizes": ["--size 9"], "seeds": [-1]}, "seeds")]:
        f = tmp_path / "p.json"
        f.write_text(json.dumps({"x.y": bad}))
        with pytest.raises(ProblemError, match=says):
            load_problems(f)
    assert submission_flags("--block 128 --grid 4 --define TILE=32") == "--block 128 --grid 4 --define TILE=32"
    for bad in ("--for matmul", "--check false", "--block '1\n%device'", "--cpu-check off"):
        with pytest.raises(ValueError):
            submission_flags(bad)


def test_results_land_in_the_real_store_ranked_failed_and_the_reference_ladder(tmp_path):
    """Lane store's Store (SQLite): what the runner finishes is what the board reads."""
    from cudalab_board.store import open_store
    store = open_store(f"sqlite:///{tmp_path / 'board.db'}")
    runner = Runner(store, PROBLEMS, kernel_binary(), env={**os.environ, **CPU}, cache_dir=tmp_path / "cache")
    try:
        good = store.enqueue_submission("t.vecadd", "alice", "mine", "vecadd", vecadd().replace("NAME", "sub_1"))
        bad = store.enqueue_submission("t.vecadd", "bob", "lazy", "vecadd",
                                       vecadd("if (n != 100003) return;\n    " + HONEST_ADD).replace("NAME", "sub_2"))
        ids = [good[0], bad[0]]                   # (id, queue position)
        while runner.run_next():
            pass
        assert store.get_submission(ids[0])["status"] == "ranked", store.get_submission(ids[0])
        failed = store.get_submission(ids[1])
        assert failed["status"] == "failed" and "CheckError" in failed["finding"], failed
        data = store.board("t.vecadd")
        assert [e["user"] for e in data.ranked] == ["alice"]
        assert [f["user"] for f in data.failed] == ["bob"]
        assert [r["variant"] for r in data.references] == ["builtin"] and data.run["backend"] == "cpu"
    finally:
        runner.close()
        store.close()
