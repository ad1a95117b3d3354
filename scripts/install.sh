#!/usr/bin/env bash
# install.sh PREFIX USER BIN CUDA_LIB — install the binary, the CUDA backend, the
# CPU runner's runtime and prelude (lib/cudalab/simt beside the binary's build) and
# the kernelspec. USER=1 installs under ~/.local and the user's Jupyter data dir.
set -euo pipefail
prefix=$1 user=$2 bin=$3 cudalib=$4
if [ "$user" = 1 ]; then
    prefix="$HOME/.local"
    kdir="${JUPYTER_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/jupyter}/kernels/cudalab"
else
    kdir="$prefix/share/jupyter/kernels/cudalab"
fi
install -d "$prefix/bin"
install -m 755 "$bin" "$prefix/bin/cudalab"
if [ -n "$cudalib" ]; then
    install -d "$prefix/lib/cudalab"
    install -m 755 "$cudalib" "$prefix/lib/cudalab/"
fi
simt="$(dirname "$bin")/../lib/cudalab/simt"
if [ -d "$simt" ]; then
    install -d "$prefix/lib/cudalab/simt"
    install -m 644 "$simt/libcudalab_simt.a" "$simt/cudalab_simt.h" "$prefix/lib/cudalab/simt/"
fi
"$(dirname "$0")/install-kernelspec.sh" "$prefix/bin/cudalab" "$kdir"
echo "installed cudalab into $prefix; check with: jupyter kernelspec list"
