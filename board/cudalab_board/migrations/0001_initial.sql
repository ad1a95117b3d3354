-- 0001_initial.sql — the board's first schema: submissions and their queue, the per-student rate
-- limit, each board's latest run (GPU, clock, reference ladder) and the class's quick checks.
-- One file for SQLite and PostgreSQL (store.py's migration runner): types both accept (TEXT,
-- INTEGER, BIGINT, DOUBLE PRECISION), times as seconds since the epoch, JSON as TEXT, booleans as
-- INTEGER 0/1, and @ID_PK@ for the one thing they spell differently (an auto-numbered key).
-- No semicolon or double dash inside a statement: the runner splits on them.

CREATE TABLE submissions (
    id            @ID_PK@,
    problem       TEXT NOT NULL,
    user_name     TEXT NOT NULL,
    name          TEXT NOT NULL,
    family        TEXT NOT NULL,
    source        TEXT NOT NULL,
    flags         TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'ranked', 'failed', 'error')),
    submitted_at  DOUBLE PRECISION NOT NULL,
    started_at    DOUBLE PRECISION,
    finished_at   DOUBLE PRECISION,
    finding       TEXT,
    finding_line  INTEGER,
    median_ms     DOUBLE PRECISION,
    ci95_rel      DOUBLE PRECISION,
    score         DOUBLE PRECISION,
    score_lo      DOUBLE PRECISION,
    score_hi      DOUBLE PRECISION,
    result        TEXT
);
CREATE INDEX submissions_by_status ON submissions (status, id);
CREATE INDEX submissions_by_board ON submissions (problem, status);
CREATE INDEX submissions_by_user ON submissions (user_name, problem);

-- the time of each student's last accepted submission to a problem: one row, updated atomically
-- with the submission it admits, so concurrent requests cannot both pass the limit
CREATE TABLE rate_limits (
    user_name  TEXT NOT NULL,
    problem    TEXT NOT NULL,
    last_at    DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_name, problem)
);

-- each board's latest run: the device and clock it ran at, and the reference ladder measured in it
CREATE TABLE boards (
    problem          TEXT PRIMARY KEY,
    gpu              TEXT,
    clock_mhz        DOUBLE PRECISION,
    backend          TEXT,
    run_at           DOUBLE PRECISION,
    reference_times  TEXT NOT NULL DEFAULT '[]'
);

-- each student's latest quick check per exercise (never the source)
CREATE TABLE quickchecks (
    exercise   TEXT NOT NULL,
    user_name  TEXT NOT NULL,
    name       TEXT NOT NULL,
    compiled   INTEGER NOT NULL,
    passed     INTEGER NOT NULL,
    lesson     TEXT NOT NULL,
    time_ms    DOUBLE PRECISION,
    findings   TEXT NOT NULL,
    posted_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (exercise, user_name)
);
