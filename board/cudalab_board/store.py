"""store.py — the board's storage: SQLite (the embedded default, WAL) or PostgreSQL (psycopg 3),
one schema, numbered migrations, and every query the service and the runner make.

Opening
    store = open_store(url)         # "sqlite:///PATH" (PATH relative, or absolute: sqlite:////var/…)
                                    # or "postgresql://user@host/db" ("postgres://" too)
    store.close()                   # closes every thread's connection
  Opening applies the pending migrations (migrations/NNNN_name.sql, in order, recorded in the
  table schema_version) and refuses a database whose schema is newer than this code
  (SchemaTooNew). An SQLite file is refused on a network filesystem (NetworkFilesystem): WAL keeps
  its index in shared memory (the -shm file), which NFS, SMB and the like do not share between hosts.
  A Store may be used from several threads (the tornado loop and the runner): each thread gets its
  own connection. Times are seconds since the epoch (time.time()); every write takes `now=` so tests
  can set the clock.

Submissions (statuses: queued -> running -> ranked | failed | error)
    enqueue_submission(problem, user, name, family, source, flags="", rate_limit_s=0, now=None)
        -> (id, position)           # raises RateLimited(retry_after_s) if the same user's last
                                    # accepted submission to that problem is under rate_limit_s old
                                    # (checked and recorded in one transaction), InvalidSubmission if
                                    # the source is over MAX_SOURCE_BYTES
    get_submission(id) -> dict | None
        keys: id, problem, user, name, family, source, flags, status, position, submitted_at,
              started_at, finished_at, finding, line, median_ms, ci95_rel, score, score_lo,
              score_hi, result (the runner's JSON document, decoded, or None)
        position: 1 = the next to run, 0 while running, None once finished
    queue_length(problem=None) -> int                    # queued + running (of one problem, or all)
    claim_next_submission(now=None) -> dict | None       # the oldest queued, now running (atomic:
                                                         # two runners never claim the same one)
    rank_submission(id, *, median_ms, ci95_rel, score, score_lo, score_hi, result=None, now=None)
    fail_submission(id, finding, *, line=None, result=None, now=None)    # a check failed: listed
    error_submission(id, finding, *, result=None, now=None)  # the board could not run it (not the
                                                         # student's fault)
        each of the three: only a running submission (else ValueError)
    finish_submission(id, status, result, finding=None, line=None)   # the runner's one call: the
        three above by status, from its result document, and record_run of the run's references
    requeue_interrupted() -> int     # at start-up: submissions a stopped service left running go
                                     # back to the queue
    last_submitted_at(user, problem) -> float | None     # what the rate limit last admitted

Boards
    record_run(problem, *, gpu, clock_mhz, backend, run_at, references)
        the board's latest run (run_at: epoch seconds or ISO 8601); references: [{"variant",
        "median_ms", "ci95_rel"}]; an older run_at than the one stored is ignored (runs may
        finish out of order)
    board(problem) -> BoardData (run, references, ranked, failed, aliases, queue): what
        ranking.board_document() turns into the API's document. ranked: every ranked submission
        (dicts with id, user, name, median_ms, ci95_rel, score, score_lo, score_hi, submitted_at);
        failed: the latest FAILED_LISTED failed ones (id, user, name, finding, line, submitted_at),
        newest first; aliases: {user: K}, K = the order of each user's first submission to the
        board (so "student K" is stable as others join)

Quick checks (the instructor's class view; no source is ever stored)
    record_quickcheck(user, exercise, name, *, compiled, passed, lesson, time_ms, findings, now=None)
        keeps each student's latest per exercise; lesson: {check name: bool}; findings:
        [{"text", "line"}]; bounded by the QUICKCHECK_* limits (InvalidSubmission beyond them)
    class_view(exercise) -> {"exercise", "kernels", "compiled", "passed", "lesson": {name: count
        of students passing it}, "times_ms": [sorted times of the kernels that passed], "findings":
        [{"text", "line", "count"}] (students per finding, most common first, at most
        CLASSVIEW_FINDINGS)}
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Optional

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
MAX_SOURCE_BYTES = 64 * 1024          # a submission's kernel source, UTF-8 (the API's 400 beyond)
QUICKCHECK_MAX_FINDINGS = 50          # findings kept from one quick check
QUICKCHECK_MAX_LESSON = 50            # lesson checks kept from one quick check
QUICKCHECK_MAX_TEXT = 500             # characters of a finding's text, a lesson check's or kernel's name
CLASSVIEW_FINDINGS = 20               # the most common findings the class view lists
FAILED_LISTED = 50                    # failed submissions a board lists
STATUSES = ("queued", "running", "ranked", "failed", "error")
MOUNTINFO = "/proc/self/mountinfo"    # where the mounts' types are read

# Filesystems whose hosts do not share SQLite's WAL index (mmap'ed shared memory) or whose locks
# are not to be trusted: the mount types of /proc/self/mountinfo.
NETWORK_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "9p", "afs", "ceph", "glusterfs", "lustre",
    "gpfs", "beegfs", "ocfs2", "gfs2", "davfs", "fuse.sshfs", "fuse.glusterfs", "fuse.s3fs",
    "fuse.rclone", "fuse.juicefs", "fuse.davfs2", "fuse.cephfs", "fuse.gcsfuse", "fuse.goofys",
})

# the one difference of spelling between the dialects that migrations need
_DIALECT_TOKENS = {
    "sqlite": {"@ID_PK@": "INTEGER PRIMARY KEY AUTOINCREMENT"},
    "postgresql": {"@ID_PK@": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"},
}
_PG_MIGRATION_LOCK = 0x63756461   # pg_advisory_xact_lock key: one process migrates at a time


class StoreError(Exception):
    """The base of the store's own errors."""


