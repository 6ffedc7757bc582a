#!/bin/sh
# The demos with a fixed clock write the same answers twice (demo --start-ns): what makes
# tests/golden/compare_binaries.sh DEMOS=each a byte-for-byte comparison. One binary compared
# with itself, each run writing its own demo DBs, over incident (its chains depended on where
# the writer cut its batches until the demo laid the zone map out by rows, tracedb/event_blocks.h),
# nccl-straggler and a request scenario: explain --json, requests --json, stats --json, the MCP
# answers, call_causes and the Perfetto digest; fails if any differs.
# Usage: test_golden_reproducible.sh SOURCE_DIR CAUSEWAY_BINARY
src=${1:?source dir}
bin=${2:?causeway binary}
command -v python3 > /dev/null || { echo "skipped: python3 is needed for the MCP transcript"; exit 77; }
out=$(DEMOS=each SCENARIOS="incident nccl-straggler requests-prefill" bash "$src/tests/golden/compare_binaries.sh" "$bin" "$bin")
rc=$?
echo "$out"
# A wall-clock start would differ between the two runs (every window and timeline moves).
[ $rc -eq 0 ] || exit 1
# 5 answers per call scenario, and requests --json for the request scenario.
echo "$out" | grep -q "the same, 16 files" || { echo "expected the 16 answers of the three scenarios"; exit 1; }
