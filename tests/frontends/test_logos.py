"""The kernelspec's logos: logo-svg.svg beside the PNGs, valid SVG, written by scripts/make-logos.py from
the same description as the PNGs, and installed wherever the PNGs are (the test harness's kernelspec,
scripts/install-kernelspec.sh), where Jupyter lists it as the kernelspec's `logo-svg` resource."""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

from jupyter_client.kernelspec import KernelSpecManager

from conftest import KERNELSPEC_TEMPLATE, REPO, kernel_binary, write_kernelspec

SPEC_DIR = KERNELSPEC_TEMPLATE.parent
LOGOS = ("logo-svg.svg", "logo-32x32.png", "logo-64x64.png")


def resources(resource_dir) -> dict[str, str]:
    """The kernelspec's resources as Jupyter Server lists them (its kernelspec model: every logo-* file of
    the resource directory, by its name without the extension)."""
    from jupyter_server.services.kernelspecs.handlers import kernelspec_model

    class Handler:
        base_url = "/"

    spec = KernelSpecManager().get_kernel_spec("cudalab")
    model = kernelspec_model(Handler(), "cudalab", spec.to_dict(), str(resource_dir))
    return model["resources"]


def test_svg_is_valid():
    root = ET.parse(SPEC_DIR / "logo-svg.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    box = [float(v) for v in root.get("viewBox").split()]
    assert box[:2] == [0, 0] and box[2] == box[3] > 0, "a square viewBox"
    shapes = root.findall(".//{http://www.w3.org/2000/svg}rect")
    assert len(shapes) == 1 + 16, "the rounded square and its 4x4 blocks"


def test_logos_are_what_the_script_draws(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "make-logos.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for name in LOGOS:
        assert (tmp_path / name).read_bytes() == (SPEC_DIR / name).read_bytes(), \
            f"{name} differs from what scripts/make-logos.py draws: run it"


def test_harness_kernelspec_lists_the_svg(tmp_path, monkeypatch):
    data = tmp_path / "share" / "jupyter"
    spec_dir = write_kernelspec(data, logos=True)
    monkeypatch.setenv("JUPYTER_PATH", str(data))
    assert KernelSpecManager().get_kernel_spec("cudalab").resource_dir == str(spec_dir)
    res = resources(spec_dir)
    assert {"logo-svg", "logo-32x32", "logo-64x64"} <= set(res), res
    assert res["logo-svg"].endswith("/logo-svg.svg")


def test_install_script_copies_the_svg(tmp_path):
    dest = tmp_path / "kernels" / "cudalab"
    r = subprocess.run([str(REPO / "scripts" / "install-kernelspec.sh"), str(kernel_binary()), str(dest)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    for name in LOGOS:
        assert (dest / name).read_bytes() == (SPEC_DIR / name).read_bytes()
