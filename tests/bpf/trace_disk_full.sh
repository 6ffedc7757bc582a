#!/bin/sh
# `causeway trace` into a 4 MiB tmpfs until it fills (docs/COLLECTOR.md "Faults"). Asserts:
#  A. the failure is said on stderr within 2 s of the disk filling; after the workload is done,
#     SIGINT stops the trace in under 1.5 s with exit 1 and the loss on stderr; for every op,
#     calls in the DB + calls counted as lost (collector_stats dropped_writer.OP) = calls the
#     workload made; `stats --json` per-op counts equal the stored rows and dropped.writer
#     includes the loss; PRAGMA quick_check is ok; no lock file is left.
#  B. on a full disk nobody frees, the trace stops by itself after --stall-exit with exit 1.
#  C. with --max-db on a disk smaller than the cap, the oldest rows are pruned and nothing is
#     lost (exit 0, stored + pruned = written).
# Usage: trace_disk_full.sh CAUSEWAY CW_WORKLOAD. Exits 77 (skipped) without root/BPF/tmpfs.
set -eu
bin=$1 workload=$2
. "$(dirname "$0")/trace_test_lib.sh"
need_tracing "eBPF uprobes, mount"
make_tmp
mnt=$tmp/mnt
mkdir "$mnt"
cleanup_more() { umount "$mnt" 2>/dev/null || true; }
mount -t tmpfs -o size=4m tmpfs "$mnt" || skip "cannot mount a tmpfs"
avail_kb() { df -k --output=avail "$mnt" | tail -1 | tr -d ' '; }

# --- A: fill the disk, keep counting, stop on SIGINT -------------------------------------------
# 3 ops × 40,000 calls at 30,000 calls/s: about 8 MB of rows into a 4 MiB file system, slow
# enough that the BPF ring never overflows (ring drops are not per op).
iterations=40000
"$workload" --ops memcpy,launch,stream_sync --iterations $iterations --rate 30000 --wait-file "$tmp/go" \
  --linger-ms 600000 > "$tmp/workload.out" &
wpid=$!
pids="$pids $wpid"
port=$((20000 + $$ % 20000))
start_trace trace "$mnt/t.db" --pid $wpid --quiet --stall-exit 600s --metrics 127.0.0.1:$port
touch "$tmp/go"
full_ms=
said_ms=
i=0
until grep -q "errors=" "$tmp/workload.out"; do
  i=$((i + 1)); [ $i -lt 6000 ] || fail "workload did not finish in 300 s"
  kill -0 $tpid 2>/dev/null || fail "trace exited while the workload ran"
  kill -0 $wpid 2>/dev/null || grep -q "errors=" "$tmp/workload.out" || fail "workload died: $(cat "$tmp/workload.out")"
  [ -z "$full_ms" ] && [ "$(avail_kb)" -lt 16 ] && full_ms=$(now_ms)
  [ -z "$said_ms" ] && grep -q "cannot write $mnt/t.db: the disk is full" "$tmp/trace.err" && said_ms=$(now_ms)
  sleep 0.05
done
until [ -n "$said_ms" ]; do  # the disk may fill with the last batch
  i=$((i + 1)); [ $i -lt 6100 ] || fail "no disk-full message on stderr"
  [ -z "$full_ms" ] && [ "$(avail_kb)" -lt 16 ] && full_ms=$(now_ms)
  grep -q "cannot write $mnt/t.db: the disk is full" "$tmp/trace.err" && said_ms=$(now_ms)
  sleep 0.05
done
[ -n "$full_ms" ] || fail "the file system never filled ($(avail_kb) KiB free): the test needs more calls"
late=$((said_ms - full_ms))
echo "disk full → message on stderr: ${late} ms"
[ $late -lt 2000 ] || fail "the disk-full message came ${late} ms after the disk filled (limit 2000 ms)"

sleep 1.5  # the drain reads the last calls off the ring (the stop must not depend on it); metrics update
python3 - $port <<'PY' || fail "metrics while the disk is full"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
def sample(prefix):
    for line in body.splitlines():
        if line.startswith(prefix + " "):
            return float(line.split()[-1])
    return None
assert sample('causeway_writer_failing{fault="disk_full"}') == 1, "writer_failing not 1"
lost = sample('causeway_writer_lost_events_total{source="cuda",op="cudaMemcpy"}')
assert lost and lost > 0, f"cudaMemcpy lost: {lost}"
assert sample('causeway_dropped_events_total{reason="dropped_writer"}') >= lost
print(f"metrics: writer failing (disk_full), {lost:.0f} cudaMemcpy calls lost so far")
PY
start=$(now_ms)
kill -INT $tpid
rc=0; wait $tpid || rc=$?
tpid=
ms=$(( $(now_ms) - start ))
echo "SIGINT on a full disk: exit $rc in $ms ms"
[ $rc -eq 1 ] || fail "trace exited $rc after losing events (want 1)"
[ $ms -lt 1500 ] || fail "trace took $ms ms to stop on a full disk (limit 1500 ms)"
grep -Eq "[1-9][0-9]* events could not be stored in $mnt/t.db \(disk_full: .*\); by op: " "$tmp/trace.err" ||
  fail "no loss report on stderr"
[ "$(grep -c 'cannot write' "$tmp/trace.err")" -eq 1 ] || fail "the failure was said more than once"
[ ! -e "$mnt/t.db-lock" ] || fail "the writer lock file was left behind"

