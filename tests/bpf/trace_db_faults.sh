#!/bin/sh
# `causeway trace` and its DB file (docs/COLLECTOR.md "Faults"). Asserts:
#  1. a second trace of the same DB is refused at once, naming the first one's pid; after the
#     first is killed with -9, a new trace takes the DB and stops cleanly;
#  2. the DB deleted mid-trace: said within 2 s, the trace stops by itself (exit 1, loss on
#     stderr) and does not recreate the file;
#  3. the DB replaced by another file: said, the trace stops, the new file is untouched;
#  4. the --pid process exits mid-trace: its exit is noted once, the trace goes on, SIGINT
#     exits 0 with every call stored and the exit code in `processes`, no error lines;
#  5. the library deleted under a running process (an upgrade in place) is still probed.
# Usage: trace_db_faults.sh CAUSEWAY CW_WORKLOAD. Exits 77 (skipped) without root/BPF.
set -eu
bin=$1 workload=$2
. "$(dirname "$0")/trace_test_lib.sh"
need_tracing "eBPF uprobes"
make_tmp

# A workload that keeps calling until killed, and one trace of it per scenario. No --quiet:
# the attach lines and exit notes are part of what is checked (no TTY: no live table).
"$workload" --ops stream_sync --iterations 100000000 --rate 2000 > "$tmp/workload.out" &
wpid=$!
pids="$pids $wpid"

wait_exit() {  # pid seconds: sets rc
  i=0
  while kill -0 "$1" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt $(($2 * 10)) ] || fail "pid $1 still running after $2 s"
    sleep 0.1
  done
  rc=0; wait "$1" || rc=$?
}

# --- 1. two tracers, one DB ------------------------------------------------------------------
start_trace first "$tmp/a.db" --pid $wpid
first=$tpid
start=$(now_ms)
rc=0; "$bin" trace --db "$tmp/a.db" --pid $wpid --quiet 2> "$tmp/second.err" || rc=$?
ms=$(( $(now_ms) - start ))
[ $rc -eq 1 ] || fail "a second trace of the same DB exited $rc (want 1)"
grep -q "$tmp/a.db is being written by causeway trace (pid $first)" "$tmp/second.err" || fail "second trace: unclear refusal"
[ $ms -lt 3000 ] || fail "the refusal took $ms ms"
echo "second trace refused in $ms ms: $(cat "$tmp/second.err")"
kill -9 $first
wait $first 2>/dev/null || true
start_trace third "$tmp/a.db" --pid $wpid
sleep 0.5
kill -INT $tpid
wait_exit $tpid 10
[ $rc -eq 0 ] || fail "the trace after a kill -9 exited $rc"
[ ! -e "$tmp/a.db-lock" ] || fail "lock file left after a clean stop"
python3 - "$tmp/a.db" <<'PY' || fail "DB after kill -9 and a new trace"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
n = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
assert n == 2, f"{n} sessions"
PY
echo "after kill -9: a new trace took the DB and stopped cleanly"

# --- 2. the DB deleted mid-trace -------------------------------------------------------------
start_trace deleted "$tmp/d.db" --pid $wpid
sleep 1
rm "$tmp/d.db"
start=$(now_ms)
said=
while kill -0 $tpid 2>/dev/null; do
  [ -z "$said" ] && grep -q "$tmp/d.db was deleted or moved away while tracing" "$tmp/deleted.err" && said=$(( $(now_ms) - start ))
  [ $(( $(now_ms) - start )) -lt 10000 ] || fail "trace still running 10 s after its DB was deleted"
  sleep 0.05
done
rc=0; wait $tpid || rc=$?
[ -n "$said" ] || grep -q "$tmp/d.db was deleted or moved away while tracing" "$tmp/deleted.err" || fail "deletion not said"
said=${said:-$(( $(now_ms) - start ))}
echo "deleted DB: said after $said ms, exit $rc"
[ "$said" -lt 2000 ] || fail "deletion said after $said ms (limit 2000 ms)"
[ $rc -eq 1 ] || fail "exit $rc after the DB was deleted (want 1)"
grep -Eq "[1-9][0-9]* events could not be stored in $tmp/d.db \(db_deleted: .*\); by op: .*cudaStreamSynchronize [1-9]" "$tmp/deleted.err" ||
  fail "no loss report"
