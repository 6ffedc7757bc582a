#!/bin/sh
# Readers and the -wal they cannot use (docs/INTERFACES.md "Stale reads", docs/SECURITY.md).
# A real unprivileged user owns a DB whose newest commit is only in its -wal (the writer died
# before a checkpoint) with no -shm, in a folder of theirs that is now read-only (0555):
#   - the user's `stats --json` cannot make a -shm: exit 0, "stale": true, a warning on stderr;
#   - root's `stats --json` on it makes no file in that folder (it could: root ignores 0555),
#     and says stale too;
#   - the user's `query --json` on it: exit 0, "stale": true beside the rows, a warning on
#     stderr; MCP run_sql (stdio) on it: isError false, a warning line first in the text and
#     "stale": true in structuredContent;
#   - the same DB with that -wal already checkpointed into the DB file: no stale flag, no
#     warning (not stale, only unindexed), from stats, query and run_sql; a DB closed cleanly
#     (no -wal): none either.
# Usage: stale_read.sh CAUSEWAY. Exits 77 (skipped) without root/useradd/setpriv/python3.
set -eu
bin=$1
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (plays root reading a user's DB)"
for tool in useradd userdel setpriv python3; do command -v $tool >/dev/null || skip "needs $tool"; done
python3 -c 'import sqlite3' 2>/dev/null || skip "needs python3's sqlite3 module"

tmp=$(mktemp -d)
chmod 0755 "$tmp"
user=cwstale$$
cleanup() {
  chmod -R u+w "$tmp" 2>/dev/null || true
  userdel "$user" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
useradd -M -d "$tmp/nohome" -s /bin/sh "$user" || skip "useradd $user failed"
uid=$(id -u "$user") gid=$(id -g "$user")
# The user runs causeway from a folder they can read, as an installed one would be.
cp "$bin" "$tmp/causeway"
bin=$tmp/causeway
as_user() { setpriv --reuid "$uid" --regid "$gid" --clear-groups env -i PATH=/usr/bin:/bin "$@"; }

# A DB in folder $1 whose last commit (a new session row) is only in the -wal when $2 is
# "wal", already checkpointed into the DB file when "checkpointed"; the writer exits
# without closing, and the -shm (a cache any reader rebuilds) is removed.
make_db() {
  dir=$1 mode=$2
  mkdir "$dir" && chown "$user:" "$dir"
  as_user "$bin" demo --quiet --events 2000 --db "$dir/trace.db" || fail "demo as $user failed"
  as_user python3 - "$dir/trace.db" "$mode" <<'PY'
import os, sqlite3, sys
path, mode = sys.argv[1], sys.argv[2]
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA wal_autocheckpoint=0")
db.execute("INSERT INTO sessions (source_kind, label, tool_version, started_ns) VALUES ('demo', 'only-in-wal', 'test', 1)")
if mode == "checkpointed":
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")
os._exit(0)  # no close: a close would checkpoint and remove the -wal
PY
  [ -s "$dir/trace.db-wal" ] || fail "setup: $dir/trace.db-wal is empty"
  rm -f "$dir/trace.db-shm"
  chmod 0555 "$dir"
}

stats() {  # who, db, outfile, errfile
  who=$1; shift
  rc=0
  if [ "$who" = root ]; then "$bin" stats --json --db "$1" > "$2" 2> "$3" || rc=$?
  else as_user "$bin" stats --json --db "$1" > "$2" 2> "$3" || rc=$?; fi
  [ $rc -eq 0 ] || fail "stats as $who on $1 exited $rc: $(cat "$3")"
}
stale_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("stale", False))' "$1"; }

make_db "$tmp/wal" wal
stats "$user" "$tmp/wal/trace.db" "$tmp/out" "$tmp/err"
[ "$(stale_of "$tmp/out")" = True ] || fail "user: stats --json on a DB whose last commit is only in the -wal has no \"stale\": true: $(head -c 300 "$tmp/out")"
grep -q "only in .*-wal" "$tmp/err" || fail "user: no stale warning on stderr: $(cat "$tmp/err")"
echo "user, data only in the -wal, no -shm possible: stale flagged ($(head -c 120 "$tmp/err"))"

query() {  # db, outfile, errfile: the user's query --json
  rc=0
  as_user "$bin" query --json --db "$1" "SELECT count(*) AS n FROM sessions" > "$2" 2> "$3" || rc=$?
  [ $rc -eq 0 ] || fail "query as $user on $1 exited $rc: $(cat "$3")"
}
# The user's MCP server on stdio: one run_sql; prints "isError stale first-text-line".
run_sql() {
  as_user python3 - "$bin" "$1" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--db", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run_sql", "arguments": {"query": "SELECT count(*) AS n FROM sessions"}}}]