"$bin" stats --json --db "$mnt/t.db" > "$tmp/stats.json" || fail "stats: $(cat "$tmp/stats.json")"
python3 - "$mnt/t.db" "$tmp/workload.out" "$tmp/stats.json" <<'PY' || fail "accounting"
import json, re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok", "quick_check failed"
made = dict(kv.split("=") for kv in re.search(r"^calls pid=\d+ (.*)$", open(sys.argv[2]).read(), re.M).group(1).split())
symbol = {"memcpy": "cudaMemcpy", "launch": "cudaLaunchKernel", "stream_sync": "cudaStreamSynchronize"}
stat = dict(db.execute("SELECT name, value FROM collector_stats").fetchall())
assert stat.get("dropped_ring", 0) == 0, f"BPF ring dropped {stat['dropped_ring']} calls: not a writer test"
stats = json.load(open(sys.argv[3]))
lost_total = 0
for op, n in made.items():
    name = symbol[op]
    stored = db.execute("SELECT count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE o.name = ?", (name,)).fetchone()[0]
    lost = stat.get("dropped_writer." + name, 0)
    lost_total += lost
    print(f"{name}: made {n}, stored {stored}, counted lost {lost}")
    assert stored + lost == int(n), f"{name}: stored {stored} + lost {lost} != made {n}"
    assert lost > 0, f"{name}: nothing lost: the disk did not fill"
    in_stats = sum(o["count"] for o in stats["ops"] if o["op"] == name)
    assert in_stats == stored, f"{name}: stats counts {in_stats}, the DB holds {stored}"
assert stat["dropped_writer"] >= lost_total and stat["dropped_write_error"] > 0, stat
assert stats["dropped"]["writer"] == stat["dropped_writer"], stats["dropped"]
print(f"dropped.writer {stats['dropped']['writer']}, quick_check ok")
PY
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
wpid=

# --- B: nobody frees space: the trace stops by itself ------------------------------------------
# A's probes are detached by a grandchild after A exits (~6 s for 25, docs/COLLECTOR.md "Stop");
# probes attached to the same library meanwhile can be removed with them by the kernel.
sleep 12
umount "$mnt"
mount -t tmpfs -o size=4m tmpfs "$mnt" || fail "cannot mount the tmpfs again"
"$workload" --ops stream_sync --iterations 100000000 --rate 30000 --wait-file "$tmp/go" > "$tmp/workload.out" &
wpid=$!
pids="$pids $wpid"
start_trace trace "$mnt/t.db" --pid $wpid --quiet --stall-exit 3s
i=0
until ! kill -0 $tpid 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 1200 ] || fail "trace did not stop by itself within 120 s on a full disk"
  sleep 0.1
done
rc=0; wait $tpid || rc=$?
tpid=
[ $rc -eq 1 ] || fail "trace stopped by itself with exit $rc (want 1)"
grep -q "stopped by itself: nothing could be stored in $mnt/t.db for 3 s" "$tmp/trace.err" || fail "no reason for stopping"
python3 - "$mnt/t.db" <<'PY' || fail "stall DB"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
stat = dict(db.execute("SELECT name, value FROM collector_stats").fetchall())
per_op = sum(v for k, v in stat.items() if k.startswith("dropped_writer."))
assert stat.get("dropped_writer", 0) > 0 and per_op == stat["dropped_writer"], stat
print(f"stopped by itself; {stat['dropped_writer']} events counted lost in the DB, "
      f"{stat.get('dropped_writer.cudaStreamSynchronize', 0)} of them cudaStreamSynchronize calls")
PY
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
wpid=

# --- C: --max-db on a disk smaller than the cap: prune and go on ------------------------------
sleep 12  # B's probes detach (see B)
umount "$mnt"
mount -t tmpfs -o size=32m tmpfs "$mnt" || fail "cannot mount the tmpfs again"
# 750,000 calls ≈ 38 MB of rows into 32 MiB: the writer prunes while less than 16 MiB (half of
# this file system) would be left free.
"$workload" --ops memcpy,launch,stream_sync --iterations 250000 --rate 90000 --wait-file "$tmp/go2" \
  --linger-ms 600000 > "$tmp/workload.out" &
wpid=$!
pids="$pids $wpid"
start_trace trace "$mnt/t.db" --pid $wpid --quiet --max-db 1g
touch "$tmp/go2"
i=0
until grep -q "errors=" "$tmp/workload.out"; do
  i=$((i + 1)); [ $i -lt 3000 ] || fail "workload did not finish in 300 s"
  kill -0 $tpid 2>/dev/null || fail "trace exited while the workload ran"
  sleep 0.1
done
sleep 1
kill -INT $tpid
rc=0; wait $tpid || rc=$?
tpid=
[ $rc -eq 0 ] || fail "--max-db on a small disk: exit $rc (want 0: pruned, nothing lost)"
! grep -q "cannot write" "$tmp/trace.err" || fail "--max-db on a small disk: a write failed"
python3 - "$mnt/t.db" <<'PY' || fail "--max-db DB"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
stat = dict(db.execute("SELECT name, value FROM collector_stats").fetchall())
rows = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("events", "sched", "wakeups"))
assert stat["pruned_rows"] > 0 and stat["dropped_writer"] == 0, stat
assert rows + stat["pruned_rows"] == stat["events_written"], (rows, stat)
print(f"--max-db on a 32 MiB disk: {stat['pruned_rows']} rows pruned, {rows} kept, none lost")
PY
cat "$tmp/trace.err"
echo PASS
