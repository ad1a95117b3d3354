"""The course hub as shipped, live: deploy/jupyterhub/jupyterhub_config.py loaded by JupyterHub (from
PyPI), two users logging in through its LTI 1.3 authenticator, a cudalab kernel in a student's
server, and an nbgrader assignment from release to grade across the two.

The hub's configuration file here loads the shipped one (load_subconfig) and changes only what
cannot run without Docker: the local spawner instead of DockerSpawner (and no per-container GPU
hook), the formgrader service as a local process instead of a container, no idle culler and no
board service (tests/board has its own hub), localhost ports, and a temporary course, exchange and
database. The LMS is played by this test: an RSA key of its own, its JWKS served on localhost, and
id_tokens it signs after following the hub's OIDC login initiation, as an LMS does. Every server
gets the shipped single-user configuration (deploy/jupyterhub/singleuser, as the image's
/etc/jupyter), so its kernels run over IPC.

The round trip: the instructor (LTI role Instructor: group instructors, hub admin) generates and
releases ps1 of the sample course (notebooks/assignments) in the formgrader service with their own
token; the student (Learner: group students) fetches it in their server, answers it (alice's
committed answers) and submits; the instructor collects and autogrades it (the cudalab kernel on the
CPU) and the formgrader shows the student's full score. A launch with no course role, one from
another course and one with a forged signature are refused.

Per-student identities (run as root, as here): each student's server runs as a system user with
the uid the shipped hook gives them (cudalab_identity: 100000 + hub id; created by this test's hook
where the image's entrypoint would become it), and the formgrader collects with the shipped
owner-checked collect and the hub's uid record. A second student, dan, can neither list the
exchange's inbound nor find cleo's submission in it, and his `nbgrader submit --student cleo` after
cleo's own is refused at collect, which says so, while cleo's own is collected and graded in full.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import jwt
import pytest
import requests
import websocket
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import REPO, free_tcp_ports, serving
from test_deploy import DEPLOY
from test_hub_live import (MIME, SERVER_START_TIMEOUT, Hub, _poll, kernel_processes, run_cell,
                           skip_without_hub)

COURSE_SRC = REPO / "notebooks" / "assignments"
COURSE_ID = "cudalab-sample"                      # the sample course's own id (its nbgrader_config.py)
ASSIGNMENT = "ps1"
NOTEBOOK = "tiling-and-histograms.ipynb"
FULL_MARKS = 9.0                                  # ps1's points, all earned by alice's answers
CONTEXT = "course-v1:cuda-2026"                   # the LMS course the hub is registered for
CLIENT_ID = "cudalab-test-client"
INSTRUCTOR_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
STUDENT_ACCOUNT = "cudalab hub course test"   # the comment of the system users this test creates
GRADE_TIMEOUT = 120        # seconds for the formgrader to autograde one submission on two busy cores

pytestmark = [pytest.mark.timeout(400), pytest.mark.serial]


class Platform:
    """The LMS: its signing key, its JWKS on localhost, and the id_tokens of its launches."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = uuid.uuid4().hex
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        body = json.dumps({"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}).encode()

        class JWKS(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), JWKS)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = "https://lms.example.edu"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def id_token(self, nonce: str, email: str, roles: list[str], context: str = CONTEXT,
                 key=None) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer, "aud": CLIENT_ID, "azp": CLIENT_ID, "sub": uuid.uuid4().hex,
            "iat": now, "exp": now + 300, "nonce": nonce, "email": email,
            "https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiResourceLinkRequest",
            "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
            "https://purl.imsglobal.org/spec/lti/claim/deployment_id": "1",
            "https://purl.imsglobal.org/spec/lti/claim/target_link_uri": "https://hub.example.edu/hub/",
            "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "cudalab-link"},
            "https://purl.imsglobal.org/spec/lti/claim/roles": roles,
            "https://purl.imsglobal.org/spec/lti/claim/context": {"id": context, "title": "CUDA"},
            "https://purl.imsglobal.org/spec/lti/claim/custom": {"login": email.split("@")[0]},
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})


