#!/usr/bin/env bash
# Builds the tests of the code that parses hostile input (sqlguard; common's depth-limited JSON
# parser and sanitizer; tracedb's histogram blob decoder) with ASan + UBSan in their own folder
# and runs them. The full binary is left out: building all of it with sanitizers on 2 cores
# costs over 10 minutes for little more coverage of untrusted input.
#
#   tests/sanitize/run_asan.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${CAUSEWAY_ASAN_BUILD:-$root/build-asan}"
targets=(test_sqlguard_text test_sqlguard_layers test_sqlguard_guard test_common test_tracedb)
cmake -S "$root" -B "$build" -G Ninja -DCAUSEWAY_SANITIZE=ON -DCAUSEWAY_BPF=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C "$build" -j"$(nproc)" "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
regex=$(IFS='|'; echo "^(${targets[*]})\$")
ctest --test-dir "$build" -R "$regex" --output-on-failure
