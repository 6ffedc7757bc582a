#!/usr/bin/env bash
# The main job without a GPU: install, build, write the `incident` demo into the default
# trace DB, then explain it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./build/causeway demo incident
if ./build/causeway explain --help >/dev/null 2>&1; then
  ./build/causeway explain
else
  ./build/causeway stats
fi
