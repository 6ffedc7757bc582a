#!/bin/sh
# Root under sudo never follows or acts on the invoking user's links (docs/SECURITY.md
# "Root writing into a user's folder"). A real unprivileged user owns the home; root runs
# `causeway demo` with SUDO_USER/SUDO_UID/SUDO_GID set as sudo sets them. Cases:
#   plain     the DB, its folders and every file beside it belong to the user, 0700/0600
#   db-link   trace.db → a root-owned file: refused (exit 1), the file untouched
#   dir-link  ~/.local/share/causeway or ~/.local/share → a root folder: nothing made there
#   hardlink  trace.db a second name of a root-owned file: refused, the file untouched
#   outputs   `export -o` and `report -o` into the user's folder: the user's files; a link
#             there to root's file: export refuses it, report replaces the link itself
#   race      the user keeps swapping ~/.local/share/causeway between a dangling link and a
#             link to a root-owned file while root writes: the file stays root's, unchanged
# Usage: sudo_db_links.sh CAUSEWAY [RACE_RUNS]. Exits 77 (skipped) without root/useradd/setpriv.
set -eu
bin=$1 runs=${2:-20}
skip() { echo "SKIPPED: $*"; exit 77; }
# A failed case is said and the next one still runs (each starts from a clean slate).
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (plays root under sudo)"
for tool in useradd userdel setpriv python3; do command -v $tool >/dev/null || skip "needs $tool"; done

. "$(dirname "$0")/test_user.sh"
new_test_user cwsec
# sudo keeps root's HOME in some configurations: the DB must land in the user's home anyway.
as_sudo() { env -u XDG_DATA_HOME -u CAUSEWAY_DB HOME=/root SUDO_USER=$user SUDO_UID=$uid SUDO_GID=$gid "$bin" "$@"; }
demo() { as_sudo demo --quiet --events 2000 "$@"; }

# Root's things the user must not be able to reach through root: an empty file (SQLite would
# take it for a new DB) in a root folder. Made afresh for each case.
rootdir=$tmp/rootdir
fresh_root() {
  rm -rf "$rootdir" "$home/.local"
  mkdir "$rootdir" && chmod 0755 "$rootdir"
  : > "$rootdir/victim" && chmod 0644 "$rootdir/victim"
}
root_intact() {
  [ "$(stat -c %u:%g:%a:%s "$rootdir/victim")" = "0:0:644:0" ] ||
    fail "$1: $rootdir/victim is now $(stat -c '%U:%G mode %a, %s bytes' "$rootdir/victim")"
  [ "$(ls -A "$rootdir")" = victim ] || fail "$1: root wrote into $rootdir: $(ls -A "$rootdir" | tr '\n' ' ')"
  [ "$(stat -c %u:%a "$rootdir")" = "0:755" ] || fail "$1: $rootdir is now $(stat -c %U:%a "$rootdir")"
}
nothing_of_root_in_home() {
  left=$(find "$home" ! -user "$user" 2>/dev/null | head -5)
  [ -z "$left" ] || fail "$1: files in the user's home not owned by $user: $left"
}
expect_refused() {  # name, then the stderr text that says why
  rc=0; demo 2> "$tmp/err" || rc=$?
  [ $rc -eq 1 ] || fail "$1: demo exited $rc, want 1 (refused): $(cat "$tmp/err")"
  grep -qi "$2" "$tmp/err" || fail "$1: stderr does not say '$2': $(cat "$tmp/err")"
  root_intact "$1"
  echo "$1: $(head -c 240 "$tmp/err")"
}
share=$home/.local/share
db=$share/causeway/trace.db

# plain: everything the writer made is the user's.
fresh_root
demo 2> "$tmp/err" || fail "plain: demo as sudo failed: $(cat "$tmp/err")"
[ -s "$db" ] || fail "plain: no DB at $db"
for f in "$home/.local" "$share" "$share/causeway"; do
  [ "$(stat -c %u:%a "$f")" = "$uid:700" ] || fail "plain: $f is $(stat -c %U:%a "$f"), want $user 700"
done
[ "$(stat -c %u:%a "$db")" = "$uid:600" ] || fail "plain: $db is $(stat -c %U:%a "$db"), want $user 600"
nothing_of_root_in_home plain
echo "plain: DB, folders and files all $user's"

