#!/usr/bin/env bash
# The main job without a GPU: install the build dependencies, build only the `causeway`
# binary (tests build in run-tests.sh), install it (/usr/local as root, else ~/.local), write
# the `incident` demo into the default trace DB and explain it with the installed binary.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
# Release without debug info: -g alone made each file a third slower to compile.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
ninja -C "$build_dir" -j"$(nproc)" causeway
if [ "$(id -u)" -eq 0 ]; then prefix=${PREFIX:-/usr/local}; else prefix=${PREFIX:-$HOME/.local}; fi
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
echo "installed $prefix/bin/causeway"
"$prefix/bin/causeway" demo incident
"$prefix/bin/causeway" explain
