"""test_ranking.py — the board's ranking: scores against the run's own reference ladder, ties by
overlapping intervals (and a noisy kernel that tries to buy a tie), the physical bound (a time
driven toward zero, a size that collapses the geometric mean), one entry per student however many
they submit, and the anonymised student view with two neighbours each side, from the store's rows.
"""
from __future__ import annotations

import json
import math

import pytest

import board_db  # noqa: F401  (board/ on sys.path)
from cudalab_board import ranking, store  # noqa: E402


def entry(user, score, rel=0.01, t=0.0, **kw):
    return dict({"id": sum(map(ord, user)), "user": user, "name": f"k_{user}", "median_ms": score,
                 "ci95_rel": rel, "score": score, "score_lo": score * (1 - rel),
                 "score_hi": score * (1 + rel), "submitted_at": t}, **kw)


# ---- scores ----

def test_score_is_the_geometric_mean_of_ratios_to_the_fastest_reference():
    s = ranking.score_sizes([{"median_ms": 4.0, "ci95_rel": 0.02, "reference_ms": 1.0},
                             {"median_ms": 9.0, "ci95_rel": 0.04, "reference_ms": 9.0}])
    assert s.score == pytest.approx(2.0)                       # sqrt(4 × 1)
    assert s.median_ms == pytest.approx(6.0)                   # sqrt(4 × 9)
    assert s.score_lo == pytest.approx(2.0 * math.sqrt(0.98 * 0.96))
    assert s.score_hi == pytest.approx(2.0 * math.sqrt(1.02 * 1.04))
    assert s.ci95_rel == pytest.approx(math.sqrt(1.02 * 1.04) - 1)


def test_a_slower_clock_in_one_run_moves_times_not_the_score():
    fast = ranking.score_sizes([{"median_ms": 2.0, "ci95_rel": 0.01, "reference_ms": 1.0}])
    slow = ranking.score_sizes([{"median_ms": 3.0, "ci95_rel": 0.01, "reference_ms": 1.5}])
    assert slow.score == pytest.approx(fast.score) and slow.median_ms > fast.median_ms


@pytest.mark.parametrize("sizes", [
    [],
    [{"median_ms": 0.0, "ci95_rel": 0.01, "reference_ms": 1.0}],
    [{"median_ms": -1.0, "ci95_rel": 0.01, "reference_ms": 1.0}],
    [{"median_ms": float("nan"), "ci95_rel": 0.01, "reference_ms": 1.0}],
    [{"median_ms": 1.0, "ci95_rel": 1.0, "reference_ms": 1.0}],
    [{"median_ms": 1.0, "ci95_rel": 0.01, "reference_ms": 0.0}],
])
def test_a_score_is_never_made_of_impossible_figures(sizes):
    with pytest.raises(ValueError):
        ranking.score_sizes(sizes)


# ---- the physical bound ----

def test_a_time_below_the_physical_bound_is_impossible():
    flops = 2.0 * 1000 * 1100 * 900                            # one matmul at the hidden size
    peak = 60e12                                               # FLOP/s
    least = ranking.physical_bound_ms(flops, peak)
    assert least == pytest.approx(flops / peak * 1e3)
    size = "--m 1000 --n 1100 --k 900"
    assert ranking.impossible_finding(least, work=flops, peak_per_s=peak, bound="flops",
                                      size=size) is None
    assert ranking.impossible_finding(least * 50, work=flops, peak_per_s=peak, bound="flops",
                                      size=size) is None
    finding = ranking.impossible_finding(least * 0.9, work=flops, peak_per_s=peak,
                                         bound="flops", size=size)
    assert finding.startswith("impossible: ") and size in finding
    assert "1.98 GFLOP" in finding and "60 TFLOP/s" in finding


@pytest.mark.parametrize("time_ms", [1e-9, 0.0, -0.5, float("nan"), float("-inf")])
def test_a_time_driven_toward_zero_is_impossible(time_ms):
    # a kernel that returns at once (or a patched timer) to collapse the geometric mean
    finding = ranking.impossible_finding(time_ms, work=64e6, peak_per_s=3.3e12, bound="bytes",
                                         size="--n 16777216")
    assert finding.startswith("impossible: ") and "bandwidth of 3.3 TB/s" in finding


def test_unknown_bounds_are_an_error():
    with pytest.raises(ValueError):
        ranking.impossible_finding(1.0, work=1.0, peak_per_s=1.0, bound="watts", size="")
    with pytest.raises(ValueError):
        ranking.physical_bound_ms(0.0, 1e12)


# ---- ranks and ties ----

def test_overlapping_intervals_share_a_rank_and_ranks_skip_past_ties():
    ranked = ranking.rank_entries([entry("c", 1.50), entry("a", 1.00), entry("b", 1.015),
                                   entry("d", 2.00), entry("e", 2.00, rel=0.0)])
    assert [(e["user"], e["rank"], e["tied"]) for e in ranked] == \
        [("a", 1, True), ("b", 1, True), ("c", 3, False), ("d", 4, True), ("e", 4, True)]