def remove_student_accounts() -> None:
    """The system users this test created (by their comment), this run's or an interrupted one's."""
    for entry in pwd.getpwall():
        if entry.pw_gecos == STUDENT_ACCOUNT:
            subprocess.run(["userdel", entry.pw_name], check=True, timeout=30)


def student_python() -> list[str]:
    """A Python a student's uid can run with this environment's packages: this one, or (where it
    lives in a private home, as pyenv's in /root) the system's of the same version on PYTHONPATH."""
    try:       # as the local spawner starts a server: setgid, setgroups, setuid, exec
        if subprocess.run([sys.executable, "-c", "import jupyterhub"], capture_output=True, timeout=60,
                          user=65534, group=65534, extra_groups=[]).returncode == 0:
            return [sys.executable]
    except PermissionError:
        pass
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.access(system, os.X_OK):
        pytest.skip(f"no Python a student's uid can run ({sys.executable} is private, {system} missing)")
    return [system]


class CourseHub(Hub):
    """The shipped configuration, with only what needs Docker replaced (the module's docstring)."""

    def __init__(self, root: Path, platform: Platform):
        super().__init__(root)
        self.platform = platform
        self.formgrader_port, = free_tcp_ports(1)
        self.course = root / "course"
        self.exchange = root / "exchange"
        self.identities = root / "identities"
        self.homes = root / "h"                  # short: a kernel's IPC socket path is at most 107 bytes
        self.python = student_python()

    def server_environment(self) -> dict[str, str]:
        env = super().server_environment()
        # an IPC kernel's sockets live in the runtime directory, and a UNIX socket's path is at most
        # 107 bytes: pytest's temporary folders are too deep (each student's hook sets its own)
        self.runtime = Path(tempfile.mkdtemp(prefix="hubrt-"))
        env.update({"JUPYTER_CONFIG_PATH": os.pathsep.join([str(DEPLOY / "singleuser"),   # the image's /etc/jupyter
                                                           str(Path(sys.prefix) / "etc" / "jupyter")]),
                    "JUPYTER_RUNTIME_DIR": str(self.runtime),
                    "NBGRADER_EXCHANGE": str(self.exchange),
                    "PYTHONPATH": os.pathsep.join({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})})
        return env

    def student_env(self, name: str) -> dict[str, str]:
        """What a student's server has in its environment, for a command in its terminal."""
        home = self.homes / name
        return {**self.settings_env, "HOME": str(home), "USER": name, "JUPYTERHUB_USER": name,
                "PATH": os.environ["PATH"], "JUPYTER_CONFIG_DIR": str(home / "c"),
                "JUPYTER_DATA_DIR": str(home / "d"), "JUPYTER_RUNTIME_DIR": str(home / "r")}

    def stop(self) -> list[str]:
        left = super().stop()
        shutil.rmtree(self.runtime, ignore_errors=True)
        return left

    def write_config(self) -> Path:
        shutil.copytree(COURSE_SRC, self.course, ignore=shutil.ignore_patterns("submitted", "ps2", "ps3"))
        self.exchange.mkdir()
        self.exchange.chmod(0o1777)
        self.homes.mkdir()
        course_env = {"NBGRADER_COURSE_ID": COURSE_ID, "CUDALAB_AUTHENTICATOR": "lti13",
                      "CUDALAB_DOCKER_GATEWAY": "127.0.0.1",     # the hub on localhost, no Docker network
                      "CUDALAB_LTI_ISSUER": self.platform.issuer, "CUDALAB_LTI_CLIENT_ID": CLIENT_ID,
                      "CUDALAB_LTI_AUTHORIZE_URL": f"{self.platform.url}/authorize",
                      "CUDALAB_LTI_JWKS_URL": f"{self.platform.url}/jwks",
                      "CUDALAB_LTI_CONTEXT_ID": CONTEXT,
                      "CUDALAB_HOST_IDENTITY_DIR": str(self.identities),
                      # the LMS's login name (a custom parameter of the registration): an email's
                      # '@' in /user/NAME/ is unescaped by the Python proxy, and the server 404s
                      "CUDALAB_LTI_USERNAME_KEY": "custom_login"}
        settings = self.settings()
        server_env = self.settings_env = settings["Spawner.environment"]
        for name in ("JupyterHub.authenticator_class", "SharedPasswordAuthenticator.user_password",
                     "Authenticator.allow_all", "Spawner.environment", "JupyterHub.services",
                     "JupyterHub.load_roles"):
            del settings[name]
        # each student a system user of the uid the shipped hook gives them (the image's entrypoint
        # becomes that uid in a container), the server started as that user by the local spawner
        settings["JupyterHub.spawner_class"] = "jupyterhub.spawner.LocalProcessSpawner"
        del settings["SimpleLocalProcessSpawner.home_dir_template"]
        settings["Spawner.cmd"] = self.python + ["-m", "jupyterhub.singleuser"]
        # the formgrader answers an autograde when the notebook has run: longer than the Python
        # proxy's default 20 s on two busy cores (the node proxy of a course has no such limit)
        settings["ConfigurableHTTPProxy.command"] = settings["ConfigurableHTTPProxy.command"] + [
            f"--timeout={GRADE_TIMEOUT * 1000}", f"--proxy-timeout={GRADE_TIMEOUT * 1000}"]
        settings["CourseLTI13Authenticator.uri_scheme"] = "http"
        formgrader_env = {k: v for k, v in server_env.items() if k.startswith(("JUPYTER", "CUDALAB", "NBGRADER"))}
        # nbgrader runs `alembic` from PATH (the image's PATH has its venv; the hub's may not)
        formgrader_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        formgrader_env["CUDALAB_UID_MAP"] = str(self.identities / "uids.json")   # the container's mount
        del formgrader_env["JUPYTER_RUNTIME_DIR"]
        path = self.root / "jupyterhub_config.py"
        path.write_text(f'''"""The shipped course hub, run without Docker for tests/deploy/test_hub_course.py."""
import os
os.environ.update({course_env!r})
c = get_config()  # noqa: F821
load_subconfig({str(DEPLOY / "jupyterhub_config.py")!r})  # noqa: F821
''' + "".join(f"c.{k} = {v!r}\n" for k, v in settings.items()) + f'''
c.Spawner.environment = {{**c.Spawner.environment, **{server_env!r}}}
formgrader = next(s for s in c.JupyterHub.services if s["name"] == {COURSE_ID!r})
formgrader.update(url="http://127.0.0.1:{self.formgrader_port}", cwd={str(self.course)!r},
                  command=[{sys.executable!r}, "-m", "jupyterhub.singleuser", "--ip=127.0.0.1",
                           "--port={self.formgrader_port}"] + {settings["Spawner.args"]!r},
                  environment={{**formgrader["environment"], **{formgrader_env!r}}})
c.JupyterHub.services = [formgrader, {{"name": "cudalab-test", "api_token": {self.token!r}}}]
c.JupyterHub.load_roles = [r for r in c.JupyterHub.load_roles if "services" not in r] + [{{
    "name": "cudalab-test", "scopes": ["admin:users", "admin:servers", "tokens"], "services": ["cudalab-test"]}}]

import pwd, subprocess
import cudalab_identity   # (on sys.path: the shipped configuration put its folder there)
student_identities = cudalab_identity.StudentIdentities({str(self.identities)!r})


def student_account(spawner):
    """The shipped hook's uid, a system user of it (what the image's entrypoint does in a container)."""
    uid = student_identities.assign(spawner)
    home = {str(self.homes)!r} + "/" + spawner.user.name
    try:
        pwd.getpwnam(spawner.user.name)
    except KeyError:
        subprocess.run(["useradd", "--uid", str(uid), "--gid", str(cudalab_identity.USERS_GID), "--no-user-group",
                        "--home-dir", home, "--create-home", "--shell", "/bin/sh",
                        "--comment", {STUDENT_ACCOUNT!r}, spawner.user.name], check=True, timeout=30)
    spawner.environment = {{**spawner.environment, "JUPYTER_CONFIG_DIR": home + "/c",
                           "JUPYTER_DATA_DIR": home + "/d", "JUPYTER_RUNTIME_DIR": home + "/r"}}


c.LocalProcessSpawner.pre_spawn_hook = student_account
''')
        return path


