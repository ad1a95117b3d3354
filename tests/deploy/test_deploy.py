"""The course deployment (deploy/jupyterhub): no base image can be pulled here, so the Dockerfile is
linted (hadolint, from PyPI) and the hub's configuration is loaded as JupyterHub loads it, checking
what a course relies on: one GPU and CPU/memory limits per container, the one admission directory
every container shares mounted where the image tells cudalab to look for it, the containers' network
and the hub's address on it, the fallback authenticator, the idle culler, nbgrader's exchange, IPC
kernels, and the hub and the image at one JupyterHub version; each student a uid of their own: the
image's entrypoint run on a copy of a passwd file and a scratch home, nbgrader's collect refusing
submissions not owned by the student they name. test_hub_course.py runs the same configuration live."""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config import Config

from conftest import REPO

DEPLOY = REPO / "deploy" / "jupyterhub"
ENTRYPOINT = DEPLOY / "cudalab-entrypoint.sh"
sys.path.insert(0, str(DEPLOY))
import cudalab_identity  # noqa: E402  (the uid scheme, as the hub's configuration imports it)


def skip_unless_root(why: str) -> None:
    if os.getuid() != 0:
        pytest.skip(f"{why} needs root (files of several uids)")


def hadolint() -> str | None:
    return shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


def image_env(name: str) -> str:
    m = re.search(rf"\b{name}=(\S+)", (DEPLOY / "Dockerfile").read_text())
    assert m, f"the Dockerfile sets no {name}"
    return m.group(1).rstrip("\\").strip()


def pins(path: Path) -> dict[str, str]:
    """A requirements file's NAME==VERSION lines, by name."""
    return dict(line.split("==") for line in path.read_text().splitlines() if line and not line.startswith("#"))


def hub_config() -> Config:
    c = Config()
    path = DEPLOY / "jupyterhub_config.py"     # traitlets gives a config file its __file__, as here
    exec(compile(path.read_text(), str(path), "exec"),
         {"get_config": lambda: c, "__name__": "jupyterhub_config", "__file__": str(path)})
    return c


