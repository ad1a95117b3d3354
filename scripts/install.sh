#!/usr/bin/env bash
# install.sh PREFIX USER BIN CUDA_LIB — install the binary, the CUDA backend, the
# CPU runner's runtime and prelude (lib/cudalab/simt beside the binary's build) and
# the kernelspec. USER=1 installs under ~/.local and the user's Jupyter data dir.
# install.sh --uninstall PREFIX USER — remove what that install wrote (`make uninstall`), from the
# same prefix and kernelspec folder (the file list below must follow the install's); folders are
# removed only when left empty.
set -euo pipefail
mode=install
if [ "${1:-}" = --uninstall ]; then mode=uninstall; shift; fi
prefix=$1 user=$2
if [ "$user" = 1 ]; then
    prefix="$HOME/.local"
    kdir="${JUPYTER_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/jupyter}/kernels/cudalab"
else
    kdir="$prefix/share/jupyter/kernels/cudalab"
fi

if [ "$mode" = uninstall ]; then
    rm -f "$prefix/bin/cudalab" "$prefix/lib/cudalab/libcudalab_cuda.so" \
          "$prefix/lib/cudalab/simt/cudalab-runner" "$prefix/lib/cudalab/simt/cudalab_simt.h"
    rmdir "$prefix/lib/cudalab/simt" "$prefix/lib/cudalab" 2>/dev/null || true
    rm -rf "$kdir"
    echo "removed cudalab from $prefix and its kernelspec $kdir"
    exit 0
fi

bin=$3 cudalib=$4
install -d "$prefix/bin"
install -m 755 "$bin" "$prefix/bin/cudalab"
if [ -n "$cudalib" ]; then
    install -d "$prefix/lib/cudalab"
    install -m 755 "$cudalib" "$prefix/lib/cudalab/"
fi
simt="$(dirname "$bin")/../lib/cudalab/simt"
if [ -d "$simt" ]; then
    install -d "$prefix/lib/cudalab/simt"
    install -m 755 "$simt/cudalab-runner" "$prefix/lib/cudalab/simt/"
    install -m 644 "$simt/cudalab_simt.h" "$prefix/lib/cudalab/simt/"
fi
"$(dirname "$0")/install-kernelspec.sh" "$prefix/bin/cudalab" "$kdir"
echo "installed cudalab into $prefix; check with: jupyter kernelspec list (make uninstall removes it)"