@pytest.fixture(scope="module")
def course_hub():
    skip_without_hub()
    if os.getuid() != 0:
        pytest.skip("the course hub runs each student as a system user of their own uid: it needs root")
    remove_student_accounts()
    platform = Platform()
    # students' servers read the kernelspec and write the exchange here: a folder they can reach
    # (pytest's are private to root), with a short path (IPC socket paths)
    root = Path(tempfile.mkdtemp(prefix="clc-"))
    root.chmod(0o755)
    try:
        with serving(CourseHub(root, platform)) as hub:
            yield hub
    finally:
        platform.server.shutdown()
        remove_student_accounts()
        shutil.rmtree(root, ignore_errors=True)


def lti_launch(hub: CourseHub, email: str, roles: list[str], **token_args) -> tuple[requests.Session, requests.Response]:
    """A browser's LTI 1.3 launch from the LMS: the OIDC login initiation, the LMS's authentication
    response (a signed id_token with the nonce and state the hub asked for) posted back to the hub."""
    browser = requests.Session()
    start = browser.post(f"{hub.url}/hub/lti13/oauth_login", allow_redirects=False, timeout=10,
                         data={"iss": hub.platform.issuer, "login_hint": email, "client_id": CLIENT_ID,
                               "target_link_uri": f"{hub.url}/hub/", "lti_deployment_id": "1"})
    assert start.status_code == 302, (start.status_code, start.text)
    asked = urlparse(start.headers["Location"])
    assert f"{asked.scheme}://{asked.netloc}{asked.path}" == f"{hub.platform.url}/authorize"
    query = {k: v[0] for k, v in parse_qs(asked.query).items()}
    assert query["client_id"] == CLIENT_ID and query["response_type"] == "id_token"
    id_token = hub.platform.id_token(query["nonce"], email, roles, **token_args)
    landed = browser.post(query["redirect_uri"], data={"id_token": id_token, "state": query["state"]},
                          allow_redirects=False, timeout=10)
    return browser, landed