def test_a_noisy_kernel_cannot_stretch_its_interval_into_a_tie_with_the_leader():
    honest = entry("leader", 1.00, rel=0.01)
    noisy = entry("mallory", 1.30, rel=0.9)                    # its interval covers the leader's
    ranked = ranking.rank_entries([noisy, honest])
    assert [(e["user"], e["rank"], e["tied"]) for e in ranked] == \
        [("leader", 1, False), ("mallory", 2, False)]


def test_equal_scores_rank_the_earlier_submission_first():
    ranked = ranking.rank_entries([entry("late", 1.0, rel=0.0, t=20.0),
                                   entry("early", 1.0, rel=0.0, t=10.0)])
    assert [e["user"] for e in ranked] == ["early", "late"] and ranked[0]["tied"]


def test_a_student_holds_one_entry_however_many_they_submit():
    rows = [entry("mallory", 1.0 + i / 10, t=i) for i in range(20)] + [entry("alice", 1.05)]
    best = ranking.best_per_user(rows)
    assert sorted((e["user"], e["score"]) for e in best) == [("alice", 1.05), ("mallory", 1.0)]


# ---- what each viewer sees ----

@pytest.fixture
def class_board(tmp_path):
    """A board in a real store: ten students ranked (u0 fastest), two failed, two aliases."""
    db = store.open_store(f"sqlite:///{tmp_path / 'board.db'}")
    users = [f"u{i}" for i in range(10)]
    for i, user in enumerate(reversed(users)):                  # u9 submitted first: student 1
        db.enqueue_submission("ps2.matmul", user, f"k{i}", "matmul", "src", now=100.0 + i)
    for user in ("u3", "u7"):
        db.enqueue_submission("ps2.matmul", user, "cheat", "matmul", "src", now=200.0)
    while (sub := db.claim_next_submission()) is not None:
        if sub["name"] == "cheat":
            db.fail_submission(sub["id"], "rep 2 of 9 returned a result of other inputs", line=7)
            continue
        rank = int(sub["user"][1:])
        score = ranking.score_sizes([{"median_ms": 1.0 + rank, "ci95_rel": 0.01,
                                      "reference_ms": 1.0}])
        db.rank_submission(sub["id"], **score._asdict())
    yield db.board("ps2.matmul")
    db.close()


def view(board, viewer, instructor=False):
    return ranking.board_document("ps2.matmul", "Matrix multiply", board, viewer, instructor)


@pytest.mark.parametrize("viewer,ranks", [("u5", [4, 5, 6, 7, 8]), ("u0", [1, 2, 3]),
                                          ("u1", [1, 2, 3, 4]), ("u9", [8, 9, 10])])
def test_a_student_sees_their_entry_and_two_neighbours_each_side(class_board, viewer, ranks):
    doc = view(class_board, viewer)
    assert [e["rank"] for e in doc["entries"]] == ranks
    mine = [e for e in doc["entries"] if e["you"]]
    assert len(mine) == 1 and mine[0]["user"] == "you"
    # others by their stable alias (order of first submission: u9 is student 1), never a name
    for e in doc["entries"]:
        if not e["you"]:
            user = f"u{e['rank'] - 1}"
            assert e["user"] == f"student {class_board.aliases[user]}" == f"student {10 - e['rank'] + 1}"
    body = json.dumps(doc)
    others = [f'"u{i}"' for i in range(10) if f"u{i}" != viewer]
    assert not [u for u in others if u in body] and f'"{viewer}"' not in body


def test_a_student_sees_only_their_own_failures(class_board):
    assert view(class_board, "u3")["failed"] == [
        {"user": "you", "name": "cheat", "finding": "rep 2 of 9 returned a result of other inputs",
         "line": 7}]
    assert view(class_board, "u4")["failed"] == []


def test_a_student_with_no_entry_sees_no_one(class_board):
    doc = view(class_board, "newcomer")
    assert doc["entries"] == [] and doc["failed"] == []


def test_an_instructor_sees_everyone_by_name(class_board):
    doc = view(class_board, "prof", instructor=True)
    assert [(e["rank"], e["user"], e["you"]) for e in doc["entries"]] == \
        [(i + 1, f"u{i}", False) for i in range(10)]
    assert sorted(f["user"] for f in doc["failed"]) == ["u3", "u7"]
    assert set(doc) == {"problem", "title", "gpu", "clock_mhz", "run_at", "backend", "references",
                        "entries", "failed", "queue"}
    assert set(doc["entries"][0]) == {"rank", "tied", "user", "you", "name", "median_ms",
                                      "ci95_rel", "score", "submitted_at"}
