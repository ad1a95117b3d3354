"""jupyterhub_config.py — a cudalab course on one GPU host: JupyterHub with DockerSpawner, each student
in a container of deploy/jupyterhub/Dockerfile's image. docs/deployment.md walks an instructor through it.

- Who logs in: the course's LMS launches the hub through LTI 1.3 (cudalab_hub_auth.py): its
  instructors and TAs land in the group `instructors` and are the hub's admins, its learners in
  `students`; nobody else gets in. Without an LMS: CUDALAB_AUTHENTICATOR=native (sign-up, approved
  by an admin; CUDALAB_INSTRUCTORS names the instructors).
- The GPU: each container gets one of the host's GPUs (CUDALAB_GPUS, spread by user id), a CPU and a
  memory limit, and all of them share one admission directory from the host (mode 1777), so the
  number of CUDA contexts on a GPU stays bounded however many students are logged in, and the timed
  runs of two students take turns (README: "Never stuck, never crashed").
- The network: containers are on the Docker network `cudalab` (a fixed subnet the instructor
  creates); the hub's API listens on that network's gateway, which is where containers reach it.
- Who is who on disk: each student's container runs as a uid of their own (100000 + the hub's user
  id, cudalab_identity.py; the image's entrypoint switches to it and drops every capability), the
  hub records which uid is whom in CUDALAB_HOST_IDENTITY_DIR, and the formgrader reads that record.
- nbgrader: one course (NBGRADER_COURSE_ID), the exchange a host directory mounted in every
  container, students known to it by their hub name (the image's singleuser/nbgrader_config.py) and
  their submissions collected only when owned by that student's uid (singleuser/cudalab_exchange.py);
  the formgrader a hub service (/services/<course>/) that the course's instructors reach, running in
  a container of the same image with the course directory (so autograding runs cudalab on a GPU).
- Idle servers are culled after an hour (jupyterhub-idle-culler), and their kernels leave with them.
- The class board (README "Class leaderboard", docs/board.md): a managed service at /services/board/
  (board/cudalab_board), its database on this host's local disk, the course's groups `instructors`
  and `students` (board/cudalab_board/roles.py names them) with access to it, and every server's
  token able to reach it, so that %submit and %leaderboard work from a kernel with its own token.
- Past one host: deploy/z2jh (Zero to JupyterHub on Kubernetes).

Run the hub where Docker runs (pip install -r deploy/jupyterhub/requirements-hub.txt), as
docs/deployment.md says:
    docker network create --subnet 172.30.0.0/24 cudalab
    sudo install -d -m 1777 /srv/cudalab/admission /srv/nbgrader/exchange
    sudo install -d -m 755 /srv/cudalab/identities
    jupyterhub -f deploy/jupyterhub/jupyterhub_config.py
"""
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub's config loader provides it)

HERE = Path(__file__).resolve().parent


def setting(name: str, default: str) -> str:
    """One of the course's settings, from the hub's environment (docs/deployment.md lists them)."""
    return os.environ.get(name, default)