# outputs: files named with -o are the user's; a planted link never leads root to its target.
out=$home/out
as_user mkdir "$out"
as_sudo export --format perfetto --db "$db" -o "$out/t.json" 2> "$tmp/err" || fail "outputs: export failed: $(cat "$tmp/err")"
as_sudo report --db "$db" -o "$out/r.html" 2> "$tmp/err" || fail "outputs: report failed: $(cat "$tmp/err")"
for f in t.json r.html; do
  [ "$(stat -c %u "$out/$f")" = "$uid" ] || fail "outputs: $out/$f is $(stat -c %U "$out/$f"), want $user"
done
as_user ln -sf "$rootdir/victim" "$out/t.json"
rc=0; as_sudo export --format perfetto --db "$db" -o "$out/t.json" 2> "$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q "symbolic link" "$tmp/err" || fail "outputs: export through a link exited $rc: $(cat "$tmp/err")"
as_user ln -sf "$rootdir/victim" "$out/r.html"
as_sudo report --db "$db" -o "$out/r.html" 2> "$tmp/err" || fail "outputs: report over a link failed: $(cat "$tmp/err")"
[ -f "$out/r.html" ] && [ ! -L "$out/r.html" ] && [ "$(stat -c %u "$out/r.html")" = "$uid" ] ||
  fail "outputs: report over a link left $(stat -c '%F of %U' "$out/r.html")"
root_intact outputs
nothing_of_root_in_home outputs
rm -rf "$out"
echo "outputs: export/report files $user's; a link to root's file refused (export) or replaced (report)"

# db-link: trace.db → root's file.
fresh_root
as_user mkdir -p "$share/causeway"
as_user ln -s "$rootdir/victim" "$db"
expect_refused db-link "symbolic link"

# dir-link: the DB folder, then its parent, → root's folder.
fresh_root
as_user mkdir -p "$share"
as_user ln -s "$rootdir" "$share/causeway"
expect_refused dir-link "permission denied"
fresh_root
as_user mkdir -p "$home/.local"
as_user ln -s "$rootdir" "$share"
expect_refused parent-link "permission denied"

# hardlink: a second name of root's file in the user's folder (made by root here: with
# fs.protected_hardlinks the user could not, on a host without it they could).
fresh_root
as_user mkdir -p "$share/causeway"
ln "$rootdir/victim" "$db"
expect_refused hardlink "permission denied\|hard link\|belongs to"

# race: a user-side process flips the DB folder's name as fast as it can.
fresh_root
as_user mkdir -p "$share"
echo precious > "$rootdir/victim.race" && chmod 0600 "$rootdir/victim.race"
cat > "$tmp/flip.py" <<'PY'
import os, sys
share, target = sys.argv[1], sys.argv[2]
dangling, pointing, name = share + "/.d", share + "/.p", share + "/causeway"
while True:
    for tmp, dest in ((dangling, share + "/nothing-here"), (pointing, target)):
        try:
            os.symlink(dest, tmp)
            os.rename(tmp, name)
        except OSError:
            pass
PY
# Started directly (not through a shell function, which would fork a subshell): $! is the
# flipping process itself, so the kill below ends it.
setpriv --reuid "$uid" --regid "$gid" --clear-groups /usr/bin/python3 "$tmp/flip.py" "$share" "$rootdir/victim.race" \
  < /dev/null > /dev/null 2>&1 &
fpid=$!
kill_at_exit="$kill_at_exit $fpid"
sleep 0.5
kill -0 $fpid 2>/dev/null || fail "race: the flipping process did not start"
ok=0
i=0
while [ $i -lt "$runs" ]; do
  i=$((i + 1))
  if demo 2>> "$tmp/race.err"; then ok=$((ok + 1)); fi
  if [ "$(stat -c %u "$rootdir/victim.race")" != 0 ]; then
    fail "race: run $i: root gave $rootdir/victim.race to $(stat -c %U "$rootdir/victim.race")"
    break
  fi
done
kill $fpid; wait $fpid 2>/dev/null || true; fpid=
[ "$(stat -c %u:%g:%a "$rootdir/victim.race")" = "0:0:600" ] || fail "race: $rootdir/victim.race is now $(stat -c %U:%G:%a "$rootdir/victim.race")"
[ "$(cat "$rootdir/victim.race")" = precious ] || fail "race: $rootdir/victim.race was written"
rm -f "$rootdir/victim.race"
root_intact race
nothing_of_root_in_home race
[ $failed -eq 1 ] || echo "race: $i runs against a flipping link ($ok wrote a DB, the rest refused); root's file intact"
[ $failed -eq 0 ] || exit 1
echo PASS
