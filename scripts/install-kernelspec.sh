#!/usr/bin/env bash
# install-kernelspec.sh BIN DEST — write the cudalab kernelspec into DEST with
# argv[0] set to the absolute path of BIN (Jupyter does not search PATH reliably).
set -euo pipefail
bin=$1 dest=$2
src="$(dirname "$0")/../share/jupyter/kernelspecs/cudalab"
mkdir -p "$dest"
cp "$src"/logo-svg.svg "$src"/logo-32x32.png "$src"/logo-64x64.png "$dest"/
sed "s|\"argv\": \[\"cudalab\",|\"argv\": [\"$bin\",|" "$src/kernel.json" > "$dest/kernel.json"
echo "kernelspec: $dest (runs $bin)"