IMAGE = setting("CUDALAB_IMAGE", "cudalab-singleuser")
ADMISSION = setting("CUDALAB_HOST_ADMISSION_DIR", "/srv/cudalab/admission")
EXCHANGE = setting("NBGRADER_HOST_EXCHANGE", "/srv/nbgrader/exchange")
COURSE_ID = setting("NBGRADER_COURSE_ID", "cuda101")
COURSE_DIR = setting("NBGRADER_HOST_COURSE_DIR", f"/srv/nbgrader/{COURSE_ID}")
# the hub's record of the students' uids (written by the hub, read by the formgrader's collect)
IDENTITIES = setting("CUDALAB_HOST_IDENTITY_DIR", "/srv/cudalab/identities")
IDLE_SECONDS = int(setting("CUDALAB_IDLE_CULL_S", "3600"))
# the host's GPUs a container may get (one each, by user id), and each container's CPU and memory
GPUS = [g for g in setting("CUDALAB_GPUS", "0").split(",") if g.strip()]
CPU_LIMIT = float(setting("CUDALAB_CPU_LIMIT", "2"))
MEM_LIMIT = setting("CUDALAB_MEM_LIMIT", "8G")
# the Docker network of the containers: its name and its gateway (the host's address on it)
NETWORK = setting("CUDALAB_DOCKER_NETWORK", "cudalab")
GATEWAY = setting("CUDALAB_DOCKER_GATEWAY", "172.30.0.1")
HUB_API_PORT = int(setting("CUDALAB_HUB_API_PORT", "8081"))
PUBLIC_PORT = int(setting("CUDALAB_PUBLIC_PORT", "8000"))
# the formgrader's container: its fixed address on the network and its port
FORMGRADER_IP = setting("CUDALAB_FORMGRADER_IP", "172.30.0.2")
FORMGRADER_PORT = int(setting("CUDALAB_FORMGRADER_PORT", "9999"))
# the class board: its source (this repository's board/), its database (SQLite on this host's local
# disk, never the exchange volume; or a postgresql:// URL), the course's problems file (kept off the
# students' image), whether the course opts in to the class view, and its URL as the containers reach
# it (through the proxy, on the network's gateway)
BOARD_SRC = setting("CUDALAB_BOARD_SRC", str(HERE.parents[1] / "board"))
BOARD_DB = setting("CUDALAB_BOARD_DB", "sqlite:////srv/cudalab/board/board.sqlite")
BOARD_PROBLEMS = setting("CUDALAB_BOARD_PROBLEMS", "/srv/cudalab/board/board-problems.json")
BOARD_PORT = int(setting("CUDALAB_BOARD_PORT", "10101"))
BOARD_URL = setting("CUDALAB_BOARD_URL", f"http://{GATEWAY}:{PUBLIC_PORT}/services/board/")
CLASS_VIEW = setting("CUDALAB_CLASS_VIEW", "0") == "1"

sys.path.insert(0, BOARD_SRC)
sys.path.insert(0, str(HERE))
from cudalab_board import roles  # noqa: E402  (the course's group names, written once)
import cudalab_hub_auth  # noqa: E402  (who logs in, in which group)
import cudalab_identity  # noqa: E402  (each student's uid)

# ---------------------------------------------------------------- who logs in
c.JupyterHub.bind_url = f"http://:{PUBLIC_PORT}"   # behind the course's TLS proxy (docs/deployment.md)
c.Authenticator.manage_groups = True               # the authenticator says each user's course group
c.Authenticator.any_allow_config = True            # who is allowed: the authenticator's check_allowed, or
                                                   # the fallback's admin approval (allow_all below)
AUTHENTICATOR = setting("CUDALAB_AUTHENTICATOR", "lti13")
if AUTHENTICATOR == "lti13":
    # the LMS's registration of the tool (docs/deployment.md: "Registering the hub in the LMS")
    c.JupyterHub.authenticator_class = cudalab_hub_auth.CourseLTI13Authenticator
    c.CourseLTI13Authenticator.issuer = setting("CUDALAB_LTI_ISSUER", "")
    c.CourseLTI13Authenticator.client_id = {i for i in setting("CUDALAB_LTI_CLIENT_ID", "").split(",") if i}
    c.CourseLTI13Authenticator.authorize_url = setting("CUDALAB_LTI_AUTHORIZE_URL", "")
    c.CourseLTI13Authenticator.jwks_endpoint = setting("CUDALAB_LTI_JWKS_URL", "")
    c.CourseLTI13Authenticator.context_id = setting("CUDALAB_LTI_CONTEXT_ID", "")
    # the LMS's login name; its email (the default) where the LMS keeps names private
    c.CourseLTI13Authenticator.username_key = setting("CUDALAB_LTI_USERNAME_KEY", "email")
    c.CourseLTI13Authenticator.instructors_group = roles.INSTRUCTORS
    c.CourseLTI13Authenticator.students_group = roles.STUDENTS
elif AUTHENTICATOR == "native":
    # the fallback: students sign up at /hub/signup, an admin approves them at /hub/authorize
    c.JupyterHub.authenticator_class = "native"
    INSTRUCTORS = {n for n in setting("CUDALAB_INSTRUCTORS", "").split(",") if n}
    c.Authenticator.admin_users = INSTRUCTORS
    c.NativeAuthenticator.open_signup = False
    c.Authenticator.allow_all = True                # whoever an admin approved
    c.Authenticator.post_auth_hook = cudalab_hub_auth.instructors_hook(INSTRUCTORS, roles.INSTRUCTORS,
                                                                       roles.STUDENTS)
