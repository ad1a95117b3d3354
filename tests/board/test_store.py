"""test_store.py — the board's store against both databases it supports: SQLite (a WAL file, refused
on a network filesystem) and PostgreSQL (a private cluster from Debian's package, conftest.py's
pg_cluster): migrations and schema_version, the queue (positions, atomic claims from many threads
and two stores at once), the per-student rate limit under a burst of concurrent posts, boards
(aliases, the latest run), quick checks (latest per student, 30 students at once, hostile bodies).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import threading

import pytest

from board_db import db_url, pg_cluster, pg_url  # noqa: F401  (fixtures; board/ on sys.path)
from cudalab_board import ranking, store  # noqa: E402

PROBLEM = "ps2.matmul"


@pytest.fixture
def db(db_url):
    s = store.open_store(db_url)
    yield s
    s.close()


def submit(db, user, name="tiled", problem=PROBLEM, **kw):
    return db.enqueue_submission(problem, user, name, "matmul", f"// {user}'s {name}", **kw)


def run_concurrently(count, work):
    """work(i) in count threads started together; [(result or exception)] in order of i."""
    results = [None] * count
    barrier = threading.Barrier(count)

    def one(i):
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as e:   # the caller asserts on which
            results[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


# ---- migrations ----

def test_migrations_apply_once_in_order_and_refuse_a_newer_schema(db_url, tmp_path):
    first = store.open_store(db_url)
    assert first.schema_version() == [(1, "initial")]
    sub_id, _ = submit(first, "alice")
    first.close()

    again = store.open_store(db_url)          # nothing reapplied: the row is still there
    assert again.schema_version() == [(1, "initial")]
    assert again.get_submission(sub_id)["user"] == "alice"
    again.close()

    newer = tmp_path / "migrations"
    shutil.copytree(store.MIGRATIONS_DIR, newer)
    (newer / "0002_kernel_notes.sql").write_text(
        "-- a later migration: a column and a table\n"
        "ALTER TABLE submissions ADD COLUMN note TEXT NOT NULL DEFAULT 'none';\n"
        "CREATE TABLE notes (id @ID_PK@, body TEXT);\n")
    upgraded = store.open_store(db_url, newer)
    assert upgraded.schema_version() == [(1, "initial"), (2, "kernel_notes")]
    assert upgraded._one("SELECT note FROM submissions WHERE id = ?", (sub_id,))["note"] == "none"
    upgraded.close()

    with pytest.raises(store.SchemaTooNew, match="schema version 2"):
        store.open_store(db_url)              # this code knows only 0001


def test_a_misnamed_migration_is_refused(tmp_path):
    bad = tmp_path / "migrations"
    bad.mkdir()
    (bad / "2_x.sql").write_text("CREATE TABLE t (x INTEGER);")
    with pytest.raises(store.StoreError, match="NNNN_name.sql"):
        store.open_store(f"sqlite:///{tmp_path / 'b.db'}", bad)


def test_unknown_urls_are_refused(tmp_path):
    for url in ("mysql://x/y", "sqlite://relative.db", "sqlite:///:memory:", str(tmp_path)):
        with pytest.raises(store.StoreError):
            store.open_store(url)


# ---- SQLite: WAL, and never on a network filesystem ----

def test_sqlite_is_in_wal_mode(tmp_path):
    path = tmp_path / "board.db"
    s = store.open_store(f"sqlite:///{path}")
    submit(s, "alice")
    assert os.path.exists(f"{path}-wal")
    with sqlite3.connect(path) as other:      # WAL is the file's mode, not only our connection's
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s.close()


def test_filesystem_type_agrees_with_findmnt(tmp_path):
    if not shutil.which("findmnt"):
        pytest.skip("findmnt (util-linux) not installed")
    want = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(tmp_path)],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert store.filesystem_type(str(tmp_path)) == want
    store.refuse_network_filesystem(str(tmp_path / "board.db"))   # a local disk passes


@pytest.mark.parametrize("fstype", ["nfs4", "cifs", "fuse.sshfs", "9p"])
def test_sqlite_on_a_network_filesystem_is_refused(tmp_path, monkeypatch, fstype):
    # this machine's own mount table, with the directory's device remounted as a network filesystem
    st = os.stat(tmp_path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    lines = [l for l in open("/proc/self/mountinfo").read().splitlines() if l.split()[2] != dev]
    lines.append(f"999 1 {dev} / {str(tmp_path).replace(' ', chr(92) + '040')} rw,relatime - "
                 f"{fstype} server:/export rw,vers=4.2")
    fake = tmp_path / "mountinfo"
    fake.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(store, "MOUNTINFO", str(fake))
    db_path = tmp_path / "course" / "board.db"
    db_path.parent.mkdir()
    with pytest.raises(store.NetworkFilesystem, match=f"{fstype} filesystem.*local disk"):
        store.open_store(f"sqlite:///{db_path}")
    assert not db_path.exists()               # refused before SQLite created anything


# ---- the queue ----

def test_queue_positions_claim_order_and_outcomes(db):
    ids = [submit(db, u)[0] for u in ("alice", "bob", "carol", "dave")]
    assert [db.get_submission(i)["position"] for i in ids] == [1, 2, 3, 4]
    assert db.queue_length() == db.queue_length(PROBLEM) == 4 and db.queue_length("other") == 0

    first = db.claim_next_submission(now=50.0)
    assert first["id"] == ids[0] and first["status"] == "running" and first["started_at"] == 50.0
    assert first["source"] == "// alice's tiled" and first["family"] == "matmul"
    assert [db.get_submission(i)["position"] for i in ids] == [0, 1, 2, 3]

    score = ranking.score_sizes([{"median_ms": 2.0, "ci95_rel": 0.02, "reference_ms": 1.0}])
    db.rank_submission(ids[0], **score._asdict(), result={"sizes": [1, 2]}, now=60.0)
    done = db.get_submission(ids[0])
    assert (done["status"], done["position"], done["result"], done["finished_at"]) == \
        ("ranked", None, {"sizes": [1, 2]}, 60.0)
    assert done["score"] == pytest.approx(2.0)

    with pytest.raises(ValueError, match="not running"):   # a finished one cannot finish again
        db.fail_submission(ids[0], "late")
    with pytest.raises(ValueError, match="not running"):   # nor a queued one
        db.error_submission(ids[1], "never ran")

    db.claim_next_submission()
    db.fail_submission(ids[1], "rep 3 of 10 returned a wrong result", line=11)
    db.claim_next_submission()
    db.error_submission(ids[2], "the kernel died")
    assert [db.get_submission(i)["status"] for i in ids] == ["ranked", "failed", "error", "queued"]
    assert db.get_submission(ids[1])["line"] == 11
    assert db.get_submission(999999) is None

    db.claim_next_submission()                               # a stopped service left it running
    assert db.requeue_interrupted() == 1
    assert db.get_submission(ids[3])["position"] == 1
    assert db.claim_next_submission()["id"] == ids[3]
    assert db.claim_next_submission() is None


def test_a_score_that_cannot_rank_is_refused(db):
    sub_id, _ = submit(db, "mallory")
    db.claim_next_submission()
    for bad in ({"score": 0.0, "score_lo": 0.0, "score_hi": 0.0},
                {"score": float("nan"), "score_lo": 0.5, "score_hi": 1.5},
                {"score": 1.0, "score_lo": 1.2, "score_hi": 1.5}):
        with pytest.raises(ValueError, match="rankable"):
            db.rank_submission(sub_id, median_ms=1.0, ci95_rel=0.01, **bad)
    assert db.get_submission(sub_id)["status"] == "running"


def test_concurrent_runners_never_claim_the_same_submission(db_url):
    stores = [store.open_store(db_url), store.open_store(db_url)]   # as two processes would
    ids = {submit(stores[0], f"student{i}")[0] for i in range(40)}

    def drain(i):
        mine = []
        while (sub := stores[i % 2].claim_next_submission()) is not None:
            mine.append(sub["id"])
        return mine
    claimed = run_concurrently(8, drain)
    assert not [c for c in claimed if isinstance(c, Exception)], claimed
    flat = [i for c in claimed for i in c]
    assert sorted(flat) == sorted(ids)                      # each exactly once
    for s in stores:
        s.close()


def runner_result(score, **kw):
    """A result document as the runner writes it (board/cudalab_board/runner.py's Turn.result)."""
    return dict({"kernel": "sub_1", "run_at": "2026-11-29T16:00:00+00:00", "backend": "cpu",
                 "gpu": None, "clock_mhz": None, "sizes": [{"size": "--m 64", "median_ms": 2.0}],
                 "references": [{"variant": "naive", "median_ms": 1.0, "ci95_rel": 0.02}],
                 "median_ms": score and 2.0 * score, "ci95_rel": 0.03, "score": score, "gpu_ms": 5.0}, **kw)


def test_the_runners_result_document_finishes_a_submission_and_records_its_run(db):
    ranked_id, _ = submit(db, "alice")
    failed_id, _ = submit(db, "bob")
    error_id, _ = submit(db, "carol")
    db.claim_next_submission()
    db.finish_submission(ranked_id, "ranked", runner_result(1.5))
    got = db.get_submission(ranked_id)
    assert (got["status"], got["score"], got["ci95_rel"]) == ("ranked", 1.5, 0.03)
    assert (got["score_lo"], got["score_hi"]) == (pytest.approx(1.5 * 0.97), pytest.approx(1.5 * 1.03))
    assert got["result"]["gpu_ms"] == 5.0
    board = db.board(PROBLEM)
    assert board.run["run_at"] == 1795968000.0 and board.run["backend"] == "cpu"
    assert board.references == [{"variant": "naive", "median_ms": 1.0, "ci95_rel": 0.02}]

    db.claim_next_submission()
    db.finish_submission(failed_id, "failed",
                         runner_result(None, run_at="2026-11-29T17:00:00+00:00", references=[
                             {"variant": "naive", "median_ms": 1.1, "ci95_rel": 0.02}]),
                         finding="impossible: 0.001 ms", line=None)
    assert db.get_submission(failed_id)["finding"] == "impossible: 0.001 ms"
    assert db.board(PROBLEM).references[0]["median_ms"] == 1.1   # measured in a failed run too

    db.claim_next_submission()
    with pytest.raises(ValueError, match="rankable"):              # "ranked" without a score
        db.finish_submission(error_id, "ranked", runner_result(None))
    with pytest.raises(ValueError, match="status"):
        db.finish_submission(error_id, "won", runner_result(1.0))
    db.finish_submission(error_id, "error", {"references": []}, finding="the kernel died")
    assert db.get_submission(error_id)["status"] == "error"


# ---- what students send is hostile ----

def test_a_burst_of_posts_passes_the_rate_limit_once(db):
    results = run_concurrently(12, lambda i: submit(db, "mallory", name=f"k{i}", rate_limit_s=60))
    admitted = [r for r in results if isinstance(r, tuple)]
    limited = [r for r in results if isinstance(r, store.RateLimited)]
    assert len(admitted) == 1 and len(limited) == 11, results
    assert all(1 <= r.retry_after_s <= 60 for r in limited)
    assert db.queue_length() == 1


def test_the_rate_limit_is_per_student_per_problem_and_says_when(db):
    submit(db, "alice", rate_limit_s=60, now=1000.0)
    with pytest.raises(store.RateLimited) as e:
        submit(db, "alice", rate_limit_s=60, now=1045.2)
    assert e.value.retry_after_s == 15
    submit(db, "alice", problem="ps3.histo", rate_limit_s=60, now=1045.2)   # another problem
    submit(db, "bob", rate_limit_s=60, now=1045.2)                          # another student
    assert db.last_submitted_at("alice", PROBLEM) == 1000.0
    submit(db, "alice", rate_limit_s=60, now=1060.0)                        # the minute is up
    assert db.last_submitted_at("alice", PROBLEM) == 1060.0


def test_source_size_limit_counts_bytes(db):
    db.enqueue_submission(PROBLEM, "alice", "k", "matmul", "x" * store.MAX_SOURCE_BYTES)
    with pytest.raises(store.InvalidSubmission, match="64 KiB"):   # 3 bytes a character in UTF-8
        db.enqueue_submission(PROBLEM, "bob", "k", "matmul", "€" * (store.MAX_SOURCE_BYTES // 3 + 1))
    assert db.queue_length() == 1


def test_quotes_placeholders_and_percent_signs_are_data(db):
    user = "x'); DROP TABLE submissions; --"
    name = "k?%s%(x)s"
    source = "__global__ void k() { /* ? %s ' \" ; -- \u00e9\u20ac\U0001f600 */ }\n"
    sub_id, _ = db.enqueue_submission(PROBLEM, user, name, "matmul", source, flags="-D A=%d")
    got = db.get_submission(sub_id)
    assert (got["user"], got["name"], got["source"], got["flags"]) == (user, name, source, "-D A=%d")
    assert db.board(PROBLEM).aliases == {user: 1}


@pytest.mark.parametrize("field", ["name", "source", "flags"])
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
def test_text_neither_database_can_hold_is_refused_alike(db, field, bad):
    body = {"name": "k", "source": "src", "flags": ""}
    body[field] = bad
    with pytest.raises(store.InvalidSubmission, match=field):
        db.enqueue_submission(PROBLEM, "mallory", body["name"], "matmul", body["source"],
                              flags=body["flags"])
    with pytest.raises(store.InvalidSubmission):
        quickcheck(db, "mallory", findings=[{"text": bad, "line": 1}])
    assert db.queue_length() == 0 and db.last_submitted_at("mallory", PROBLEM) is None


# ---- boards ----

def test_board_rows_aliases_and_latest_run(db):
    for t, user in enumerate(["carol", "alice", "carol", "bob"]):
        submit(db, user, name=f"k{t}", now=100.0 + t)
    assert db.board(PROBLEM).aliases == {"carol": 1, "alice": 2, "bob": 3}

    sizes = {"carol": 1.5, "alice": 1.0, "bob": None}
    while (sub := db.claim_next_submission()) is not None:
        t = sizes[sub["user"]]
        if t is None:
            db.fail_submission(sub["id"], "impossible: 0.001 ms …", line=None)
        else:
            score = ranking.score_sizes([{"median_ms": t, "ci95_rel": 0.01, "reference_ms": 1.0}])
            db.rank_submission(sub["id"], **score._asdict())
    submit(db, "dave", now=200.0)                               # a newcomer keeps the others' K
    board = db.board(PROBLEM)
    assert board.aliases == {"carol": 1, "alice": 2, "bob": 3, "dave": 4}
    assert sorted((r["user"], r["name"]) for r in board.ranked) == \
        [("alice", "k1"), ("carol", "k0"), ("carol", "k2")]
    assert [(f["user"], f["finding"][:11]) for f in board.failed] == [("bob", "impossible:")]
    assert board.queue == 1 and board.run is None and board.references == []

    refs = [{"variant": "naive", "median_ms": 9.0, "ci95_rel": 0.02},
            {"variant": "cublas", "median_ms": 1.0, "ci95_rel": 0.01}]
    db.record_run(PROBLEM, gpu="NVIDIA H200", clock_mhz=1980.0, backend="cuda", run_at=500.0,
                  references=refs)
    db.record_run(PROBLEM, gpu="NVIDIA H200", clock_mhz=1500.0, backend="cuda", run_at=400.0,
                  references=[])                                # finished later, ran earlier
    board = db.board(PROBLEM)
    assert board.run == {"gpu": "NVIDIA H200", "clock_mhz": 1980.0, "backend": "cuda",
                         "run_at": 500.0}
    assert board.references == refs

    doc = ranking.board_document(PROBLEM, "Matrix multiply", board, "carol", instructor=False)
    assert [(e["rank"], e["user"], e["name"]) for e in doc["entries"]] == \
        [(1, "student 2", "k1"), (2, "you", "k0")]
    assert doc["failed"] == [] and doc["run_at"] == "1970-01-01T00:08:20Z"
    json.dumps(doc)                                             # the API's body as it is


# ---- quick checks ----

def quickcheck(db, user, i=0, **kw):
    body = {"compiled": True, "passed": i % 3 != 0, "lesson": {"sync": i % 2 == 0, "bounds": True},
            "time_ms": 1.0 + i, "findings": [{"text": "reads As before the barrier", "line": 11}]}
    body.update(kw)
    db.record_quickcheck(user, "matmul", f"k_{user}", **body)


def test_thirty_students_post_at_once_and_the_class_view_counts_each_once(db):
    results = run_concurrently(30, lambda i: quickcheck(db, f"student{i:02d}", i))
    assert results == [None] * 30
    quickcheck(db, "student00", 0, compiled=False, passed=False, time_ms=None,  # a later one wins
               lesson={}, findings=[{"text": "does not compile", "line": 3}] * 3)
    view = db.class_view("matmul")
    assert view["kernels"] == 30 and view["compiled"] == 29
    passing = [i for i in range(1, 30) if i % 3 != 0]
    assert view["passed"] == len(passing)
    assert view["times_ms"] == [1.0 + i for i in passing]
    assert view["lesson"] == {"sync": 14, "bounds": 29}
    assert view["findings"] == [{"text": "reads As before the barrier", "line": 11, "count": 29},
                                {"text": "does not compile", "line": 3, "count": 1}]
    assert "source" not in json.dumps(db.latest_quickchecks("matmul"))
    assert db.class_view("reduce") == {"exercise": "reduce", "kernels": 0, "compiled": 0,
                                       "passed": 0, "lesson": {}, "times_ms": [], "findings": []}


def test_an_older_quick_check_does_not_replace_a_newer(db):
    quickcheck(db, "alice", 1, now=200.0)
    quickcheck(db, "alice", 3, now=100.0)          # arrived late
    assert db.latest_quickchecks("matmul")[0]["time_ms"] == 2.0


@pytest.mark.parametrize("bad", [
    {"findings": [{"text": "x", "line": 1}] * (store.QUICKCHECK_MAX_FINDINGS + 1)},
    {"lesson": {f"c{i}": True for i in range(store.QUICKCHECK_MAX_LESSON + 1)}},
    {"findings": [{"text": "x" * (store.QUICKCHECK_MAX_TEXT + 1), "line": 1}]},
    {"findings": ["not an object"]},
    {"findings": [{"line": 1}]},
    {"findings": {"text": "x"}},
    {"time_ms": float("inf")},
    {"time_ms": -1.0},
    {"time_ms": "fast"},
    {"time_ms": True},
])
def test_hostile_quick_checks_are_refused(db, bad):
    with pytest.raises(store.InvalidSubmission):
        quickcheck(db, "mallory", **bad)
    assert db.class_view("matmul")["kernels"] == 0


def test_a_quick_checks_odd_line_is_dropped_not_stored(db):
    quickcheck(db, "mallory", findings=[{"text": "a", "line": "11; drop"}, {"text": "b", "line": True}])
    assert [f["line"] for f in db.latest_quickchecks("matmul")[0]["findings"]] == [None, None]
