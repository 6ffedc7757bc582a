#!/usr/bin/env bash
# Regenerates docs/img/report-<scenario>.png: the screenshots the browser test takes of each demo
# scenario's report (tests/e2e/report_browser.py, 1200 x 1800 px), palette-compressed with
# pngquant (apt-get install pngquant) so the set stays small.
#   scripts/report-screenshots.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build}/causeway")
command -v pngquant >/dev/null || { echo "pngquant is not installed (apt-get install pngquant)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CAUSEWAY_BIN=$bin CAUSEWAY_REPORT_SCREENSHOTS=$tmp python3 tests/e2e/report_browser.py
mkdir -p docs/img
for f in "$tmp"/*.png; do
  pngquant --quality=60-85 --speed 1 --force -o "docs/img/report-$(basename "$f")" "$f"
done
du -ch docs/img/report-*.png | tail -1
