"""The course deployment (deploy/jupyterhub): no base image can be pulled here, so the Dockerfile is
linted (hadolint, from PyPI) and the hub's configuration is loaded as JupyterHub loads it, checking
what a course relies on: one GPU and CPU/memory limits per container, the one admission directory
every container shares mounted where the image tells cudalab to look for it, the containers' network
and the hub's address on it, the fallback authenticator, the idle culler, nbgrader's exchange, IPC
kernels, and the hub and the image at one JupyterHub version. test_hub_course.py runs the same
configuration live."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config import Config

from conftest import REPO

DEPLOY = REPO / "deploy" / "jupyterhub"


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


def test_each_container_gets_one_gpu_limits_and_the_one_admission_directory():
    c = hub_config()
    assert c.JupyterHub.spawner_class == "dockerspawner.DockerSpawner"

    class Spawner:                            # what the hook reads and writes of DockerSpawner
        def __init__(self, user_id):
            self.user = type("User", (), {"id": user_id})()
            self.extra_host_config = {"init": True}
    spawned = Spawner(7)
    c.Spawner.pre_spawn_hook(spawned)
    assert spawned.extra_host_config == {"init": True, "device_requests": [
        {"Driver": "nvidia", "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]}
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
