"""The kernelspec template and scripts/install-kernelspec.sh."""
from __future__ import annotations

import json
import subprocess

from jupyter_client.kernelspec import KernelSpecManager

from conftest import KERNELSPEC_TEMPLATE, REPO, kernel_binary


def test_template_fields():
    spec = json.loads(KERNELSPEC_TEMPLATE.read_text())
    assert spec["argv"] == ["cudalab", "-f", "{connection_file}"]
    assert spec["language"] == "cudalab"
    assert spec["interrupt_mode"] == "signal"
    assert isinstance(spec["display_name"], str) and spec["display_name"]


def test_kernelspec_found_in_test_jupyter_path(jupyter_env):
    spec = KernelSpecManager().get_kernel_spec("cudalab")
    assert spec.argv[0] == str(kernel_binary())
    assert spec.language == "cudalab"
    assert spec.interrupt_mode == "signal"


def test_install_script_writes_absolute_argv0(tmp_path):
    dest = tmp_path / "kernels" / "cudalab"
    binary = str(kernel_binary())
    r = subprocess.run([str(REPO / "scripts" / "install-kernelspec.sh"), binary, str(dest)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"install-kernelspec.sh failed: {r.stderr}"
    spec = json.loads((dest / "kernel.json").read_text())
    assert spec["argv"] == [binary, "-f", "{connection_file}"]
    assert spec["language"] == "cudalab"
    assert spec["interrupt_mode"] == "signal"
