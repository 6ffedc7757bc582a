#!/bin/sh
# The live flow as `sudo causeway trace` runs it: root with SUDO_USER set to a throwaway user
# whose home is in a temp folder. Asserts: the DB lands in that user's home and belongs to
# them (0700 folder, 0600 files), `explain --json` and `stats --json` run AS that user with no
# --db find the session, SIGINT with the workload's probes attached exits 0 in under 1 s,
# every call the workload made is in the DB, and no -wal is left with data.
# Usage: session_sudo_stop.sh CAUSEWAY CW_WORKLOAD. Exits 77 (skipped) without root/BPF/useradd.
set -eu
bin=$1 workload=$2
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (eBPF uprobes)"
for tool in useradd userdel setpriv python3; do command -v $tool >/dev/null || skip "needs $tool"; done
"$bin" check >/dev/null 2>&1 || skip "causeway check: host not ready for tracing"

tmp=$(mktemp -d)
chmod 0755 "$tmp"
user=cwsudo$$
cleanup() {
  [ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null || true
  [ -n "${tpid:-}" ] && kill -9 "$tpid" 2>/dev/null || true
  userdel "$user" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
home=$tmp/home
useradd -M -d "$home" -s /bin/sh "$user" || skip "useradd $user failed"
mkdir "$home" && chown "$user:" "$home"
uid=$(id -u "$user") gid=$(id -g "$user")
# The user runs binaries from a folder they can read, as an installed causeway would be.
cp "$bin" "$tmp/causeway"

iterations=3000
"$workload" --iterations $iterations --latency-us 50 --ops stream_sync --wait-file "$tmp/go" --linger-ms 120000 > "$tmp/workload.out" &
wpid=$!
# sudo keeps root's HOME by default (Debian's env_reset does not reset it with -E / some configs).
env -u XDG_DATA_HOME -u CAUSEWAY_DB HOME=/root SUDO_USER=$user SUDO_UID=$uid SUDO_GID=$gid \
  "$tmp/causeway" trace --pid $wpid --quiet --no-diagnose --ready-file "$tmp/ready" 2> "$tmp/trace.err" &
tpid=$!
i=0
until [ -e "$tmp/ready" ]; do
  i=$((i + 1)); [ $i -lt 600 ] || fail "trace not ready in 60 s: $(cat "$tmp/trace.err")"
  kill -0 $tpid 2>/dev/null || fail "trace exited: $(cat "$tmp/trace.err")"
  sleep 0.1
done
touch "$tmp/go"
# The workload stays alive (probes attached) after printing its count.
i=0
until grep -q "iterations=$iterations errors=" "$tmp/workload.out"; do
  i=$((i + 1)); [ $i -lt 1200 ] || fail "workload did not finish in 120 s: $(cat "$tmp/workload.out")"
  kill -0 $wpid 2>/dev/null || fail "workload exited: $(cat "$tmp/workload.out")"
  sleep 0.1
done
db=$home/.local/share/causeway/trace.db
grep -q "writing $db (owned by $user)" "$tmp/trace.err" || fail "trace did not say it writes $db: $(cat "$tmp/trace.err")"
sleep 1  # let the drain read the last calls off the ring; the stop must not depend on it
start=$(date +%s%N)
kill -INT $tpid
rc=0; wait $tpid || rc=$?
tpid=
ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$tmp/trace.err"
[ $rc -eq 0 ] || fail "trace exited $rc after SIGINT"
[ $ms -lt 1000 ] || fail "trace took $ms ms to exit after SIGINT (limit 1000 ms)"
echo "stop: exit 0 in $ms ms"

for f in "$home/.local" "$home/.local/share" "$home/.local/share/causeway" "$db" "$db-wal" "$db-shm"; do
  [ -e "$f" ] || continue
  owner=$(stat -c %u "$f")
  [ "$owner" = "$uid" ] || fail "$f is owned by uid $owner, not $user ($uid)"
done
[ "$(stat -c %a "$home/.local/share/causeway")" = 700 ] || fail "DB folder mode $(stat -c %a "$home/.local/share/causeway")"
[ "$(stat -c %a "$db")" = 600 ] || fail "DB mode $(stat -c %a "$db")"
if [ -e "$db-wal" ] && [ -s "$db-wal" ]; then fail "$db-wal holds $(stat -c %s "$db-wal") bytes after stop"; fi

as_user() { setpriv --reuid "$uid" --regid "$gid" --clear-groups env -i HOME="$home" PATH=/usr/bin:/bin "$tmp/causeway" "$@"; }
as_user stats --json > "$tmp/stats.json" || fail "stats as $user: $(cat "$tmp/stats.json")"
as_user explain --json > "$tmp/explain.json" || fail "explain as $user: $(cat "$tmp/explain.json")"
python3 - "$tmp/stats.json" "$tmp/explain.json" $iterations <<'PY'
import json, sys
stats = json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))
want = int(sys.argv[3])
got = sum(o["count"] for o in stats["ops"] if o["op"] == "cudaStreamSynchronize")
assert got == want, f"cudaStreamSynchronize calls in DB: {got}, workload made {want}"
print(f"calls recorded: {got} of {want}")
PY
echo PASS