class NetworkFilesystem(StoreError):
    """An SQLite database on a network filesystem, where WAL does not work."""


class SchemaTooNew(StoreError):
    """The database was migrated by a newer cudalab_board than this one."""


class InvalidSubmission(StoreError, ValueError):
    """A submission or quick check over the store's limits."""


class RateLimited(StoreError):
    """A resubmission inside the problem's rate limit; retry_after_s: whole seconds to wait."""

    def __init__(self, retry_after_s: int):
        super().__init__(f"one submission per problem at a time: retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


@dataclass
class BoardData:
    """A board's rows as stored; ranking.board_document() makes the API's document of them."""
    problem: str
    run: Optional[dict]                 # {"gpu", "clock_mhz", "backend", "run_at"} or None
    references: list = field(default_factory=list)
    ranked: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    aliases: dict = field(default_factory=dict)
    queue: int = 0


def _check_text(**values: str) -> None:
    """Text both databases can hold: PostgreSQL refuses NUL, and neither stores a lone surrogate
    (which a JSON body's "\\ud800" decodes to)."""
    for what, text in values.items():
        if not isinstance(text, str):
            raise InvalidSubmission(f"{what} is not a string")
        if "\0" in text:
            raise InvalidSubmission(f"{what} holds a NUL character")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidSubmission(f"{what} is not valid Unicode (a lone surrogate)") from None


# ---- where an SQLite file may live ----

def _unescape_mountinfo(field_text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_text)


def filesystem_type(path: str, mountinfo: Optional[str] = None) -> Optional[str]:
    """The mount type of the filesystem holding path (a file or directory that exists), matched
    by device number in mountinfo, else by the longest mount point above it; None if unknown."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    real = os.path.realpath(path)
    by_dev, by_prefix, best_len = None, None, -1
    try:
        lines = Path(mountinfo or MOUNTINFO).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        fstype, mount_point = tail[0], _unescape_mountinfo(fields[4])
        if fields[2] == dev:
            by_dev = fstype
        inside = real == mount_point or real.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > best_len:
            by_prefix, best_len = fstype, len(mount_point)
    return by_dev or by_prefix


def refuse_network_filesystem(db_path: str, mountinfo: Optional[str] = None) -> None:
    """Raise NetworkFilesystem when db_path's directory is on a network filesystem."""
    directory = os.path.dirname(os.path.abspath(db_path))
    fstype = filesystem_type(directory, mountinfo)
    if fstype in NETWORK_FILESYSTEMS:
        raise NetworkFilesystem(
            f"{db_path} is on a {fstype} filesystem: SQLite's WAL needs shared memory that "
            f"{fstype} does not share between hosts; put the board's database on the board "
            f"service's local disk (not the shared exchange volume), or use postgresql://")


# ---- migrations ----

def migrations(directory: Path = MIGRATIONS_DIR) -> list:
    """[(version, name, sql text)] of NNNN_name.sql in directory, by version; numbers must be
    unique."""
    found = []
    for path in sorted(Path(directory).glob("*.sql")):
        m = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", path.name)
        if not m:
            raise StoreError(f"migration {path.name}: not named NNNN_name.sql")
        found.append((int(m.group(1)), m.group(2), path.read_text()))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"two migrations share a number in {directory}")
    return found


