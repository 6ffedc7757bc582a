#!/usr/bin/env bash
# Two builds of `causeway ship` alternated into one private ClickHouse (scripts/clickhouse_private.sh),
# each round into fresh databases, so their figures share the machine's load: wall, rows/s, the
# ship's CPU, clickhouse-server's CPU from the ship's start to 8 s after its end (background merges
# included), and from system.query_log the CPU of the server's INSERT threads and their page faults.
# Not part of the test run.
#
#   bench/ship_compare.sh OLD_CAUSEWAY NEW_CAUSEWAY DB [ROUNDS]
#
# DB: a trace DB (e.g. one host of `bench/ship_rate.sh --split --keep`). Needs clickhouse-server,
# clickhouse-client, /usr/bin/time and sqlite3.
set -euo pipefail
old=$1 new=$2 db=$3 rounds=${4:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/causeway-ship-compare-XXXXXX)
port=$((33000 + RANDOM % 2000))
pid=$("$here/scripts/clickhouse_private.sh" "$work/ch" "$port" $((port + 1)) bench-writer bench-reader)
cleanup() {
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done  # its last writes first
  rm -rf "$work"
}
trap cleanup EXIT
# The writer's INSERTs in system.query_log (users.xml is re-read by the running server).
sed -i 's#<max_memory_usage>4000000000</max_memory_usage>#&<log_queries>1</log_queries>#' "$work/ch/users.xml"
printf bench-writer > "$work/w.pw"
ch=(clickhouse-client --port $((port + 1)) --user causeway_writer --password bench-writer)
for _ in $(seq 1 60); do
  [[ $("${ch[@]}" -q "SELECT value FROM system.settings WHERE name = 'log_queries'" 2> /dev/null) == 1 ]] && break
  sleep 0.5
done
tck=$(getconf CLK_TCK)
server_cpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$pid/stat"; }
rows=$(sqlite3 "$db" "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM sched)")
echo "rows per ship (events + sched): $rows"

for round in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old
    [[ $which == new ]] && bin=$new
    database=${which}_$round
    load=$(cut -d' ' -f1 /proc/loadavg)
    s0=$(server_cpu)
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$bin" ship --to "http://127.0.0.1:$port" --database "$database" --db "$db" \
      --user causeway_writer --password-file "$work/w.pw" --json > /dev/null
    read -r wall user sys rss < "$work/time"
    sleep 8
    s1=$(server_cpu)
    "${ch[@]}" -q "SYSTEM FLUSH LOGS"
    inserts=$("${ch[@]}" -q "SELECT round(sum(ProfileEvents.Values[indexOf(ProfileEvents.Names, 'UserTimeMicroseconds')]
                                   + ProfileEvents.Values[indexOf(ProfileEvents.Names, 'SystemTimeMicroseconds')]) / 1e6, 2),
                                   sum(ProfileEvents.Values[indexOf(ProfileEvents.Names, 'SoftPageFaults')]),
                                   sum(ProfileEvents.Values[indexOf(ProfileEvents.Names, 'MergeTreeDataWriterBlocksAlreadySorted')])
                              FROM system.query_log WHERE type = 2 AND query LIKE 'INSERT INTO $database.%'")
    read -r icpu faults sorted <<< "$inserts"
    echo "round $round $which: ${wall} s, $(echo "$rows / $wall" | bc) rows/s, ship CPU $user+$sys s, peak RSS $((rss / 1024)) MB;" \
      "server CPU $(echo "$s1 - $s0" | bc) s, INSERT threads $icpu s, $faults page faults, $sorted blocks already sorted; load $load"
    "${ch[@]}" -q "DROP DATABASE $database"
  done
done
