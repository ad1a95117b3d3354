"""`python -m cudalab install` / `uninstall`: the cudalab kernelspec for Jupyter, as
`python -m ipykernel install` writes python3's.

The kernelspec's argv runs this installation's binary through `python -m cudalab kernel`, which
execs it (same process, so Jupyter's signals and the kernel's parent watch are unchanged) with
NVIDIA's wheel libraries on LD_LIBRARY_PATH (locate.kernel_env). The launcher, not a path written
into kernel.json, is what finds them: `pip install cudalab[cuda13]` after `install` needs no second
`install`, and a frontend that does not expand ${VAR} in a kernelspec's env (VS Code's own launcher)
still gets them.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import locate

KERNEL_NAME = "cudalab"


def kernel_json(display_name: str | None = None, argv0: list[str] | None = None) -> dict:
    """The template's kernel.json with argv running argv0 (default: this installation's kernel through
    its launcher) in place of the template's "cudalab"."""
    spec = json.loads((locate.kernelspec_dir() / "kernel.json").read_text())
    spec["argv"] = (argv0 or [sys.executable, "-m", "cudalab", "kernel"]) + spec["argv"][1:]
    if display_name:
        spec["display_name"] = display_name
    return spec


def destination(name: str, user: bool, prefix: str | None) -> Path:
    """Where install() writes and uninstall() removes: jupyter_client's own rule for user/prefix/system."""
    from jupyter_client.kernelspec import KernelSpecManager
    return Path(KernelSpecManager()._get_destination_dir(name, user=user, prefix=prefix))


def install(user: bool = False, prefix: str | None = None, name: str = KERNEL_NAME,
            display_name: str | None = None) -> Path:
    """Writes the kernelspec (kernel.json and every logo of the template) and returns its folder."""
    from jupyter_client.kernelspec import KernelSpecManager
    locate.binary()                                   # refuse to install a kernelspec that cannot run
    template = locate.kernelspec_dir()
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / name
        staged.mkdir()
        (staged / "kernel.json").write_text(json.dumps(kernel_json(display_name), indent=1) + "\n")
        for logo in sorted(template.glob("logo-*")):
            shutil.copy(logo, staged / logo.name)
        return Path(KernelSpecManager().install_kernel_spec(str(staged), name, user=user, prefix=prefix))


def uninstall(user: bool = False, prefix: str | None = None, name: str = KERNEL_NAME) -> Path | None:
    """Removes the kernelspec: from the place user/prefix name, or, with neither, the one Jupyter
    finds first (as `jupyter kernelspec remove` does). Returns the folder removed, or None."""
    if user or prefix:
        path = destination(name, user, prefix)
        if not path.is_dir():
            return None
        shutil.rmtree(path)
        return path
    from jupyter_client.kernelspec import KernelSpecManager
    ksm = KernelSpecManager()
    ksm.ensure_native_kernel = False
    if name not in ksm.find_kernel_specs():
        return None
    return Path(ksm.remove_kernel_spec(name))


def _main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m cudalab")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for cmd, helptext in (("install", "install the cudalab kernelspec for Jupyter"),
                          ("uninstall", "remove the cudalab kernelspec")):
        p = sub.add_parser(cmd, help=helptext, description=helptext + " (system-wide unless told otherwise, "
                           "as `python -m ipykernel install`)")
        where = p.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="for the current user only (~/.local/share/jupyter)")
        where.add_argument("--sys-prefix", action="store_true",
                           help=f"in this Python environment ({sys.prefix}): venv, conda env")
        where.add_argument("--prefix", metavar="PREFIX", help="under PREFIX/share/jupyter/kernels")
        p.add_argument("--name", default=KERNEL_NAME, help=f"the kernelspec's name (default {KERNEL_NAME})")
        if cmd == "install":
            p.add_argument("--display-name", help="the name frontends show (default: the template's)")
    sub.add_parser("kernel", help="run the kernel binary with the arguments that follow "
                   "(what the kernelspec runs: `python -m cudalab kernel --help`)", add_help=False)
    sub.add_parser("where", help="print the kernel binary and the CUDA library folders it will be given")
    args = parser.parse_args(argv)
    try:
        if args.command == "kernel":                 # __main__ sends it to the launcher first
            from .launch import exec_kernel
            return exec_kernel(argv[1:])
        if args.command == "where":
            print(f"binary: {locate.binary()}")
            dirs = locate.cuda_library_dirs()
            print("CUDA libraries from wheels: " + (", ".join(dirs) if dirs else "none (pip install 'cudalab[cuda13]')"))
            return 0
        prefix = sys.prefix if args.sys_prefix else args.prefix
        if args.command == "install":
            path = install(args.user, prefix, args.name, args.display_name)
            print(f"Installed kernelspec {args.name} in {path}")
            return 0
        path = uninstall(args.user, prefix, args.name)
        if path is None:
            print(f"cudalab: no kernelspec {args.name} to remove"
                  + (f" in {destination(args.name, args.user, prefix)}" if args.user or prefix else ""),
                  file=sys.stderr)
            return 1
        print(f"Removed kernelspec {args.name} from {path}")
        return 0
    except locate.NotFound as e:
        print(f"cudalab: {e}", file=sys.stderr)
        return 1
    except PermissionError as e:
        print(f"cudalab: {e}: use --user or --sys-prefix, or run as root", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cudalab: {e}", file=sys.stderr)
        return 1
