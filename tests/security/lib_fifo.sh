#!/bin/sh
# A user cannot stall root's tracer, nor make it probe another file than the one a process
# maps (docs/SECURITY.md "Library files"). A real unprivileged user, inside `unshare -Urm`,
# maps their own copy of libcudart.so.13 and then bind-mounts a FIFO over its path; root's
# `trace --pid` must finish on time (no open() blocked on the FIFO) and attach to the file
# the process really maps.
# Usage: lib_fifo.sh CAUSEWAY FAKE_LIBCUDART. Exits 77 (skipped) without root/BPF/userns.
set -eu
bin=$1 fakelib=$2
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (eBPF uprobes)"
for tool in useradd userdel setpriv unshare python3 mkfifo timeout; do command -v $tool >/dev/null || skip "needs $tool"; done
"$bin" check >/dev/null 2>&1 || skip "causeway check: host not ready for tracing"

. "$(dirname "$0")/test_user.sh"
new_test_user cwfifo
as_user unshare -Urm true 2>/dev/null || skip "unprivileged user namespaces are off on this host"

lib=$home/libcudart.so.13
cp "$fakelib" "$lib" && chown "$user:" "$lib"
as_user unshare -Urm sh -c '
  lib=$1 dir=$2
  python3 -c "import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); open(sys.argv[2], \"w\").close(); time.sleep(300)" "$lib" "$dir/loaded" &
  echo $! > "$dir/holder.pid"
  i=0; until [ -e "$dir/loaded" ]; do i=$((i + 1)); [ $i -lt 300 ] || exit 1; sleep 0.1; done
  mkfifo "$dir/fifo" && mount --bind "$dir/fifo" "$lib" && touch "$dir/mounted"
  wait' sh "$lib" "$home" &
upid=$!
kill_at_exit="$kill_at_exit $upid"
i=0
until [ -e "$home/mounted" ]; do
  i=$((i + 1)); [ $i -lt 300 ] || fail "the user's namespace set-up did not finish"
  kill -0 $upid 2>/dev/null || fail "the user's namespace set-up failed"
  sleep 0.1
done
hp=$(cat "$home/holder.pid")
kill_at_exit="$kill_at_exit $hp"
grep -q "$lib" "/proc/$hp/maps" || fail "pid $hp does not map $lib"
[ "$(stat -L -c %F "/proc/$hp/root$lib")" = fifo ] || fail "set-up: /proc/$hp/root$lib is not the FIFO"

start=$(date +%s)
rc=0
timeout 90 "$bin" trace --pid "$hp" --duration 3s --no-diagnose --db "$tmp/t.db" > /dev/null 2> "$tmp/err" || rc=$?
secs=$(( $(date +%s) - start ))
cat "$tmp/err"
[ $rc -ne 124 ] || fail "trace hung on the FIFO over $lib (killed after 90 s)"
[ $rc -eq 0 ] || fail "trace exited $rc"
grep -q "attached [1-9][0-9]* probes to $lib (found in pid $hp)" "$tmp/err" ||
  fail "trace did not attach to the file pid $hp maps"
echo "trace with a FIFO over the mapped library: exit 0 in $secs s, probes attached to the mapped file"
echo PASS
