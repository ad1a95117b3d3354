"""board_db.py — what the board store's tests share: board/ on sys.path (so `import cudalab_board`
finds this tree's package), and the databases. Not a conftest.py: pytest would import it as the
module `conftest` in place of tests/conftest.py, which other board tests import from. A test module
takes the fixtures with `from board_db import db_url, pg_cluster, pg_url`.

  * `pg_cluster` (session): a cluster initdb'd into a fresh directory, started with pg_ctl, listening
    only on a Unix socket in that directory (no TCP port to collide with), trust authentication,
    stopped and removed at the end. initdb refuses to run as root, so when the tests run as root the
    cluster runs as an unprivileged account (postgres, else nobody). Skips, saying why, only when
    Debian's postgresql binaries (initdb, pg_ctl) are absent.
  * `pg_url`: a fresh database in that cluster for one test, as a postgresql:// URL.
  * `db_url` (parametrised sqlite / postgresql): the same test against both stores.
"""
from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "board"))

PG_START_TIMEOUT_S = 60


def _pg_bindir():
    """The directory of initdb and pg_ctl: on PATH, else the newest of Debian's versions."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(initdb))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return os.path.dirname(versions[-1]) if versions else None


def _cluster_user():
    """The account the cluster runs as: ourselves, or an unprivileged one when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    pytest.fail("running as root with neither a postgres nor a nobody account to run PostgreSQL as")


class PgCluster:
    """A running private cluster: socket_dir holds its socket; url(dbname) connects to it."""

    def __init__(self, bindir: str):
        self.bindir = bindir
        self.user = _cluster_user()
        self.root = tempfile.mkdtemp(prefix="cudalab-pg-")   # under /tmp: reachable by that user
        self.data = os.path.join(self.root, "data")
        self.log = os.path.join(self.root, "server.log")
        self._names = itertools.count(1)
        if self.user:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        kw = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []} \
            if self.user else {}
        return subprocess.run([os.path.join(self.bindir, argv[0]), *argv[1:]], cwd=self.root,
                              capture_output=True, text=True, timeout=PG_START_TIMEOUT_S, **kw)

    def start(self) -> None:
        init = self._run("initdb", "-D", self.data, "-U", "board", "-A", "trust", "-E", "UTF8",
                         "--no-instructions")
        if init.returncode:
            raise RuntimeError(f"initdb failed:\n{init.stdout}{init.stderr}")
        started = self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w",
                            "-t", str(PG_START_TIMEOUT_S), "-o",
                            f"-c listen_addresses='' -k {self.root} -c fsync=off", "start")
        if started.returncode:
            log = Path(self.log).read_text() if os.path.exists(self.log) else ""
            raise RuntimeError(f"pg_ctl start failed:\n{started.stdout}{started.stderr}{log}")

    def stop(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str) -> str:
        return f"postgresql://board@/{dbname}?host={self.root}"

    def new_database(self) -> str:
        import psycopg
        name = f"board_test_{next(self._names)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@pytest.fixture(scope="session")
def pg_cluster():
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl not found (Debian's postgresql package; "
                    "scripts/setup.sh test installs it)")
    cluster = PgCluster(bindir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'board.db'}"
    return request.getfixturevalue("pg_url")
