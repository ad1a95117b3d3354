"""The Kubernetes deployment (deploy/z2jh): no cluster here, so the course's values are checked as Helm
checks them at install (the jupyterhub chart's defaults overlaid with deploy/z2jh/config.yaml, then
validated against the chart's own values.schema.json, kept in deploy/z2jh/chart-<version>/), and the
Python the values hand to the hub is run as the chart's jupyterhub_config.py runs it: LMS launches
become the course's groups, each user gets a uid and a passwd entry of their own, every pod on a node
shares one admission directory where the image looks for it."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml
from traitlets.config import Config

from conftest import REPO

CHART_VERSION = "4.4.0"
Z2JH = REPO / "deploy" / "z2jh"
CHART = Z2JH / f"chart-{CHART_VERSION}"
LTI_ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
LIS = "http://purl.imsglobal.org/vocab/lis/v2/"

sys.path.insert(0, str(REPO / "board"))     # cudalab_board.roles: the course's group names, written once
from cudalab_board import roles  # noqa: E402


def course_values() -> dict:
    return yaml.safe_load((Z2JH / "config.yaml").read_text())


def helm_coalesce(defaults, overrides):
    """Helm's merge of a chart's values.yaml with a user's values: maps merge key by key, anything
    else (lists included) is replaced, and a null removes the chart's key."""
    if not (isinstance(defaults, dict) and isinstance(overrides, dict)):
        return copy.deepcopy(overrides)
    merged = copy.deepcopy(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = helm_coalesce(defaults.get(key), value)
    return merged


def schema_errors(values: dict) -> list[str]:
    """What Helm would refuse in these course values: every schema error, with where it is."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    merged = helm_coalesce(yaml.safe_load((CHART / "values.yaml").read_text()), values)
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(merged)]


def hub_config(values: dict) -> Config:
    """The hub's config after the chart's jupyterhub_config.py: hub.config as given, the image as the
    chart sets it, then each hub.extraConfig entry executed in name order with `c` in scope."""
    c = Config(copy.deepcopy(values["hub"]["config"]))
    image = values["singleuser"]["image"]
    c.KubeSpawner.image = f"{image['name']}:{image['tag']}"
    c.KubeSpawner.init_containers = []          # the chart's singleuser.initContainers (none here)
    for name, source in sorted(values["hub"]["extraConfig"].items()):
        exec(compile(source, f"hub.extraConfig.{name}", "exec"), {"c": c})
    return c


def image_env(name: str) -> str:
    m = re.search(rf"\b{name}=(\S+)", (REPO / "deploy" / "jupyterhub" / "Dockerfile").read_text())
    assert m, f"the Dockerfile sets no {name}"
    return m.group(1).rstrip("\\").strip()


def launch(roles) -> dict:
    """An authentication model as ltiauthenticator returns it for a launch with these roles (the
    validated id_token's claims are its auth_state)."""
    claims = {"sub": "a1b2", "email": "ada@example.edu", LTI_ROLES_CLAIM: roles}
    return {"name": "ada@example.edu", "admin": None, "auth_state": claims}


# -- the chart accepts the values --------------------------------------------------------------------

def test_the_course_values_pass_the_charts_own_schema():
    assert schema_errors(course_values()) == []


@pytest.mark.parametrize("path,value", [
    (["singleuser", "extraResource", "limit"], {"nvidia.com/gpu": "1"}),   # limits, misspelt
    (["cull", "timeout"], "an hour"),
    (["singleuser", "image", "pullPolicy"], "Sometimes"),
    (["singleuser", "image", "tag"], 2026.11),                             # a number, not a tag
    (["hub", "config", "lti13Authenticator"], {"issuer": "x"}),            # not a class name
    (["singleuser", "storage", "extraVolume"], []),
])
def test_a_config_the_schema_rejects_fails(path, value):
    values = course_values()
    node = values
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    errors = schema_errors(values)
    assert errors, f"the schema let {'.'.join(path)} = {value!r} through"
    assert any(".".join(path[:-1]) in e or path[-1] in e for e in errors), errors


def test_the_hub_config_names_only_real_settings_of_the_authenticator():
    from jupyterhub.app import JupyterHub
    from jupyterhub.auth import Authenticator
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    config = course_values()["hub"]["config"]
    assert config["JupyterHub"]["authenticator_class"] == (
        f"{LTI13Authenticator.__module__}.{LTI13Authenticator.__name__}")
    for cls in (JupyterHub, Authenticator, LTI13Authenticator):
        unknown = set(config[cls.__name__]) - set(cls.class_traits(config=True))
        assert not unknown, f"{cls.__name__} has no settings {unknown}"
    authenticator = LTI13Authenticator(config=Config(config))
    assert authenticator.allow_all and authenticator.manage_groups
    assert authenticator.issuer.startswith("https://") and authenticator.client_id


# -- who is who ---------------------------------------------------------------------------------------

def test_the_course_groups_are_the_boards():
    values = course_values()
    role_groups = {g for role in values["hub"]["loadRoles"].values() for g in role.get("groups", [])}
    assert role_groups == {roles.INSTRUCTORS, roles.STUDENTS}
    hook = hub_config(values).Authenticator.post_auth_hook
    assert hook(None, None, launch([LIS + "membership#Instructor"]))["groups"] == [roles.INSTRUCTORS]
    assert hook(None, None, launch([LIS + "membership#Learner"]))["groups"] == [roles.STUDENTS]


def test_instructors_reach_students_servers_without_being_admins():
    instructor = course_values()["hub"]["loadRoles"]["cudalab-instructor"]
    assert "access:servers!group=students" in instructor["scopes"]
    assert not any(s in ("admin:users", "admin:servers", "access:servers") for s in instructor["scopes"])


@pytest.mark.parametrize("roles,groups,admin", [
    ([LIS + "membership#Instructor"], ["instructors"], None),
    ([LIS + "membership/Instructor#TeachingAssistant"], ["instructors"], None),
    ([LIS + "membership#Learner", LIS + "institution/person#Student"], ["students"], None),
    ([LIS + "membership#Instructor", LIS + "membership#Learner"], ["instructors", "students"], None),
    ([LIS + "system/person#Administrator"], [], True),
    ([LIS + "membership#Mentor"], [], None),                  # no course role: no group
    ([], [], None),
    ("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor", [], None),   # not a list
    ([{"role": LIS + "membership#Instructor"}, 7, None], [], None),
    (["Instructor"], [], None),                               # a short name LTI 1.3 does not define
    ([LIS + "membership#instructor"], [], None),              # role URIs are case-sensitive
])
def test_lti_roles_become_groups(roles, groups, admin):
    hook = hub_config(course_values()).Authenticator.post_auth_hook
    model = hook(None, None, launch(roles))
    assert model["groups"] == groups
    assert model["admin"] is admin
    assert model["name"] == "ada@example.edu"


@pytest.mark.parametrize("auth_state", [None, "not a dict", {}, {"sub": "x"}])
def test_a_launch_without_roles_gets_no_group(auth_state):
    hook = hub_config(course_values()).Authenticator.post_auth_hook
    model = hook(None, None, {"name": "bob", "admin": None, "auth_state": auth_state})
    assert model["groups"] == [] and model["admin"] is None


# -- the pods -----------------------------------------------------------------------------------------

def spawner(user_id: int):
    return SimpleNamespace(user=SimpleNamespace(id=user_id, name=f"user{user_id}"))


def test_each_user_has_a_uid_of_their_own():
    c = hub_config(course_values())
    uids = {c.KubeSpawner.uid(spawner(i)) for i in (1, 2, 3)}
    assert len(uids) == 3 and min(uids) > 65535           # past the image's and the node's users
    assert c.KubeSpawner.gid == c.KubeSpawner.fs_gid


def test_the_passwd_entry_names_the_users_uid_jovyan(tmp_path):
    """Runs the passwd init container's command as the pod runs it (KubeSpawner expands {userid}
    first), on a copy of an image's passwd: the user's uid is jovyan, so that nbgrader takes the
    student's id from JUPYTERHUB_USER, and the image's own jovyan line is gone."""
    values = course_values()
    c = hub_config(values)
    init = next(i for i in c.KubeSpawner.init_containers if i["name"] == "cudalab-passwd")
    mount = next(m for m in values["singleuser"]["storage"]["extraVolumeMounts"] if m["mountPath"] == "/etc/passwd")
    assert mount["readOnly"] and mount["subPath"] == "passwd"
    assert [m["name"] for m in init["volumeMounts"]] == [mount["name"]]
    (tmp_path / "etc").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n"
                                             "jovyan:x:1000:1000::/home/jovyan:/bin/bash\n")
    command = [part.format(userid=42) for part in init["command"]]
    script = command[2].replace("/etc/passwd", str(tmp_path / "etc" / "passwd")).replace(
        init["volumeMounts"][0]["mountPath"], str(tmp_path / "out"))
    subprocess.run(command[:2] + [script], check=True, timeout=10)
    entries = [line.split(":") for line in (tmp_path / "out" / mount["subPath"]).read_text().splitlines()]
    assert [e[0] for e in entries] == ["root", "jovyan"]
    assert int(entries[1][2]) == c.KubeSpawner.uid(spawner(42))
    assert int(entries[1][3]) == c.KubeSpawner.gid
    chart_values = helm_coalesce(yaml.safe_load((CHART / "values.yaml").read_text()), values)
    home = chart_values["singleuser"]["storage"]["homeMountPath"]
    assert entries[1][5] == values["singleuser"]["extraEnv"]["HOME"] == home


def test_every_pod_on_a_node_shares_one_admission_directory_where_the_image_looks():
    values = course_values()
    storage = values["singleuser"]["storage"]
    mount = next(m for m in storage["extraVolumeMounts"] if m["mountPath"] == image_env("CUDALAB_ADMISSION_DIR"))
    volume = next(v for v in storage["extraVolumes"] if v["name"] == mount["name"])
    assert volume["hostPath"]["type"] == "DirectoryOrCreate"     # the node's: its GPUs' slots and turns
    init = next(i for i in hub_config(values).KubeSpawner.init_containers if i["name"] == "cudalab-admission-dir")
    assert init["command"] == ["chmod", "1777", mount["mountPath"]]   # root's, 1777: README "Sharing a GPU"
    assert init["securityContext"]["runAsUser"] == 0
    assert init["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert init["volumeMounts"] == [{"name": volume["name"], "mountPath": mount["mountPath"]}]
    image = values["singleuser"]["image"]
    assert {i["image"] for i in hub_config(values).KubeSpawner.init_containers} == {f"{image['name']}:{image['tag']}"}


def test_a_gpu_per_pod_and_time_slices_of_the_device_plugin():
    values = course_values()
    assert values["singleuser"]["extraResource"]["limits"] == {"nvidia.com/gpu": "1"}
    assert values["singleuser"]["cpu"]["limit"] and values["singleuser"]["memory"]["limit"]
    plugin = yaml.safe_load((Z2JH / "nvidia-device-plugin.yaml").read_text())
    slicing = yaml.safe_load(plugin["config"]["map"]["default"])["sharing"]["timeSlicing"]
    resources = {r["name"]: r["replicas"] for r in slicing["resources"]}
    assert set(resources) == set(values["singleuser"]["extraResource"]["limits"])
    assert all(isinstance(n, int) and n > 1 for n in resources.values())
    assert slicing["failRequestsGreaterThanOne"] is True      # a pod never holds two slices of one GPU


def test_kernels_use_ipc_and_idle_servers_are_culled():
    values = course_values()
    server = values["singleuser"]["extraFiles"]["jupyter-server-cudalab"]
    assert server["data"]["KernelManager"]["transport"] == "ipc"
    assert server["data"]["MappingKernelManager"]["cull_idle_timeout"] > 0
    assert values["singleuser"]["extraEnv"]["JUPYTER_RUNTIME_DIR"].startswith("/tmp/")
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0


def test_the_server_and_nbgrader_read_the_files_the_pod_gets(tmp_path, monkeypatch):
    """The chart writes each extraFiles entry's data as JSON at its mountPath; the single-user server
    and nbgrader must find them there (a file in jupyter_server_config.d/, say, would be ignored)."""
    from jupyter_server.serverapp import ServerApp
    from nbgrader.apps.nbgraderapp import NbGraderApp
    files = course_values()["singleuser"]["extraFiles"]
    for entry in files.values():
        path = Path(entry["mountPath"])
        assert path.parent == Path("/etc/jupyter") and path.suffix == ".json", path
        (tmp_path / path.name).write_text(json.dumps(entry["data"]))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user"))
    loaded = {}
    for app in (ServerApp(), NbGraderApp()):
        app.load_config_file()
        loaded.update({section: dict(app.config[section]) for section in app.config})
    for entry in files.values():
        for section, settings in entry["data"].items():
            assert loaded.get(section) == settings, (entry["mountPath"], section)


def test_the_exchange_is_one_shared_volume_nbgrader_is_pointed_at():
    values = course_values()
    storage = values["singleuser"]["storage"]
    nbgrader = next(f for f in values["singleuser"]["extraFiles"].values()
                    if f["mountPath"] == "/etc/jupyter/nbgrader_config.json")["data"]
    assert nbgrader["CourseDirectory"]["course_id"]
    mount = next(m for m in storage["extraVolumeMounts"] if m["mountPath"] == nbgrader["Exchange"]["root"])
    volume = next(v for v in storage["extraVolumes"] if v["name"] == mount["name"])
    manifests = list(yaml.safe_load_all((Z2JH / "exchange.yaml").read_text()))
    claim = next(m for m in manifests if m["kind"] == "PersistentVolumeClaim")
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    job = next(m for m in manifests if m["kind"] == "Job")["spec"]["template"]["spec"]
    assert job["containers"][0]["command"] == ["chmod", "1777", nbgrader["Exchange"]["root"]]
    assert job["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


def test_the_vendored_chart_says_where_it_came_from():
    readme = (CHART / "README.md").read_text()
    assert f"tag `{CHART_VERSION}`" in readme and "zero-to-jupyterhub-k8s" in readme
    assert (CHART / "LICENSE").read_text().startswith("BSD 3-Clause License")
    assert f"--version {CHART_VERSION}" in (Z2JH / "config.yaml").read_text()
    assert f"--version {CHART_VERSION}" in (REPO / "docs" / "deployment.md").read_text()