[ ! -e "$tmp/d.db" ] || fail "the deleted DB was recreated"
[ ! -e "$tmp/d.db-lock" ] || fail "lock file left"

# --- 3. the DB replaced by another file ------------------------------------------------------
start_trace replaced "$tmp/r.db" --pid $wpid
sleep 1
echo "not a trace DB" > "$tmp/other"
mv "$tmp/other" "$tmp/r.db"
wait_exit $tpid 10
[ $rc -eq 1 ] || fail "exit $rc after the DB was replaced (want 1)"
grep -q "$tmp/r.db was replaced by another file while tracing" "$tmp/replaced.err" || fail "replacement not said"
[ "$(cat "$tmp/r.db")" = "not a trace DB" ] || fail "the file that replaced the DB was written to"
echo "replaced DB: said, stopped, the new file untouched"

# --- 4. the traced process exits mid-trace ---------------------------------------------------
"$workload" --ops stream_sync,memcpy --iterations 2000 --rate 4000 --wait-file "$tmp/go" > "$tmp/short.out" &
spid=$!
start_trace exits "$tmp/x.db" --pid $spid
touch "$tmp/go"
wait $spid || fail "the short workload failed"
sleep 2
kill -0 $tpid 2>/dev/null || fail "trace stopped when its --pid process exited"
kill -INT $tpid
wait_exit $tpid 10
[ $rc -eq 0 ] || fail "exit $rc after the traced process exited (want 0)"
[ "$(grep -c "pid $spid (cw_workload) exited with code 0; still tracing" "$tmp/exits.err")" -eq 1 ] || fail "exit not noted once"
! grep -Eiq "error|cannot|fail" "$tmp/exits.err" || fail "error lines on stderr"
[ "$(wc -l < "$tmp/exits.err")" -le 12 ] || fail "$(wc -l < "$tmp/exits.err") lines on stderr"
python3 - "$tmp/x.db" $spid <<'PY' || fail "DB of the exited process"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); pid = int(sys.argv[2])
calls = dict(db.execute("SELECT o.name, count(*) FROM events e JOIN ops o ON o.id = e.op_id WHERE e.pid = ? "
                        "AND o.name IN ('cudaStreamSynchronize', 'cudaMemcpy') GROUP BY o.name", (pid,)).fetchall())
assert calls == {"cudaStreamSynchronize": 2000, "cudaMemcpy": 2000}, calls
code = db.execute("SELECT exit_code FROM processes WHERE pid = ?", (pid,)).fetchone()
assert code == (0,), code
print(f"exited process: {calls}, exit_code 0")
PY
cat "$tmp/exits.err"

# --- 5. the library deleted under the running process ----------------------------------------
mkdir "$tmp/lib"
cp "$(dirname "$workload")/libcudart.so.13" "$tmp/lib/"
"$workload" --cudart "$tmp/lib/libcudart.so.13" --ops stream_sync --iterations 2000 --rate 4000 \
  --ready-file "$tmp/loaded" --wait-file "$tmp/go5" --linger-ms 600000 > "$tmp/deleted_lib.out" &
dpid=$!
pids="$pids $dpid"
i=0
until [ -e "$tmp/loaded" ]; do i=$((i + 1)); [ $i -lt 300 ] || fail "workload did not load the library"; sleep 0.1; done
rm "$tmp/lib/libcudart.so.13"  # an upgrade in place: still mapped, no path leads to it
start_trace deleted_lib "$tmp/l.db" --pid $dpid
touch "$tmp/go5"
i=0
until grep -q "errors=" "$tmp/deleted_lib.out"; do i=$((i + 1)); [ $i -lt 600 ] || fail "workload did not finish"; sleep 0.1; done
sleep 1.5  # several rescans: a library that could not be probed must not be said each time
kill -INT $tpid
wait_exit $tpid 10
[ $rc -eq 0 ] || fail "exit $rc with a deleted library"
[ "$(grep -c "libcudart" "$tmp/deleted_lib.err")" -eq 1 ] || fail "the library was said more than once"
python3 - "$tmp/l.db" $dpid <<'PY' || fail "calls into the deleted library"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("SELECT count(*) FROM events WHERE op_id = 116 AND pid = ?", (int(sys.argv[2]),)).fetchone()[0]
assert n == 2000, n
print(f"deleted library: probed through /proc/PID/map_files, {n} of 2000 calls stored")
PY
echo PASS