def _statements(sql: str, dialect: str) -> list:
    for token, spelling in _DIALECT_TOKENS[dialect].items():
        sql = sql.replace(token, spelling)
    sql = re.sub(r"--[^\n]*", "", sql)
    return [s.strip() for s in sql.split(";") if s.strip()]


# ---- the store ----

class Store:
    """The board's database; see the module's docstring for the API."""

    def __init__(self, url: str, migrations_dir: Path = MIGRATIONS_DIR):
        self.url = url
        self._local = threading.local()
        self._connections: list = []
        self._lock = threading.Lock()
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            self.path = url[len("sqlite:///"):]
            if not self.path or self.path == ":memory:":
                raise StoreError("sqlite:///PATH needs a file (WAL cannot use an in-memory database)")
            refuse_network_filesystem(self.path)
        elif url.startswith(("postgresql://", "postgres://")):
            self.dialect = "postgresql"
            import psycopg  # noqa: F401  (an ImportError here names the missing requirement)
        else:
            raise StoreError(f"database URL {url!r}: sqlite:///PATH or postgresql://…")
        self._migrate(migrations(migrations_dir))

    # -- connections and transactions --

    def _connect(self):
        if self.dialect == "sqlite":
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=30)
            conn.row_factory = sqlite3.Row
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                conn.close()
                raise StoreError(f"{self.path}: SQLite could not switch to WAL (journal mode {mode})")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        else:
            import psycopg
            from psycopg.rows import dict_row
            conn = psycopg.connect(self.url, autocommit=True, row_factory=dict_row)
        return conn

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _sql(self, sql: str) -> str:
        # queries are written with ? placeholders (and never a literal ? or %)
        return sql if self.dialect == "sqlite" else sql.replace("?", "%s")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        """A write transaction that takes the write lock at once (SQLite's BEGIN IMMEDIATE), so a
        read-then-write inside it cannot race another writer."""
        conn = self._conn()
        if self.dialect == "sqlite":
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        else:
            with conn.transaction():
                yield conn

    def _rows(self, sql: str, params: tuple = (), conn=None) -> list:
        cur = (conn or self._conn()).execute(self._sql(sql), params)
        return [dict(r) for r in cur.fetchall()] if cur.description else []

    def _one(self, sql: str, params: tuple = (), conn=None) -> Optional[dict]:
        rows = self._rows(sql, params, conn)
        return rows[0] if rows else None

    def _migrate(self, known: list) -> None:
        with self._tx() as conn:
            if self.dialect == "postgresql":
                self._rows("SELECT pg_advisory_xact_lock(?)", (_PG_MIGRATION_LOCK,), conn)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                         "name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
            applied = {r["version"] for r in self._rows("SELECT version FROM schema_version",
                                                        conn=conn)}
            newest_known = max((v for v, _, _ in known), default=0)
            if applied and max(applied) > newest_known:
                raise SchemaTooNew(f"the database is at schema version {max(applied)}, this "
                                   f"cudalab_board knows up to {newest_known}: upgrade it")
            for version, name, sql in known:
                if version in applied:
                    continue
                for statement in _statements(sql, self.dialect):
                    conn.execute(statement)
                conn.execute(self._sql("INSERT INTO schema_version (version, name, applied_at) "
                                       "VALUES (?, ?, ?)"), (version, name, time.time()))

    def schema_version(self) -> list:
        """[(version, name)] applied, in order."""
        return [(r["version"], r["name"]) for r in
                self._rows("SELECT version, name FROM schema_version ORDER BY version")]

    # -- submissions --

    def enqueue_submission(self, problem: str, user: str, name: str, family: str, source: str,
                           flags: str = "", rate_limit_s: float = 0, now: Optional[float] = None):
        _check_text(problem=problem, user=user, name=name, family=family, source=source,
                    flags=flags)
        if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise InvalidSubmission(f"the source is over {MAX_SOURCE_BYTES // 1024} KiB")
        with self._tx() as conn:
            now = time.time() if now is None else now    # read under the lock: never before the last
            # admitted only if no earlier submission is under rate_limit_s old: one statement that
            # both tests and records, so concurrent posts cannot both pass
            admitted = self._one(
                "INSERT INTO rate_limits (user_name, problem, last_at) VALUES (?, ?, ?) "
                "ON CONFLICT (user_name, problem) DO UPDATE SET last_at = excluded.last_at "
                "WHERE rate_limits.last_at <= excluded.last_at - ? RETURNING last_at",
                (user, problem, now, rate_limit_s), conn)
            if admitted is None:
                last = self._one("SELECT last_at FROM rate_limits WHERE user_name = ? AND "
                                 "problem = ?", (user, problem), conn)["last_at"]
                raise RateLimited(min(math.ceil(rate_limit_s),
                                      max(1, math.ceil(last + rate_limit_s - now))))
            row = self._one(
                "INSERT INTO submissions (problem, user_name, name, family, source, flags, status, "
                "submitted_at) VALUES (?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING id",
                (problem, user, name, family, source, flags, now), conn)
            position = self._queue_position(row["id"], conn)
        return row["id"], position

    def _queue_position(self, sub_id: int, conn=None) -> int:
        return self._one("SELECT COUNT(*) AS n FROM submissions WHERE status = 'queued' AND id <= ?",
                         (sub_id,), conn)["n"]

    def _submission(self, row: dict) -> dict:
        status = row["status"]
        position = (self._queue_position(row["id"]) if status == "queued"
                    else 0 if status == "running" else None)
        return {"id": row["id"], "problem": row["problem"], "user": row["user_name"],
                "name": row["name"], "family": row["family"], "source": row["source"],
                "flags": row["flags"], "status": status, "position": position,
                "submitted_at": row["submitted_at"], "started_at": row["started_at"],
                "finished_at": row["finished_at"], "finding": row["finding"],
                "line": row["finding_line"], "median_ms": row["median_ms"],
                "ci95_rel": row["ci95_rel"], "score": row["score"], "score_lo": row["score_lo"],
                "score_hi": row["score_hi"],
                "result": json.loads(row["result"]) if row["result"] is not None else None}

    def get_submission(self, sub_id: int) -> Optional[dict]:
        row = self._one("SELECT * FROM submissions WHERE id = ?", (int(sub_id),))
        return self._submission(row) if row else None

    def queue_length(self, problem: Optional[str] = None) -> int:
        sql = "SELECT COUNT(*) AS n FROM submissions WHERE status IN ('queued', 'running')"
        if problem is None:
            return self._one(sql)["n"]
        return self._one(sql + " AND problem = ?", (problem,))["n"]

    def last_submitted_at(self, user: str, problem: str) -> Optional[float]:
        row = self._one("SELECT last_at FROM rate_limits WHERE user_name = ? AND problem = ?",
                        (user, problem))
        return row["last_at"] if row else None

    def claim_next_submission(self, now: Optional[float] = None) -> Optional[dict]:
        now = time.time() if now is None else now
        # PostgreSQL: SKIP LOCKED so that a second runner takes the next one instead of waiting for
        # (and then losing) the same row; SQLite serialises writers, so the subquery is enough
        skip_locked = " FOR UPDATE SKIP LOCKED" if self.dialect == "postgresql" else ""
        with self._tx() as conn:
            row = self._one(
                "UPDATE submissions SET status = 'running', started_at = ? WHERE id = "
                "(SELECT id FROM submissions WHERE status = 'queued' ORDER BY id LIMIT 1"
                + skip_locked + ") AND status = 'queued' RETURNING *", (now,), conn)
        return self._submission(row) if row else None

    def _finish(self, sub_id: int, status: str, columns: dict, now: Optional[float]) -> None:
        columns = dict(columns, status=status, finished_at=time.time() if now is None else now)
        assignments = ", ".join(f"{c} = ?" for c in columns)
        with self._tx() as conn:
            done = self._one(f"UPDATE submissions SET {assignments} WHERE id = ? AND "
                             "status = 'running' RETURNING id",
                             (*columns.values(), int(sub_id)), conn)
        if done is None:
            raise ValueError(f"submission {sub_id} is not running")

    def rank_submission(self, sub_id: int, *, median_ms: float, ci95_rel: float, score: float,
                        score_lo: float, score_hi: float, result: Any = None,
                        now: Optional[float] = None) -> None:
        values = (median_ms, ci95_rel, score, score_lo, score_hi)
        if not all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in values) \
                or not score_lo <= score <= score_hi or score <= 0:
            raise ValueError(f"submission {sub_id}: not a rankable score {values}")
        self._finish(sub_id, "ranked", {
            "median_ms": median_ms, "ci95_rel": ci95_rel, "score": score, "score_lo": score_lo,
            "score_hi": score_hi, "result": json.dumps(result) if result is not None else None},
            now)

    def fail_submission(self, sub_id: int, finding: str, *, line: Optional[int] = None,
                        result: Any = None, now: Optional[float] = None) -> None:
        self._finish(sub_id, "failed", {
            "finding": finding, "finding_line": line,
            "result": json.dumps(result) if result is not None else None}, now)

    def error_submission(self, sub_id: int, finding: str, *, result: Any = None,
                         now: Optional[float] = None) -> None:
        self._finish(sub_id, "error", {
            "finding": finding,
            "result": json.dumps(result) if result is not None else None}, now)

    def finish_submission(self, sub_id: int, status: str, result: dict,
                          finding: Optional[str] = None, line: Optional[int] = None,
                          now: Optional[float] = None) -> None:
        """The runner's one call: its result document (median_ms, ci95_rel, score, and the run's
        gpu, clock_mhz, backend, run_at, references) into rank/fail/error_submission, and the run
        (ranked or not: the references were measured) into record_run. The score's interval is
        ±ci95_rel around it."""
        if status == "ranked":
            score, rel = result.get("score"), result.get("ci95_rel") or 0.0
            if not isinstance(score, (int, float)) or not isinstance(rel, (int, float)):
                raise ValueError(f"submission {sub_id}: not a rankable score {score!r} ± {rel!r}")
            self.rank_submission(sub_id, median_ms=result.get("median_ms"), ci95_rel=rel,
                                 score=score, score_lo=score * max(0.0, 1 - rel),
                                 score_hi=score * (1 + rel), result=result, now=now)
        elif status == "failed":
            self.fail_submission(sub_id, finding or "failed", line=line, result=result, now=now)
        elif status == "error":
            self.error_submission(sub_id, finding or "the board could not run it", result=result,
                                  now=now)
        else:
            raise ValueError(f"status {status!r}: ranked, failed or error")
        if result.get("references") and result.get("run_at"):
            self.record_run(self.get_submission(sub_id)["problem"], gpu=result.get("gpu"),
                            clock_mhz=result.get("clock_mhz"), backend=result.get("backend"),
                            run_at=result["run_at"], references=result["references"])

    def requeue_interrupted(self) -> int:
        with self._tx() as conn:
            rows = self._rows("UPDATE submissions SET status = 'queued', started_at = NULL "
                              "WHERE status = 'running' RETURNING id", conn=conn)
        return len(rows)

    # -- boards --

    def record_run(self, problem: str, *, gpu: str, clock_mhz: Optional[float], backend: str,
                   run_at, references: list) -> None:
        if isinstance(run_at, str):            # ISO 8601, as the runner's documents carry it
            run_at = datetime.fromisoformat(run_at).timestamp()
        refs = json.dumps([{"variant": r["variant"], "median_ms": r["median_ms"],
                            "ci95_rel": r.get("ci95_rel")} for r in references])
        with self._tx() as conn:
            conn.execute(self._sql(
                "INSERT INTO boards (problem, gpu, clock_mhz, backend, run_at, reference_times) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (problem) DO UPDATE SET gpu = excluded.gpu, "
                "clock_mhz = excluded.clock_mhz, backend = excluded.backend, "
                "run_at = excluded.run_at, reference_times = excluded.reference_times "
                "WHERE boards.run_at IS NULL OR boards.run_at <= excluded.run_at"),
                (problem, gpu, clock_mhz, backend, run_at, refs))

    def board(self, problem: str) -> BoardData:
        run = self._one("SELECT gpu, clock_mhz, backend, run_at, reference_times FROM boards "
                        "WHERE problem = ?", (problem,))
        references = json.loads(run.pop("reference_times")) if run else []
        ranked = self._rows(
            "SELECT id, user_name AS \"user\", name, median_ms, ci95_rel, score, score_lo, "
            "score_hi, submitted_at FROM submissions WHERE problem = ? AND status = 'ranked' "
            "ORDER BY id", (problem,))
        failed = self._rows(
            "SELECT id, user_name AS \"user\", name, finding, finding_line AS line, submitted_at "
            "FROM submissions WHERE problem = ? AND status = 'failed' ORDER BY id DESC LIMIT ?",
            (problem, FAILED_LISTED))
        firsts = self._rows("SELECT user_name, MIN(id) AS first FROM submissions WHERE problem = ? "
                            "GROUP BY user_name ORDER BY MIN(id)", (problem,))
        aliases = {r["user_name"]: k for k, r in enumerate(firsts, 1)}
        return BoardData(problem, run, references, ranked, failed, aliases,
                         self.queue_length(problem))

    # -- quick checks --

    def record_quickcheck(self, user: str, exercise: str, name: str, *, compiled: bool,
                          passed: bool, lesson: dict, time_ms: Optional[float], findings: list,
                          now: Optional[float] = None) -> None:
        if not isinstance(findings, list) or not isinstance(lesson, dict) or \
                len(findings) > QUICKCHECK_MAX_FINDINGS or len(lesson) > QUICKCHECK_MAX_LESSON:
            raise InvalidSubmission(f"a quick check lists at most {QUICKCHECK_MAX_FINDINGS} "
                                    f"findings and {QUICKCHECK_MAX_LESSON} lesson checks")
        if not all(isinstance(f, dict) for f in findings):
            raise InvalidSubmission('findings are objects {"text", "line"}')
        texts = [name, exercise, *lesson, *(f.get("text") for f in findings)]
        if any(not isinstance(t, str) or len(t) > QUICKCHECK_MAX_TEXT for t in texts):
            raise InvalidSubmission(f"names and findings are strings of at most "
                                    f"{QUICKCHECK_MAX_TEXT} characters")
        _check_text(user=user, **{f"text {i}": t for i, t in enumerate(texts)})
        if time_ms is not None and not (isinstance(time_ms, (int, float)) and
                                        not isinstance(time_ms, bool) and
                                        math.isfinite(time_ms) and time_ms >= 0):
            raise InvalidSubmission("time_ms is a finite number of milliseconds, or null")
        lesson_json = json.dumps({k: bool(v) for k, v in lesson.items()})
        findings_json = json.dumps([{"text": f["text"], "line": f.get("line")
                                     if type(f.get("line")) is int else None}
                                    for f in findings])
        now = time.time() if now is None else now
        with self._tx() as conn:
            conn.execute(self._sql(
                "INSERT INTO quickchecks (exercise, user_name, name, compiled, passed, lesson, "
                "time_ms, findings, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (exercise, user_name) DO UPDATE SET name = excluded.name, "
                "compiled = excluded.compiled, passed = excluded.passed, lesson = excluded.lesson, "
                "time_ms = excluded.time_ms, findings = excluded.findings, "
                "posted_at = excluded.posted_at WHERE quickchecks.posted_at <= excluded.posted_at"),
                (exercise, user, name, int(bool(compiled)), int(bool(passed)), lesson_json,
                 time_ms, findings_json, now))

    def latest_quickchecks(self, exercise: str) -> list:
        """Each student's latest quick check of exercise, decoded."""
        rows = self._rows("SELECT * FROM quickchecks WHERE exercise = ? ORDER BY user_name",
                          (exercise,))
        return [{"user": r["user_name"], "name": r["name"], "compiled": bool(r["compiled"]),
                 "passed": bool(r["passed"]), "lesson": json.loads(r["lesson"]),
                 "time_ms": r["time_ms"], "findings": json.loads(r["findings"]),
                 "posted_at": r["posted_at"]} for r in rows]

    def class_view(self, exercise: str) -> dict:
        """The class's latest quick checks of exercise, aggregated: one kernel per student (the table keeps
        one row per student and exercise, whatever names their posts give). A post is the student's own
        claim, so one that contradicts itself counts only as far as it holds together: a kernel passes only
        if it compiled, passes lesson checks only if it compiled, and has a time only if it passed."""
        checks = self.latest_quickchecks(exercise)
        for c in checks:
            c["passed"] = c["passed"] and c["compiled"]
            if not c["compiled"]:
                c["lesson"] = {check: False for check in c["lesson"]}
        lesson: dict = {}
        finding_students: dict = {}
        for c in checks:
            for check, ok in c["lesson"].items():
                lesson[check] = lesson.get(check, 0) + (1 if ok else 0)
            # a student counts once per finding, however often their kernel repeats it
            for key in {(f["text"], f["line"]) for f in c["findings"]}:
                finding_students[key] = finding_students.get(key, 0) + 1
        common = sorted(finding_students.items(),
                        key=lambda kv: (-kv[1], kv[0][1] if kv[0][1] is not None else -1, kv[0][0]))
        return {"exercise": exercise, "kernels": len(checks),
                "compiled": sum(c["compiled"] for c in checks),
                "passed": sum(c["passed"] for c in checks),
                "lesson": lesson,
                "times_ms": sorted(c["time_ms"] for c in checks
                                   if c["passed"] and c["time_ms"] is not None),
                "findings": [{"text": t, "line": line, "count": n}
                             for (t, line), n in common[:CLASSVIEW_FINDINGS]]}


def open_store(url: str, migrations_dir: Path = MIGRATIONS_DIR) -> Store:
    """The store at url, migrated to the newest schema."""
    return Store(url, migrations_dir)
