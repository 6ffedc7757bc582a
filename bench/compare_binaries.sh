#!/usr/bin/env bash
# Two (or more) causeway binaries timed on the same work in one run, alternating, so the host's
# load falls on each alike (a refactoring must not slow anything: issue #38, docs/BENCHMARKS.md).
#
#   bench/compare_binaries.sh ROUNDS EVENTS NAME=BINARY NAME=BINARY...
#
# Per round, each binary in turn (the order rotates every round):
#   write      `demo incident --events EVENTS` into a new DB: the synthetic session through the
#              writer (every table family), then the correlator over it (the stored chains);
#   merge      `merge` of that DB into a new one: the copy, then the correlator over the whole job;
#   stats      20 × `stats --json`, on one DB each binary wrote before the rounds (same demo, same seed);
#   explain    20 × `explain --json` on that DB (the stored chains);
#   tail       20 × `explain --tail --json` on that DB (the tail by cause, diagnosed at query time);
#   requests   20 × `requests --json` on a `requests-prefill` DB (request causes at query time).
# Prints one TSV line per measure, binary and round (wall and user+sys CPU seconds), then per
# measure and binary the median and range of each. CPU time is the steadier figure on a busy host.
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n 2,17p "$0" >&2
  exit 1
fi
rounds=$1 events=$2
shift 2
names=() bins=()
for nb in "$@"; do
  names+=("${nb%%=*}")
  bins+=("${nb#*=}")
  [ -x "${nb#*=}" ] || { echo "compare_binaries: ${nb#*=} is not an executable" >&2; exit 1; }
done
work=$(mktemp -d /tmp/cw-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT
raw="$work/raw.tsv"

# Each binary reads DBs of its own schema: the same demo (same seed, same rows) written by each.
for i in "${!bins[@]}"; do
  "${bins[$i]}" demo incident --events "$events" --db "$work/shared.${names[$i]}.db" -q
  "${bins[$i]}" demo requests-prefill --db "$work/req.${names[$i]}.db" -q
done

timed() {  # timed MEASURE NAME ROUND COMMAND... : appends "measure name round wall cpu"
  local m=$1 n=$2 r=$3
  shift 3
  /usr/bin/time -o "$work/time" -f "%e %U %S" "$@" >/dev/null 2>&1
  awk -v m="$m" -v n="$n" -v r="$r" '{ printf "%s\t%s\t%s\t%.3f\t%.3f\n", m, n, r, $1, $2 + $3 }' "$work/time" >>"$raw"
}
repeat20='for i in $(seq 20); do "$@" >/dev/null; done'  # bash -c "$repeat20" _ COMMAND...

for r in $(seq "$rounds"); do
  k=${#bins[@]}
  for j in $(seq 0 $((k - 1))); do
    i=$(( (j + r) % k ))
    b=${bins[$i]} n=${names[$i]}
    rm -f "$work/w.db"* "$work/m.db"*
    timed write "$n" "$r" "$b" demo incident --events "$events" --db "$work/w.db" -q
    timed merge "$n" "$r" "$b" merge -q -o "$work/m.db" "$work/w.db"
    timed stats "$n" "$r" bash -c "$repeat20" _ "$b" stats --json --db "$work/shared.$n.db"
    timed explain "$n" "$r" bash -c "$repeat20" _ "$b" explain --json --db "$work/shared.$n.db"
    timed tail "$n" "$r" bash -c "$repeat20" _ "$b" explain --tail --json --db "$work/shared.$n.db"
    timed requests "$n" "$r" bash -c "$repeat20" _ "$b" requests --json --db "$work/req.$n.db"
  done
done
cat "$raw"
echo "# measure binary: median wall s (range) | median cpu s (range), $rounds rounds, $events events, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$raw" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
seen = []
for m, n, *_ in rows:
    if (m, n) not in seen:
        seen.append((m, n))
for m, n in seen:
    w = [float(r[3]) for r in rows if r[0] == m and r[1] == n]
    c = [float(r[4]) for r in rows if r[0] == m and r[1] == n]
    print("%-9s %-8s wall %.3f (%.3f-%.3f) | cpu %.3f (%.3f-%.3f)" %
          (m, n, statistics.median(w), min(w), max(w), statistics.median(c), min(c), max(c)))
EOF