else:
    raise ValueError(f"CUDALAB_AUTHENTICATOR={AUTHENTICATOR!r}: use lti13 (the LMS) or native (sign-up)")

# ---------------------------------------------------------------- the network
# The hub's API on the Docker network's gateway only (not every interface): that is where the
# containers reach it, and nothing outside the host does
c.JupyterHub.hub_bind_url = f"http://{GATEWAY}:{HUB_API_PORT}"
c.JupyterHub.hub_connect_ip = GATEWAY
c.DockerSpawner.network_name = NETWORK
c.DockerSpawner.use_internal_ip = True            # the proxy (on the host) reaches containers on it

# ---------------------------------------------------------------- each student's container
c.JupyterHub.spawner_class = "dockerspawner.DockerSpawner"
c.DockerSpawner.image = IMAGE
c.DockerSpawner.remove = True                 # a culled server leaves no container behind
c.DockerSpawner.notebook_dir = "/home/jovyan"
c.DockerSpawner.volumes = {
    "cudalab-{username}": "/home/jovyan",     # each student's work, kept across servers
    ADMISSION: "/run/cudalab-admission",      # one admission directory for every container on the host
    EXCHANGE: "/srv/nbgrader/exchange",
}
c.Spawner.environment = {                     # (the image sets CUDALAB_ADMISSION_DIR to the mount above)
    "CUDALAB_GPU_IDLE_S": "60",               # an idle student's CUDA context goes to a waiting one after a minute
    "CUDALAB_CELL_TIMEOUT": "600",
    "CUDALAB_BOARD_URL": BOARD_URL,           # %submit, %leaderboard (with the server's own hub token)
    "CUDALAB_CLASS_VIEW": "1" if CLASS_VIEW else "0",
    "NBGRADER_COURSE_ID": COURSE_ID,          # singleuser/nbgrader_config.py
    "NBGRADER_EXCHANGE": "/srv/nbgrader/exchange",
}
c.DockerSpawner.cpu_limit = CPU_LIMIT
c.DockerSpawner.mem_limit = MEM_LIMIT


def one_gpu(user_id: int) -> dict:
    """The Docker device request of one of the host's GPUs (the NVIDIA container toolkit), the same
    one for a user every time; the students of one GPU take turns through the admission directory."""
    return {"Driver": "nvidia", "DeviceIDs": [GPUS[user_id % len(GPUS)]], "Capabilities": [["gpu"]]}


# What the image's entrypoint (cudalab-entrypoint.sh) needs as root, and nothing else: chown the home
# volume once, rewrite jovyan's passwd entry, switch uid and gid, empty the capability bounding set.
# It keeps none of them: the student's server runs with no capabilities at all.
ENTRYPOINT_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "SETUID", "SETGID", "SETPCAP"]
identities = cudalab_identity.StudentIdentities(IDENTITIES)


def prepare_container(spawner) -> None:
    """The pre-spawn hook: the student's uid (started as root, the entrypoint becomes it) and one GPU."""
    identities.assign(spawner)
    spawner.extra_create_kwargs = {**spawner.extra_create_kwargs, "user": "0"}
    spawner.extra_host_config = {**spawner.extra_host_config, "device_requests": [one_gpu(spawner.user.id)],
                                 "cap_drop": ["ALL"], "cap_add": ENTRYPOINT_CAPABILITIES,
                                 "security_opt": ["no-new-privileges"]}


c.Spawner.pre_spawn_hook = prepare_container

# ---------------------------------------------------------------- groups and what they may reach
# the course's groups come from the authenticator at each login (manage_groups: JupyterHub then
# refuses load_groups); the roles below name them, which creates them at the hub's start
c.JupyterHub.load_roles = [{
    "name": "jupyterhub-idle-culler-role",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["jupyterhub-idle-culler-service"],
}, {
    "name": "cudalab-board-user",
    "description": "The course's members may use the class board",
    "scopes": [roles.ACCESS_SCOPE],
    "groups": [roles.INSTRUCTORS, roles.STUDENTS],
}, {
    "name": f"formgrade-{COURSE_ID}",
    "description": "The course's instructors grade in its formgrader",
    "scopes": [f"access:services!service={COURSE_ID}"],
    "groups": [roles.INSTRUCTORS],
}]
# a server's JUPYTERHUB_API_TOKEN (what its kernels send to the board): the default server role's
# scopes, and the board's access scope (given only where the user holds it, i.e. course members)
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", roles.ACCESS_SCOPE]


