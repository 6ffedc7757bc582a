#!/usr/bin/env bash
# Every test: install, build, then CTest over all tiers (unit, bpf, e2e; gpu tests skip
# with a printed reason when no GPU is present), then the bounded fuzz and sanitizer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --tests
./scripts/build.sh
# Real MCP clients for the e2e tier come from npm.
if [ -f tests/e2e/package.json ]; then
  (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
# Express, fastify and the openai SDK for the live request tests (tests/bpf/test_requests_node_bpf.cpp).
if [ -f tests/servers/package.json ]; then
  (cd tests/servers && npm ci --no-audit --no-fund --loglevel=error)
fi
# BPF tests attach raw tracepoints without tracefs, but `check` reports it: mount if absent.
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
status=0
ctest --test-dir build --output-on-failure --timeout 900 2>&1 | tee build/ctest-output.log || status=1
for extra in tests/fuzz/run_fuzz.sh tests/sanitize/run_asan.sh; do
  if [ -x "$extra" ]; then
    echo "== $extra" >&2
    "$extra" || status=1
  fi
done
# Repeated last, so the tail of a long log names what failed.
if [ -s build/Testing/Temporary/LastTestsFailed.log ]; then
  echo "== failed tests:" >&2
  cat build/Testing/Temporary/LastTestsFailed.log >&2
  # Each failed test's own output again (the last 80 lines of it).
  cut -d: -f2 build/Testing/Temporary/LastTestsFailed.log | while read -r name; do
    echo "== output of $name:" >&2
    awk -v t="$name" '$0 ~ "Start +[0-9]+: "t"$" {on=1; next} on && /Start +[0-9]+: / {on=0} on' build/ctest-output.log | tail -80 >&2
  done
fi
exit $status
