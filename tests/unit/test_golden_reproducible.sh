#!/bin/sh
# The demos with a fixed clock write the same answers twice (demo --start-ns): what makes
# tests/golden/compare_binaries.sh a byte-for-byte comparison. One binary compared with
# itself over a call scenario and a request scenario; fails if any answer differs. (incident,
# oom and gpu-steal are left out: their stored chains still vary from run to run with the
# writer's block cut, docs/DIAGNOSIS.md "Same answers before and after".)
# Usage: test_golden_reproducible.sh SOURCE_DIR CAUSEWAY_BINARY
src=${1:?source dir}
bin=${2:?causeway binary}
command -v python3 > /dev/null || { echo "skipped: python3 is needed for the MCP transcript"; exit 77; }
out=$(SCENARIOS="nccl-straggler requests-prefill" bash "$src/tests/golden/compare_binaries.sh" "$bin" "$bin")
rc=$?
echo "$out"
# A wall-clock start would differ between the two runs (every window and timeline moves).
[ $rc -eq 0 ] || exit 1
echo "$out" | grep -q "the same, 9 files" || { echo "expected the 9 answers of the two scenarios"; exit 1; }