def user(hub: CourseHub, name: str) -> dict:
    status, body = hub.api("GET", f"/users/{name}")
    assert status == 200, body
    return body


def token_of(hub: CourseHub, name: str) -> str:
    status, body = hub.api("POST", f"/users/{name}/tokens", {"note": "test_hub_course"})
    assert status == 201, body
    return body["token"]


def test_lms_launches_log_in_course_members_in_their_groups_and_no_one_else(course_hub: CourseHub):
    _, landed = lti_launch(course_hub, "teacher@example.edu", [INSTRUCTOR_ROLE])
    assert landed.status_code == 302 and "jupyterhub-session-id" in landed.cookies, landed.text
    teacher = user(course_hub, "teacher")
    assert teacher["groups"] == ["instructors"] and teacher["admin"] is True, teacher
    _, landed = lti_launch(course_hub, "ada@example.edu", [LEARNER_ROLE])
    assert landed.status_code == 302, landed.text
    ada = user(course_hub, "ada")
    assert ada["groups"] == ["students"] and ada["admin"] is False, ada
    # no course role, another course, a key that is not the LMS's: refused, and no user made
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for email, roles, args in (("guest@example.edu", ["http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"], {}),
                               ("elsewhere@example.edu", [LEARNER_ROLE], {"context": "another-course"}),
                               ("forger@example.edu", [INSTRUCTOR_ROLE], {"key": other_key})):
        _, landed = lti_launch(course_hub, email, roles, **args)
        assert landed.status_code in (400, 401, 403), (email, landed.status_code, landed.text[:300])
        status, _ = course_hub.api("GET", f"/users/{email.split('@')[0]}")
        assert status == 404, email


def transcript(line: str) -> None:
    """CUDALAB_TRANSCRIPT=FILE: the login → spawn → %device steps written there as they happen (for
    a deployment's record; nothing is written otherwise)."""
    if os.environ.get("CUDALAB_TRANSCRIPT"):
        with open(os.environ["CUDALAB_TRANSCRIPT"], "a") as f:
            f.write(line.rstrip() + "\n")


