"""jupyterhub_config.py — a cudalab course on one GPU host: JupyterHub with DockerSpawner, each student
in a container of deploy/jupyterhub/Dockerfile's image.

- The GPU: every container sees the host's GPUs (device_requests, the NVIDIA container toolkit), and
  all of them share one admission directory from the host (CUDALAB_ADMISSION_DIR, mode 1777), so the
  number of CUDA contexts on a GPU stays bounded however many students are logged in, and the timed
  runs of two students take turns (README: "Never stuck, never crashed").
- Idle servers are culled after an hour (jupyterhub-idle-culler), and their kernels leave with them.
- nbgrader's exchange is a host directory mounted into every container.
- The class board (README "Class leaderboard", docs/board.md): a managed service at /services/board/
  (board/cudalab_board), its database on this host's local disk, the course's groups `instructors`
  and `students` (board/cudalab_board/roles.py names them) with access to it, and every server's
  token able to reach it, so that %submit and %leaderboard work from a kernel with its own token.
- Past one host: the same image with KubeSpawner and the NVIDIA device plugin
  (`c.KubeSpawner.extra_resource_limits = {"nvidia.com/gpu": "1"}`); the admission directory is then
  per node (a hostPath volume).

Run the hub where Docker runs (pip install -r deploy/jupyterhub/requirements-hub.txt):
    sudo install -d -m 1777 /srv/cudalab/admission /srv/nbgrader/exchange
    jupyterhub -f deploy/jupyterhub/jupyterhub_config.py
"""
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub's config loader provides it)

IMAGE = os.environ.get("CUDALAB_IMAGE", "cudalab-singleuser")
ADMISSION = os.environ.get("CUDALAB_HOST_ADMISSION_DIR", "/srv/cudalab/admission")
EXCHANGE = os.environ.get("NBGRADER_HOST_EXCHANGE", "/srv/nbgrader/exchange")
IDLE_SECONDS = int(os.environ.get("CUDALAB_IDLE_CULL_S", "3600"))
# the class board: its source (this repository's board/), its database (SQLite on this host's local
# disk, never the exchange volume; or a postgresql:// URL), the course's problems file (kept off the
# students' image), whether the course opts in to the class view, and its URL as the containers reach
# it (through the proxy, from the Docker bridge)
BOARD_SRC = os.environ.get("CUDALAB_BOARD_SRC", str(Path(__file__).resolve().parents[2] / "board"))
BOARD_DB = os.environ.get("CUDALAB_BOARD_DB", "sqlite:////srv/cudalab/board/board.sqlite")
BOARD_PROBLEMS = os.environ.get("CUDALAB_BOARD_PROBLEMS", "/srv/cudalab/board/board-problems.json")
BOARD_PORT = int(os.environ.get("CUDALAB_BOARD_PORT", "10101"))
BOARD_URL = os.environ.get("CUDALAB_BOARD_URL", "http://172.17.0.1:8000/services/board/")
CLASS_VIEW = os.environ.get("CUDALAB_CLASS_VIEW", "0") == "1"

sys.path.insert(0, BOARD_SRC)
from cudalab_board import roles  # noqa: E402  (the course's group names, written once)

c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
c.JupyterHub.hub_ip = "0.0.0.0"               # containers reach the hub on the Docker network
c.DockerSpawner.image = IMAGE
c.DockerSpawner.remove = True                 # a culled server leaves no container behind
c.DockerSpawner.notebook_dir = "/home/jovyan"
c.DockerSpawner.volumes = {
    "cudalab-{username}": "/home/jovyan",     # each student's work, kept across servers
    ADMISSION: "/run/cudalab-admission",      # one admission directory for every container on the host
    EXCHANGE: "/srv/nbgrader/exchange",
}
c.DockerSpawner.environment = {              # (the image sets CUDALAB_ADMISSION_DIR to the mount above)
    "CUDALAB_GPU_IDLE_S": "60",               # an idle student's CUDA context goes to a waiting one after a minute
    "CUDALAB_CELL_TIMEOUT": "600",
    "CUDALAB_BOARD_URL": BOARD_URL,           # %submit, %leaderboard (with the server's own hub token)
    "CUDALAB_CLASS_VIEW": "1" if CLASS_VIEW else "0",
}
# every GPU of the host, through the NVIDIA container toolkit
c.DockerSpawner.extra_host_config = {
    "device_requests": [{"Driver": "nvidia", "Count": -1, "Capabilities": [["gpu"]]}],
}
c.DockerSpawner.mem_limit = os.environ.get("CUDALAB_MEM_LIMIT", "8G")

# the course's groups: members are added through the admin page or the REST API (this only creates them)
c.JupyterHub.load_groups = {roles.INSTRUCTORS: {"users": []}, roles.STUDENTS: {"users": []}}
c.JupyterHub.load_roles = [{
    "name": "jupyterhub-idle-culler-role",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["jupyterhub-idle-culler-service"],
}, {
    "name": "cudalab-board-user",
    "description": "The course's members may use the class board",
    "scopes": [roles.ACCESS_SCOPE],
    "groups": [roles.INSTRUCTORS, roles.STUDENTS],
}]
# a server's JUPYTERHUB_API_TOKEN (what its kernels send to the board): the default server role's
# scopes, and the board's access scope (given only where the user holds it, i.e. course members)
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", roles.ACCESS_SCOPE]
c.JupyterHub.services = [{
    "name": "jupyterhub-idle-culler-service",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}"],
}, {
    "name": roles.SERVICE_NAME,
    "url": f"http://127.0.0.1:{BOARD_PORT}",
    "command": [sys.executable, "-m", "cudalab_board", "serve", "--db", BOARD_DB, "--problems", BOARD_PROBLEMS,
                "--port", str(BOARD_PORT)] + (["--class-view"] if CLASS_VIEW else []),
    "environment": {"PYTHONPATH": BOARD_SRC, "CUDALAB_BIN": os.environ.get("CUDALAB_BIN", "cudalab")},
    "oauth_no_confirm": True,                 # the page opens without a consent screen
    "display": True,                          # listed in the hub's Services menu
}]