p.stdin.write("".join(json.dumps(m) + "\n" for m in msgs))
p.stdin.flush()
# stdin stays open until the answer: EOF cancels the calls still running.
r = None
for line in p.stdout:
    m = json.loads(line)
    if m.get("id") == 2:
        r = m["result"]
        break
p.stdin.close()
p.wait(timeout=60)
print(r.get("isError", False), r["structuredContent"].get("stale", False), r["content"][0]["text"].splitlines()[0][:60])
PY
}

query "$tmp/wal/trace.db" "$tmp/out" "$tmp/err"
[ "$(stale_of "$tmp/out")" = True ] || fail "user: query --json on a stale read has no \"stale\": true: $(head -c 300 "$tmp/out")"
grep -q "only in .*-wal" "$tmp/err" || fail "user: query: no stale warning on stderr: $(cat "$tmp/err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["rows"] and d["warnings"], d' "$tmp/out" || fail "query --json: rows or warnings missing"
echo "user, query --json on the stale read: rows with \"stale\": true, warning on stderr"
got=$(run_sql "$tmp/wal/trace.db") || fail "run_sql over stdio failed"
case $got in "False True warning: "*) ;; *) fail "MCP run_sql on the stale read: isError/stale/first line = '$got'" ;; esac
echo "user, MCP run_sql on the stale read: $got"

stats root "$tmp/wal/trace.db" "$tmp/out" "$tmp/err"
[ ! -e "$tmp/wal/trace.db-shm" ] || fail "root: made $tmp/wal/trace.db-shm in $user's 0555 folder"
[ "$(ls -A "$tmp/wal" | tr '\n' ' ')" = "trace.db trace.db-wal " ] || fail "root: files in $user's folder now: $(ls -A "$tmp/wal")"
[ "$(stale_of "$tmp/out")" = True ] || fail "root: no \"stale\": true"
echo "root on a user's 0555 folder: nothing made there, stale flagged"

make_db "$tmp/ckpt" checkpointed
stats "$user" "$tmp/ckpt/trace.db" "$tmp/out" "$tmp/err"
[ "$(stale_of "$tmp/out")" = False ] || fail "checkpointed -wal: flagged stale though the DB file holds every commit"
! grep -q "only in" "$tmp/err" || fail "checkpointed -wal: a stale warning: $(cat "$tmp/err")"
query "$tmp/ckpt/trace.db" "$tmp/out" "$tmp/err"
[ "$(stale_of "$tmp/out")" = False ] || fail "checkpointed -wal: query --json flagged stale"
! grep -q "only in" "$tmp/err" || fail "checkpointed -wal: query warned: $(cat "$tmp/err")"
got=$(run_sql "$tmp/ckpt/trace.db") || fail "run_sql over stdio failed"
case $got in "False False "*) ;; *) fail "checkpointed -wal: MCP run_sql isError/stale = '$got'" ;; esac
echo "-wal already checkpointed: not flagged (stats, query, run_sql)"

mkdir "$tmp/clean" && chown "$user:" "$tmp/clean"
as_user "$bin" demo --quiet --events 2000 --db "$tmp/clean/trace.db" || fail "demo as $user failed"
chmod 0555 "$tmp/clean"
stats "$user" "$tmp/clean/trace.db" "$tmp/out" "$tmp/err"
[ "$(stale_of "$tmp/out")" = False ] || fail "clean DB flagged stale"
[ ! -s "$tmp/err" ] || fail "clean DB: stderr: $(cat "$tmp/err")"
echo "cleanly closed DB: not flagged"
echo PASS