def formgrader_command() -> list[str]:
    """The formgrader service: jupyterhub-singleuser in a container of the course image, with the
    course directory (source, release, submitted, autograded, gradebook.db) and the exchange, one
    GPU to autograde on, at a fixed address of the network, and the hub's record of the students'
    uids (read-only) for its collect. It runs as the image's user (uid 1000), the exchange's instructor:
    the owner of the course's inbound directory, which students may write to but not list.
    The hub gives the service its JUPYTERHUB_* environment; `-e NAME` passes each into the container."""
    passed = ["JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTERHUB_API_URL", "JUPYTERHUB_BASE_URL",
              "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_HOST", "JUPYTERHUB_OAUTH_CALLBACK_URL",
              "JUPYTERHUB_OAUTH_SCOPES", "JUPYTERHUB_OAUTH_ACCESS_SCOPES",
              "JUPYTERHUB_OAUTH_CLIENT_ALLOWED_SCOPES", "JUPYTERHUB_PUBLIC_URL",
              "JUPYTERHUB_PUBLIC_HUB_URL", "JUPYTERHUB_SERVICE_NAME", "JUPYTERHUB_SERVICE_PREFIX",
              "JUPYTERHUB_SERVICE_URL", "JUPYTERHUB_DEFAULT_URL"]
    return ["docker", "run", "--rm", "--name", f"cudalab-formgrader-{COURSE_ID}", "--network", NETWORK,
            "--ip", FORMGRADER_IP, "--cpus", str(CPU_LIMIT), "--memory", MEM_LIMIT,
            "--gpus", f"device={GPUS[0]}",
            "-v", f"{ADMISSION}:/run/cudalab-admission", "-v", f"{EXCHANGE}:/srv/nbgrader/exchange",
            "-v", f"{COURSE_DIR}:/home/jovyan/{COURSE_ID}", "-w", f"/home/jovyan/{COURSE_ID}",
            "-v", f"{IDENTITIES}:/run/cudalab-identities:ro",
            "-e", f"CUDALAB_UID_MAP=/run/cudalab-identities/{cudalab_identity.UID_MAP_NAME}",
            "-e", f"NBGRADER_COURSE_ID={COURSE_ID}", "-e", "NBGRADER_EXCHANGE=/srv/nbgrader/exchange",
            *[a for name in passed for a in ("-e", name)],
            IMAGE, "jupyterhub-singleuser", "--ip=0.0.0.0", f"--port={FORMGRADER_PORT}"]


c.JupyterHub.services = [{
    "name": "jupyterhub-idle-culler-service",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}"],
}, {
    "name": roles.SERVICE_NAME,
    "url": f"http://127.0.0.1:{BOARD_PORT}",
    "command": [sys.executable, "-m", "cudalab_board", "serve", "--db", BOARD_DB, "--problems", BOARD_PROBLEMS,
                "--port", str(BOARD_PORT)] + (["--class-view"] if CLASS_VIEW else []),
    "environment": {"PYTHONPATH": BOARD_SRC, "CUDALAB_BIN": os.environ.get("CUDALAB_BIN", "cudalab"),
                    # how many submissions the runner prepares at once (docs/board.md): more on a host
                    # with more cores; their timed runs still take the GPU one at a time
                    **{k: os.environ[k] for k in ("CUDALAB_BOARD_LANES",) if k in os.environ}},
    "oauth_no_confirm": True,                 # the page opens without a consent screen
    "display": True,                          # listed in the hub's Services menu
}, {
    "name": COURSE_ID,                        # nbgrader's formgrader, at /services/<course>/formgrader
    "url": f"http://{FORMGRADER_IP}:{FORMGRADER_PORT}",
    "command": formgrader_command(),
    "environment": {"JUPYTERHUB_DEFAULT_URL": "/formgrader"},
    "oauth_no_confirm": True,
    "display": True,
}]
