#!/usr/bin/env bash
# `causeway ship` into a private local ClickHouse (scripts/clickhouse_private.sh): rows/s and
# peak RSS of a first ship, the cost of a second one that finds nothing new, and how long
# explain/stats --fleet take over what was shipped. Not part of the test run.
#
#   bench/ship_rate.sh [BUILD_DIR] [--events N | --db FILE] [--scenario S] [--hosts H] [--split] [--keep]
#
# Makes a demo DB of N call events (default 10,000,000; `causeway demo incident --events N`)
# or copies FILE; --scenario nccl-straggler makes every host's copy a 4-rank job, so the
# store's cross-host straggler query has collectives to group (timing only: the copies are
# the same job under two host names, and since both copies of the late rank tie, no group is
# late); --split (with nccl-straggler and --hosts 2) gives ranks 0-1 to host 1 and ranks 2-3
# to host 2 instead, as the tests do: a real two-host job of N events in all,
# and for --hosts 2 a copy under another host name (both shipped: a fleet of 2 x N events).
# Needs clickhouse-server (Debian's, installed when missing), /usr/bin/time and sqlite3.
set -euo pipefail

build=${1:-build}
[[ $# -gt 0 ]] && shift
events=10000000
hosts=1
keep=0
source_db=
scenario=incident
split=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --events) events=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --db) source_db=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    --split) split=1; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "$build" && pwd)/causeway
work=$(mktemp -d /tmp/causeway-ship-bench-XXXXXX)
port=$((31000 + RANDOM % 2000))
pid=$("$here/scripts/clickhouse_private.sh" "$work/ch" "$port" $((port + 1)) bench-writer bench-reader)
cleanup() {
  kill "$pid" 2> /dev/null || true
  [[ $keep == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT
printf bench-writer > "$work/w.pw"
printf bench-reader > "$work/r.pw"
url=http://127.0.0.1:$port
writer=(--user causeway_writer --password-file "$work/w.pw")
reader=(--user causeway_reader --password-file "$work/r.pw")

if [[ -n $source_db ]]; then
  cp "$source_db" "$work/h1.db"
else
  echo "demo $scenario --events $events ..."
  "$bin" demo "$scenario" --events "$events" --db "$work/h1.db" -q
fi
for h in $(seq 2 "$hosts"); do
  cp "$work/h1.db" "$work/h$h.db"
  sqlite3 "$work/h$h.db" "UPDATE sessions SET host = 'bench-host-$h', boot_id = 'bench-boot-$h'"
done
if [[ $split == 1 ]]; then
  keep_only() {  # the demo job's rank pids are 6001-6004
    sqlite3 "$1" "DELETE FROM events WHERE pid IN ($2); DELETE FROM sched WHERE prev_pid IN ($2) OR next_pid IN ($2);
                  DELETE FROM processes WHERE pid IN ($2); DELETE FROM threads WHERE pid IN ($2); DELETE FROM chains;
                  DELETE FROM call_causes; DELETE FROM rollups WHERE pid IN ($2);"
  }
  keep_only "$work/h1.db" 6003,6004
  keep_only "$work/h2.db" 6001,6002
fi
rows=$(sqlite3 "$work/h1.db" "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM sched)")  # host 1's; host 2's alike
echo "per host: $rows rows (events + sched), $(du -m "$work/h1.db" | cut -f1) MB"

for h in $(seq 1 "$hosts"); do
  /usr/bin/time -f "%e %M" -o "$work/time" "$bin" ship --to "$url" --db "$work/h$h.db" "${writer[@]}" --json > "$work/ship.json"
  read -r wall rss < "$work/time"
  echo "ship host $h: ${wall} s, $(echo "$rows / $wall" | bc) rows/s, peak RSS $((rss / 1024)) MB"
done
/usr/bin/time -f "%e %M" -o "$work/time" "$bin" ship --to "$url" --db "$work/h1.db" "${writer[@]}" --json > "$work/ship.json"
read -r wall rss < "$work/time"
echo "second ship of host 1 (nothing new): ${wall} s, peak RSS $((rss / 1024)) MB; $(cat "$work/ship.json")"

for cmd in explain stats; do
  for run in 1 2; do
    /usr/bin/time -f "%e" -o "$work/time" "$bin" $cmd --fleet "$url" "${reader[@]}" --json > "$work/$cmd.json"
    echo "$cmd --fleet over $hosts host(s) (run $run): $(cat "$work/time") s, $(wc -c < "$work/$cmd.json") bytes"
  done
done
