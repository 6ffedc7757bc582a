#!/usr/bin/env bash
# Builds the sqlguard lexer+validator fuzzer (clang + libFuzzer + ASan/UBSan) in its own build
# folder and runs it for the given number of seconds, seeded with the SQL corpora.
# Exit status: 0 when no crash was found, non-zero otherwise (crash input left in the build
# folder as crash-*).
#
#   tests/fuzz/run_sqlguard_fuzz.sh 60
#
# Environment: CAUSEWAY_FUZZ_BUILD (build folder, default build-sqlguard-fuzz at the repo root),
# CAUSEWAY_JOBS (parallel compile jobs, default 2), CXX_FUZZ / CC_FUZZ (default clang++-14 /
# clang-14). Needs the libFuzzer runtime: apt-get install libclang-rt-14-dev.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${CAUSEWAY_FUZZ_BUILD:-$root/build-sqlguard-fuzz}"
jobs="${CAUSEWAY_JOBS:-2}"
cxx="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || true)}"
cc="${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}"
if [[ -z "$cxx" || -z "$cc" ]]; then
  echo "run_sqlguard_fuzz: clang is not installed (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "run_sqlguard_fuzz: $cxx cannot link -fsanitize=fuzzer (apt-get install libclang-rt-14-dev)" >&2
  exit 2
fi

mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCAUSEWAY_FUZZ=ON -DCAUSEWAY_BPF=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
ninja -C "$build" -j"$jobs" sqlguard_fuzz

# Seed corpus: one file per case of the golden SQL corpora.
corpus="$build/sqlguard_fuzz_corpus"
mkdir -p "$corpus"
for f in "$root"/tests/golden/sql/*.sql; do
  awk -v dir="$corpus" -v stem="$(basename "$f" .sql)" '
    /^#@ / { n++; out = sprintf("%s/%s-%03d", dir, stem, n); printf "" > out; next }
    n > 0 { print >> out }' "$f"
done

# libFuzzer's progress lines go to a log (thousands of them would bury the test summary of a CI
# run); its tail is printed, and more of it when a crash was found.
log="$build/fuzz.log"
rc=0
"$build/sqlguard_fuzz" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$build/" "$corpus" >"$log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  tail -n 200 "$log" >&2
  echo "run_sqlguard_fuzz: the fuzzer exited $rc (crash input in $build, full log $log)" >&2
  exit "$rc"
fi
grep -E '^(Done|stat::)' "$log" >&2