def test_student_spawns_cudalab_whose_kernels_speak_ipc(course_hub: CourseHub):
    browser, landed = lti_launch(course_hub, "ben@example.edu", [LEARNER_ROLE])
    ben = user(course_hub, "ben")
    transcript(f"LMS → hub: LTI 1.3 launch of ben@example.edu (Learner) → {landed.status_code} "
               f"{landed.headers.get('Location')}; user {ben['name']}, groups {ben['groups']}, admin {ben['admin']}")
    started = time.monotonic()
    spawn = browser.get(f"{course_hub.url}/hub/spawn/ben", allow_redirects=False, timeout=30)
    assert spawn.status_code in (302, 303), (spawn.status_code, course_hub.log_text()[-3000:])
    _poll("ben's server", SERVER_START_TIMEOUT,
          lambda: user(course_hub, "ben")["servers"].get("", {}).get("ready"), course_hub.log_text)
    token = token_of(course_hub, "ben")
    server = course_hub.url + user(course_hub, "ben")["server"].rstrip("/")
    transcript(f"GET /hub/spawn/ben → {spawn.status_code}; the server ready at {urlparse(server).path}/ after "
               f"{time.monotonic() - started:.1f} s")
    kernel = requests.post(f"{server}/api/kernels", json={"name": "cudalab"}, timeout=30,
                           headers={"Authorization": f"token {token}"})
    assert kernel.status_code == 201, kernel.text
    transcript(f"POST {urlparse(server).path}/api/kernels {{\"name\": \"cudalab\"}} → {kernel.status_code}, "
               f"kernel {kernel.json()['id']}")
    session = uuid.uuid4().hex
    ws = websocket.create_connection(server.replace("http://", "ws://") +
                                     f"/api/kernels/{kernel.json()['id']}/channels?session_id={session}",
                                     header=[f"Authorization: token {token}"], timeout=60)
    try:
        reply, iopub = run_cell(ws, session, "%device", course_hub.log_text)
    finally:
        ws.close()
    assert reply["content"]["status"] == "ok", reply["content"]
    docs = [m["content"]["data"][MIME] for m in iopub if m["msg_type"] in ("execute_result", "display_data")
            and MIME in m["content"]["data"]]
    assert docs and docs[-1]["magic"] == "device", iopub
    assert not [m for m in iopub if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
    kernels = [p for p in kernel_processes(course_hub) if "--worker" not in p.cmdline()]
    assert len(kernels) == 1, [p.cmdline() for p in kernels]
    # ben's own uid, the hub's user id past the base, and the hub's record names it
    uid = pwd.getpwnam("ben").pw_uid
    assert kernels[0].uids().real == kernels[0].uids().effective == uid > 100000, kernels[0].uids()
    assert json.loads((course_hub.identities / "uids.json").read_text())[str(uid)] == "ben"
    connection = next(a for a in kernels[0].cmdline() if a.endswith(".json"))
    assert json.loads(Path(connection).read_text())["transport"] == "ipc"
    transcript(f"the kernel: pid {kernels[0].pid}, uid {uid} (ben), transport ipc; %device →")
    for m in iopub:
        if m["msg_type"] in ("execute_result", "display_data"):
            transcript(m["content"]["data"].get("text/plain", ""))


def _call(method: str, url: str, token: str, timeout: float = 60, **kw) -> dict:
    r = requests.request(method, url, headers={"Authorization": f"token {token}"}, timeout=timeout, **kw)
    assert r.status_code == 200, (method, url, r.status_code, r.text[:500])
    return r.json()


def test_nbgrader_release_submit_autograde_formgrade_across_two_users(course_hub: CourseHub):
    lti_launch(course_hub, "prof@example.edu", [INSTRUCTOR_ROLE])
    browser, _ = lti_launch(course_hub, "cleo@example.edu", [LEARNER_ROLE])
    prof, cleo = token_of(course_hub, "prof"), token_of(course_hub, "cleo")
    formgrader = f"{course_hub.url}/services/{COURSE_ID}/formgrader/api"

    # the formgrader is the instructors' alone
    denied = requests.get(f"{formgrader}/assignments", headers={"Authorization": f"token {cleo}"}, timeout=30)
    assert denied.status_code == 403, denied.status_code
    generated = _call("POST", f"{formgrader}/assignment/{ASSIGNMENT}/assign", prof)
    assert generated["success"], generated.get("log", "") + generated.get("error", "")[-3000:]
    assert _call("POST", f"{formgrader}/assignment/{ASSIGNMENT}/release", prof)["success"], "release"

    # cleo and dan start their servers together (each as their own uid)
    dans_browser, _ = lti_launch(course_hub, "dan@example.edu", [LEARNER_ROLE])
    dan = token_of(course_hub, "dan")
    for name, session in (("cleo", browser), ("dan", dans_browser)):
        session.get(f"{course_hub.url}/hub/spawn/{name}", allow_redirects=False, timeout=30)
    for name in ("cleo", "dan"):
        _poll(f"{name}'s server", SERVER_START_TIMEOUT,
              lambda: user(course_hub, name)["servers"].get("", {}).get("ready"), course_hub.log_text)
    server = course_hub.url + user(course_hub, "cleo")["server"].rstrip("/")
    dans_server = course_hub.url + user(course_hub, "dan")["server"].rstrip("/")
    course = {"course_id": COURSE_ID, "assignment_id": ASSIGNMENT}
    assert _call("POST", f"{server}/assignments/fetch", cleo, data=course)["success"], "fetch"
    assert _call("POST", f"{dans_server}/assignments/fetch", dan, data=course)["success"], "dan's fetch"
    answers = json.loads((COURSE_SRC / "submitted" / "alice" / ASSIGNMENT / NOTEBOOK).read_text())
    put = requests.put(f"{server}/api/contents/{ASSIGNMENT}/{NOTEBOOK}", timeout=30,
                       headers={"Authorization": f"token {cleo}"},
                       json={"type": "notebook", "format": "json", "content": answers})
    assert put.status_code == 200, put.text[:300]
    assert _call("POST", f"{server}/assignments/submit", cleo, data=course)["success"], "submit"

    # dan, in his server's terminal: he cannot list the inbound or find cleo's submission in it, and
    # submits his unanswered copy under cleo's name, after hers
    inbound = course_hub.exchange / COURSE_ID / "inbound"
    as_dan = ["setpriv", f"--reuid={pwd.getpwnam('dan').pw_uid}", "--regid=100", "--clear-groups"]
    looked = subprocess.run(as_dan + course_hub.python + ["-c", f"""
import glob, os
try:
    os.listdir({str(inbound)!r}); print("listed")
except PermissionError:
    print("not listable")
print(glob.glob({str(inbound)!r} + "/cleo+*"))
"""], capture_output=True, text=True, timeout=30, env=course_hub.student_env("dan"))
    assert looked.stdout.splitlines() == ["not listable", "[]"], (looked.stdout, looked.stderr)
    forged = subprocess.run(as_dan + course_hub.python + ["-m", "nbgrader", "submit", ASSIGNMENT, "--course", COURSE_ID,
                                                          "--student", "cleo"],
                            capture_output=True, text=True, timeout=60, env=course_hub.student_env("dan"),
                            cwd=course_hub.homes / "dan")
    assert forged.returncode == 0, forged.stderr           # the exchange takes it: collect judges it
    owners = sorted(pwd.getpwuid(p.stat().st_uid).pw_name for p in inbound.glob("cleo+*"))
    assert owners == ["cleo", "dan"], owners

    collected = _call("POST", f"{formgrader}/assignment/{ASSIGNMENT}/collect", prof)
    assert collected["success"], "collect"
    assert "names student cleo, but . belongs to dan" in collected["log"], collected["log"]
    graded = _call("POST", f"{formgrader}/submission/{ASSIGNMENT}/cleo/autograde", prof,
                   timeout=GRADE_TIMEOUT)
    assert graded["success"], graded
    rows = _call("GET", f"{formgrader}/submissions/{ASSIGNMENT}", prof)
    row = next(r for r in rows if r["student"] == "cleo")
    assert row["autograded"] and row["score"] == row["max_score"] == FULL_MARKS, row