def test_dockerfile_lints_clean():
    tool = hadolint()
    if tool is None:
        pytest.skip("hadolint is not installed (pip install -r requirements-test.txt)")
    r = subprocess.run([tool, "--failure-threshold", "info", str(DEPLOY / "Dockerfile")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


class DockerSpawnerSeen:
    """What the pre-spawn hook reads and writes of a DockerSpawner."""
    def __init__(self, user_id: int, name: str):
        self.user = type("User", (), {"id": user_id, "name": name})()
        self.extra_host_config = {"init": True}
        self.extra_create_kwargs = {}
        self.environment = {"CUDALAB_CELL_TIMEOUT": "600"}


def test_each_container_gets_one_gpu_limits_and_the_one_admission_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDALAB_HOST_IDENTITY_DIR", str(tmp_path))
    c = hub_config()
    assert c.JupyterHub.spawner_class == "dockerspawner.DockerSpawner"
    spawned = DockerSpawnerSeen(7, "ada")
    c.Spawner.pre_spawn_hook(spawned)
    assert spawned.extra_host_config["init"] is True
    assert spawned.extra_host_config["device_requests"] == [
        {"Driver": "nvidia", "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]
    assert c.DockerSpawner.cpu_limit > 0 and c.DockerSpawner.mem_limit
    mounts = c.DockerSpawner.volumes
    assert image_env("CUDALAB_ADMISSION_DIR") in mounts.values(), (mounts, image_env("CUDALAB_ADMISSION_DIR"))
    assert "/srv/nbgrader/exchange" in mounts.values()
    assert c.DockerSpawner.remove is True
    assert int(c.Spawner.environment["CUDALAB_GPU_IDLE_S"]) > 0


def test_containers_reach_the_hub_on_their_network_and_nothing_else_does():
    c = hub_config()
    assert c.DockerSpawner.network_name and c.DockerSpawner.use_internal_ip is True
    assert c.JupyterHub.hub_bind_url == f"http://{c.JupyterHub.hub_connect_ip}:8081"
    assert not c.JupyterHub.hub_connect_ip.startswith("0.")


def test_the_fallback_authenticator_needs_no_lms(monkeypatch):
    monkeypatch.setenv("CUDALAB_AUTHENTICATOR", "native")
    monkeypatch.setenv("CUDALAB_INSTRUCTORS", "prof,ta")
    c = hub_config()
    assert c.JupyterHub.authenticator_class == "native"
    assert c.Authenticator.admin_users == {"prof", "ta"}
    model = c.Authenticator.post_auth_hook(None, None, {"name": "ta"})
    assert model["groups"] == ["instructors"] and model["admin"] is True
    model = c.Authenticator.post_auth_hook(None, None, {"name": "ada"})
    assert model["groups"] == ["students"] and model["admin"] is False
    monkeypatch.setenv("CUDALAB_AUTHENTICATOR", "pam")
    with pytest.raises(ValueError, match="CUDALAB_AUTHENTICATOR='pam'"):
        hub_config()


def test_kernels_use_ipc_in_every_server():
    single_user = (DEPLOY / "singleuser" / "jupyter_server_config.py").read_text()
    assert 'c.AsyncIOLoopKernelManager.transport = "ipc"' in single_user
    assert "singleuser/jupyter_server_config.py" in (DEPLOY / "Dockerfile").read_text()


def test_idle_servers_are_culled():
    c = hub_config()
    culler = next(s for s in c.JupyterHub.services if s["name"] == "jupyterhub-idle-culler-service")
    assert "jupyterhub_idle_culler" in culler["command"]
    assert any(a.startswith("--timeout=") for a in culler["command"])
    role = next(r for r in c.JupyterHub.load_roles if "jupyterhub-idle-culler-service" in r["services"])
    assert "delete:servers" in role["scopes"]


def test_the_class_board_is_a_managed_service_the_course_groups_reach():
    from cudalab_board import roles        # the config put board/ on sys.path, as the hub's does
    c = hub_config()
    board = next(s for s in c.JupyterHub.services if s["name"] == roles.SERVICE_NAME)
    command = board["command"]
    assert command[1:4] == ["-m", "cudalab_board", "serve"]
    assert command[command.index("--db") + 1].startswith(("sqlite:///", "postgresql://"))
    assert board["url"].endswith(command[command.index("--port") + 1])
    role = next(r for r in c.JupyterHub.load_roles if roles.ACCESS_SCOPE in r["scopes"])
    assert set(role["groups"]) == {roles.INSTRUCTORS, roles.STUDENTS}
    # a kernel's own token (the server's) reaches the board, and the containers know where it is
    assert roles.ACCESS_SCOPE in c.Spawner.server_token_scopes
    assert c.Spawner.environment["CUDALAB_BOARD_URL"].endswith(f"/services/{roles.SERVICE_NAME}/")


def test_hub_and_image_share_one_jupyterhub_version():
    hub = pins(DEPLOY / "requirements-hub.txt")
    assert "jupyterhub" in hub
    assert "requirements-hub.txt" in (DEPLOY / "Dockerfile").read_text()     # the image installs the same pins
    # and the live hub of test_hub_live.py is the course's JupyterHub
    assert pins(REPO / "requirements-hub-test.txt")["jupyterhub"] == hub["jupyterhub"]


def test_each_student_container_becomes_their_own_uid_and_the_hub_records_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDALAB_HOST_IDENTITY_DIR", str(tmp_path / "identities"))
    c = hub_config()
    for user_id, name in ((7, "ada"), (12, "ben"), (7, "ada")):
        spawned = DockerSpawnerSeen(user_id, name)
        c.Spawner.pre_spawn_hook(spawned)
        # started as root for the entrypoint alone, which may do only what it needs to (and keeps nothing)
        assert spawned.extra_create_kwargs == {"user": "0"}
        host = spawned.extra_host_config
        assert host["cap_drop"] == ["ALL"] and set(host["cap_add"]) == {"CHOWN", "DAC_OVERRIDE", "SETUID",
                                                                         "SETGID", "SETPCAP"}
        assert host["security_opt"] == ["no-new-privileges"]
        assert spawned.environment == {"CUDALAB_CELL_TIMEOUT": "600", "CUDALAB_UID": str(100000 + user_id),
                                       "CUDALAB_GID": "100"}
    record = tmp_path / "identities" / "uids.json"
    assert json.loads(record.read_text()) == {"100007": "ada", "100012": "ben"}
    assert record.stat().st_mode & 0o777 == 0o644
    # the formgrader reads that record, mounted read-only, in its collect
    formgrader = next(s for s in c.JupyterHub.services if s["command"][:2] == ["docker", "run"])
    command = formgrader["command"]
    assert f"{tmp_path / 'identities'}:/run/cudalab-identities:ro" in command
    assert "CUDALAB_UID_MAP=/run/cudalab-identities/uids.json" in command
    assert "--user" not in command         # the image's jovyan (uid 1000): the exchange's instructor


def test_the_uid_scheme_is_the_kubernetes_one():
    z2jh = (REPO / "deploy" / "z2jh" / "config.yaml").read_text()
    assert f"CUDALAB_UID_BASE = {cudalab_identity.UID_BASE}\n" in z2jh
    assert f"CUDALAB_USERS_GID = {cudalab_identity.USERS_GID}\n" in z2jh


def run_entrypoint(tmp_path: Path, env: dict[str, str], command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(ENTRYPOINT), *command], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ["PATH"], "CUDALAB_ENTRYPOINT_PASSWD": str(tmp_path / "passwd"),
                               "CUDALAB_ENTRYPOINT_HOME": str(tmp_path / "home"), **env})


def test_the_entrypoint_becomes_the_student_with_no_capabilities(tmp_path):
    skip_unless_root("switching uid")
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n"
                                     "jovyan:x:1000:1000::/home/jovyan:/bin/bash\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (home / "work" / "notes.ipynb").write_text("{}")
    secret = tmp_path / "hosts-secret"
    secret.write_text("root's")
    (home / "link").symlink_to(secret)                 # a student's link is chowned itself, not followed
    for path in (home, home / "work", home / "work" / "notes.ipynb"):
        os.chown(path, 1000, 1000)
    os.lchown(home / "link", 1000, 1000)
    run = run_entrypoint(tmp_path, {"CUDALAB_UID": "100007", "CUDALAB_GID": "100"},
                         ["sh", "-c", "id -u; id -g; id -G; echo $HOME $USER; grep -E '^(Cap|NoNewPrivs)' /proc/self/status"])
    assert run.returncode == 0 and run.stderr == "", run.stderr
    lines = run.stdout.splitlines()
    assert lines[:4] == ["100007", "100", "100", f"{home} jovyan"], lines
    status = dict(line.split(":\t") for line in lines[4:])
    assert status == {"CapInh": "0" * 16, "CapPrm": "0" * 16, "CapEff": "0" * 16, "CapBnd": "0" * 16,
                      "CapAmb": "0" * 16, "NoNewPrivs": "1"}, status
    assert (tmp_path / "passwd").read_text().splitlines() == [
        "root:x:0:0:root:/root:/bin/bash", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
        f"jovyan:x:100007:100::{home}:/bin/bash"]
    for path in (home, home / "work", home / "work" / "notes.ipynb", home / "link"):
        assert (path.lstat().st_uid, path.lstat().st_gid) == (100007, 100), path
    assert secret.stat().st_uid == 0


def test_the_entrypoint_refuses_to_run_a_server_as_root(tmp_path):
    skip_unless_root("the entrypoint's root path")
    (tmp_path / "passwd").write_text("jovyan:x:1000:1000::/home/jovyan:/bin/bash\n")
    (tmp_path / "home").mkdir()
    for env in ({}, {"CUDALAB_UID": "0"}, {"CUDALAB_UID": "007"}, {"CUDALAB_UID": "1000; id"},
                {"CUDALAB_UID": "100007", "CUDALAB_GID": "0"}, {"CUDALAB_UID": "-5"}):
        run = run_entrypoint(tmp_path, env, ["id", "-u"])
        assert run.returncode == 64 and run.stdout == "", (env, run.stdout)
        assert "refusing to run as root" in run.stderr, (env, run.stderr)
    assert (tmp_path / "passwd").read_text() == "jovyan:x:1000:1000::/home/jovyan:/bin/bash\n"


def _submission(inbound: Path, student: str, when: str, owner: int, text: str) -> Path:
    """A submission as `nbgrader submit` leaves it, made by uid owner."""
    folder = inbound / f"{student}+ps1+2026-03-0{when} 10:00:00.000000 UTC+{os.urandom(6).hex()}"
    folder.mkdir()
    (folder / "ps1.ipynb").write_text(text)
    (folder / "timestamp.txt").write_text(f"2026-03-0{when} 10:00:00.000000 UTC")
    for path in (folder, folder / "ps1.ipynb", folder / "timestamp.txt"):
        os.chown(path, owner, 100)
    return folder


def test_collect_refuses_submissions_not_owned_by_the_student_they_name(tmp_path, caplog, monkeypatch):
    skip_unless_root("files of several students")
    # nbgrader's gradebook runs `alembic` from PATH
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    sys.path.insert(0, str(DEPLOY / "singleuser"))
    from cudalab_exchange import OwnerCheckedCollect
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    alice, bob, carol = 100001, 100002, 100003
    identities = cudalab_identity.StudentIdentities(tmp_path / "identities")
    for uid, name in ((alice, "alice"), (bob, "bob"), (carol, "carol")):
        identities.record(uid, name)
    inbound = tmp_path / "exchange" / "course" / "inbound"
    inbound.mkdir(parents=True)
    _submission(inbound, "alice", "1", alice, "alice's own")
    _submission(inbound, "alice", "2", bob, "bob's, as alice")           # newer: nbgrader would take it
    planted = _submission(inbound, "bob", "1", bob, "bob's own")
    (planted / "extra.txt").write_text("alice's file in bob's submission")
    os.chown(planted / "extra.txt", alice, 100)
    linked = _submission(inbound, "carol", "1", carol, "carol's own")
    os.symlink("/etc/shadow", linked / "answers.txt")
    os.lchown(linked / "answers.txt", carol, 100)
    _submission(inbound, "dave", "1", 100099, "no student's")

    (tmp_path / "course").mkdir()
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = "course"
    config.CourseDirectory.assignment_id = "ps1"
    config.Exchange.root = str(tmp_path / "exchange")
    config.OwnerCheckedCollect.uid_map = str(identities.path)
    coursedir = CourseDirectory(config=config)
    caplog.set_level(logging.INFO, logger="cudalab-collect")
    collect = OwnerCheckedCollect(coursedir=coursedir, authenticator=Authenticator(config=config), config=config,
                                  log=logging.getLogger("cudalab-collect"))
    collect.start()

    submitted = tmp_path / "course" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["alice"]
    assert (submitted / "alice" / "ps1" / "ps1.ipynb").read_text() == "alice's own"
    refused = sorted(r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    assert len(refused) == 4, refused
    assert "names student alice, but . belongs to bob" in refused[0]
    assert "names student bob, but extra.txt belongs to alice" in refused[1]
    assert "names student carol, but answers.txt is not a file or a folder" in refused[2]
    assert "names student dave, but . belongs to uid 100099, no student" in refused[3]
    assert not [r for r in caplog.records if r.levelno == logging.WARNING and "cheating" in r.getMessage()]
