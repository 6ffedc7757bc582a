#!/usr/bin/env bash
# Builds the libFuzzer targets (clang + libFuzzer + ASan/UBSan) in their own build folder and
# runs each for the given number of seconds:
#   sqlguard_fuzz    sqlguard's lexer + validator, seeded with the SQL corpora;
#   storeddata_fuzz  the decoders of data read back from a trace DB (rollups.hist blobs,
#                    stored JSON documents, stacks.frames), seeded with encoded histograms and
#                    the JSON of the MCP golden transcripts;
#   enginemetrics_fuzz  an inference engine's /metrics answer (HTTP/1.0 response reader and
#                    Prometheus text parser), seeded with vLLM-, TGI- and SGLang-shaped answers.
# Exit status: 0 when no crash was found, non-zero otherwise (crash input left in the build
# folder as crash-*).
#
#   tests/fuzz/run_fuzz.sh 60
#
# Environment: CAUSEWAY_FUZZ_BUILD (build folder, default build-fuzz at the repo root),
# CAUSEWAY_JOBS (parallel compile jobs, default 2), CXX_FUZZ / CC_FUZZ (default clang++-14 /
# clang-14). Needs the libFuzzer runtime: apt-get install libclang-rt-14-dev.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${CAUSEWAY_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${CAUSEWAY_JOBS:-2}"
cxx="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || true)}"
cc="${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}"
if [[ -z "$cxx" || -z "$cc" ]]; then
  echo "run_fuzz: clang is not installed (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "run_fuzz: $cxx cannot link -fsanitize=fuzzer (apt-get install libclang-rt-14-dev)" >&2
  exit 2
fi

mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCAUSEWAY_FUZZ=ON -DCAUSEWAY_BPF=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
ninja -C "$build" -j"$jobs" sqlguard_fuzz storeddata_fuzz enginemetrics_fuzz

# sqlguard seeds: one file per case of the golden SQL corpora.
sql_corpus="$build/sqlguard_fuzz_corpus"
mkdir -p "$sql_corpus"
for f in "$root"/tests/golden/sql/*.sql; do
  awk -v dir="$sql_corpus" -v stem="$(basename "$f" .sql)" '
    /^#@ / { n++; out = sprintf("%s/%s-%03d", dir, stem, n); printf "" > out; next }
    n > 0 { print >> out }' "$f"
done

# storeddata seeds: the first byte picks the decoder (0 histogram, 1 JSON document, 2 frames).
data_corpus="$build/storeddata_fuzz_corpus"
mkdir -p "$data_corpus"
printf '\x00\x05\x02\xfe\x01\x03' >"$data_corpus/hist-small"                   # buckets 5 and 259
printf '\x00\xff\x39\x01\x01\x01' >"$data_corpus/hist-top"                     # bucket 7423, then 7424
printf '\x00\x33\xf9\xff\xff\xff\xff\xff\xff\xff\xff\x31' >"$data_corpus/hist-huge-total"  # a total near 2^64
printf '\x02["libcudart.so.13!cudaMalloc+0x1f","python!train (train.py:42)"]' >"$data_corpus/frames"
n=0
for f in "$root"/tests/golden/mcp/*.jsonl; do
  while IFS= read -r line; do
    n=$((n + 1))
    { printf '\x01'; printf '%s' "$line"; } >"$data_corpus/json-$n"
  done <"$f"
done

# enginemetrics seeds: the first byte picks (0 the text itself, 1 a whole HTTP response).
prom_corpus="$build/enginemetrics_fuzz_corpus"
mkdir -p "$prom_corpus"
printf '\x00# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine="0",model_name="m"} 4.0\nvllm:num_preemptions_total{engine="0"} 12 1700000000000\n' >"$prom_corpus/vllm"
printf '\x00tgi_queue_size 3\ntgi_request_queue_duration_bucket{le="+Inf"} 9\n' >"$prom_corpus/tgi"
printf '\x00sglang:token_usage{model_name="a\\"b\\\\c\\n"} 0.97\nnan NaN\n' >"$prom_corpus/sglang"
printf '\x01HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nup 1\nx 2\n' >"$prom_corpus/response"

# libFuzzer's progress lines go to a log (thousands of them would bury the test summary of a CI
# run); its tail is printed, and more of it when a crash was found.
status=0
run() {
  local target="$1" corpus="$2" max_len="$3" log="$build/$1.log" rc=0
  "$build/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/$target-" "$corpus" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 200 "$log" >&2
    echo "run_fuzz: $target exited $rc (crash input in $build, full log $log)" >&2
    status=1
    return
  fi
  echo "== $target" >&2
  grep -E '^(Done|stat::)' "$log" >&2
}
run sqlguard_fuzz "$sql_corpus" 8192
run storeddata_fuzz "$data_corpus" 16384
run enginemetrics_fuzz "$prom_corpus" 16384
exit "$status"
