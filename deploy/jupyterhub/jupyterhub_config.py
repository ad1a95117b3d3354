"""jupyterhub_config.py — a cudalab course on one GPU host: JupyterHub with DockerSpawner, each student
in a container of deploy/jupyterhub/Dockerfile's image.

- The GPU: every container sees the host's GPUs (device_requests, the NVIDIA container toolkit), and
  all of them share one admission directory from the host (CUDALAB_ADMISSION_DIR, mode 1777), so the
  number of CUDA contexts on a GPU stays bounded however many students are logged in, and the timed
  runs of two students take turns (README: "Never stuck, never crashed").
- Idle servers are culled after an hour (jupyterhub-idle-culler), and their kernels leave with them.
- nbgrader's exchange is a host directory mounted into every container.
- Past one host: the same image with KubeSpawner and the NVIDIA device plugin
  (`c.KubeSpawner.extra_resource_limits = {"nvidia.com/gpu": "1"}`); the admission directory is then
  per node (a hostPath volume).

Run the hub where Docker runs (pip install -r deploy/jupyterhub/requirements-hub.txt):
    sudo install -d -m 1777 /srv/cudalab/admission /srv/nbgrader/exchange
    jupyterhub -f deploy/jupyterhub/jupyterhub_config.py
"""
import os
import sys

c = get_config()  # noqa: F821  (JupyterHub's config loader provides it)

IMAGE = os.environ.get("CUDALAB_IMAGE", "cudalab-singleuser")
ADMISSION = os.environ.get("CUDALAB_HOST_ADMISSION_DIR", "/srv/cudalab/admission")
EXCHANGE = os.environ.get("NBGRADER_HOST_EXCHANGE", "/srv/nbgrader/exchange")
IDLE_SECONDS = int(os.environ.get("CUDALAB_IDLE_CULL_S", "3600"))

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
}
# every GPU of the host, through the NVIDIA container toolkit
c.DockerSpawner.extra_host_config = {
    "device_requests": [{"Driver": "nvidia", "Count": -1, "Capabilities": [["gpu"]]}],
}
c.DockerSpawner.mem_limit = os.environ.get("CUDALAB_MEM_LIMIT", "8G")

c.JupyterHub.load_roles = [{
    "name": "jupyterhub-idle-culler-role",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["jupyterhub-idle-culler-service"],
}]
c.JupyterHub.services = [{
    "name": "jupyterhub-idle-culler-service",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}"],
}]
