#!/bin/sh
# Files a user names for root to read under sudo are read as that user (docs/SECURITY.md
# "Files root reads for a user"): their contents leave the process (a password sent to a
# fleet store) or act for it (a TLS key the server signs with). A real unprivileged user; root
# runs causeway with SUDO_USER/SUDO_UID/SUDO_GID set as sudo sets them. Cases:
#   password   --password-file naming root's secret (directly, or through the user's link):
#              refused before any connection; a listener sees no byte of it. The user's own
#              file is read and its password sent.
#   token      --token-file naming root's secret: refused, the server never listens
#   tls-key    --tls-key naming root's key: refused
#   state-dir  the generated CA and certificate in the user's --state-dir are the user's; a
#              state dir that links to root's folder gets nothing made there
# Usage: sudo_inputs.sh CAUSEWAY. Exits 77 (skipped) without root/useradd/setpriv/python3.
set -eu
bin=$1
skip() { echo "SKIPPED: $*"; exit 77; }
failed=0
fail() { echo "FAIL: $*"; failed=1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (plays root under sudo)"
for tool in useradd userdel setpriv python3 timeout; do command -v $tool >/dev/null || skip "needs $tool"; done

. "$(dirname "$0")/test_user.sh"
new_test_user cwin
chmod 0700 "$home"
as_sudo() { env -u XDG_STATE_HOME -u CAUSEWAY_MCP_TOKEN HOME=/root SUDO_USER=$user SUDO_UID=$uid SUDO_GID=$gid "$bin" "$@"; }

# Root's secrets, in a folder the user may list but not read the files of.
rootdir=$tmp/rootdir
mkdir "$rootdir" && chmod 0755 "$rootdir"
secret=rootsecret$$
printf '%s\n' "$secret" > "$rootdir/secret" && chmod 0600 "$rootdir/secret"
as_user ln -s "$rootdir/secret" "$home/pw-link"
printf 'userpw%s\n' "$$" > "$home/pw" && chown "$user:" "$home/pw" && chmod 0600 "$home/pw"
as_user "$bin" demo --quiet --events 2000 --db "$home/d.db" || fail "setup: demo as the user failed"

# A listener that keeps every byte any client sends it, and answers 500.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$port" "$tmp/heard" <<'PY' &
import socket, sys
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1]))); srv.listen(16)
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        c, _ = srv.accept(); c.settimeout(2)
        try:
            data = c.recv(65536); out.write(data)
            c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope\n")
        except OSError: pass
        c.close()
PY
lpid=$!
kill_at_exit="$kill_at_exit $lpid"
for i in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break; sleep 0.1; done
: > "$tmp/heard"

# password
for pw in "$rootdir/secret" "$home/pw-link"; do
  rc=0; as_sudo ship --to "http://127.0.0.1:$port" --db "$home/d.db" --password-file "$pw" 2> "$tmp/err" || rc=$?
  [ $rc -ne 0 ] && grep -q -- "--password-file" "$tmp/err" && grep -q "as $user" "$tmp/err" ||
    fail "password: $pw: exit $rc: $(cat "$tmp/err")"
done
grep -q "$secret" "$tmp/heard" && fail "password: root's secret reached the listener"
[ -s "$tmp/heard" ] && fail "password: something connected for a refused password file: $(head -c 200 "$tmp/heard")"
echo "password: root's file refused ($(head -c 160 "$tmp/err"))"
rc=0; as_sudo ship --to "http://127.0.0.1:$port" --db "$home/d.db" --password-file "$home/pw" 2> "$tmp/err" || rc=$?
grep -q "X-ClickHouse-Key: userpw$$" "$tmp/heard" || fail "password: the user's own file was not sent (exit $rc): $(cat "$tmp/err")"
echo "password: the user's own file is read and sent (ship then fails on the 500: exit $rc)"

# state-dir: the MCP server's generated CA and certificate in the user's folder are the user's.
sudo_env="HOME=/root SUDO_USER=$user SUDO_UID=$uid SUDO_GID=$gid"
mcp_sudo() { timeout 20 env -u CAUSEWAY_MCP_TOKEN -u XDG_STATE_HOME $sudo_env "$bin" mcp --db "$home/d.db" "$@"; }
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 't0123456789abcdef0123456789abcdef\n' > "$home/tok" && chown "$user:" "$home/tok" && chmod 0600 "$home/tok"
mcp_sudo --http "127.0.0.1:$mport" --state-dir "$home/state" --token-file "$home/tok" 2> "$tmp/mcp.err" &
mpid=$!
kill_at_exit="$kill_at_exit $mpid"
for i in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $mport), 1)" 2>/dev/null && break; sleep 0.1; done
kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null || true
[ -f "$home/state/mcp-cert.pem" ] && [ -f "$home/state/mcp-key.pem" ] || fail "state-dir: no certificate made: $(cat "$tmp/mcp.err")"
left=$(find "$home" ! -user "$user" 2>/dev/null | head -5)
[ -z "$left" ] || fail "state-dir: files in the user's home not owned by $user: $left"
as_user ln -s "$rootdir" "$home/state-link"
rc=0; mcp_sudo --http "127.0.0.1:$mport" --state-dir "$home/state-link" --token-file "$home/tok" 2> "$tmp/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "state-dir: a state dir linking to root's folder was used (exit $rc)"
[ "$(ls -A "$rootdir" | tr '\n' ' ')" = "secret " ] || fail "state-dir: root wrote into $rootdir: $(ls -A "$rootdir" | tr '\n' ' ')"
echo "state-dir: generated files are $user's; a link to root's folder gets nothing ($(head -c 160 "$tmp/err"))"

# token
rc=0; mcp_sudo --http "127.0.0.1:$mport" --state-dir "$home/state" --token-file "$rootdir/secret" 2> "$tmp/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "--token-file" "$tmp/err" || fail "token: exit $rc: $(cat "$tmp/err")"
echo "token: root's file refused ($(head -c 160 "$tmp/err"))"

# tls-key: the user's certificate with a copy of its key that only root may read.
cp "$home/state/mcp-key.pem" "$rootdir/key.pem" && chown root: "$rootdir/key.pem" && chmod 0600 "$rootdir/key.pem"
rc=0; mcp_sudo --http "127.0.0.1:$mport" --tls-cert "$home/state/mcp-cert.pem" --tls-key "$rootdir/key.pem" \
  --token-file "$home/tok" 2> "$tmp/err" || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "--tls-key" "$tmp/err" || fail "tls-key: exit $rc: $(cat "$tmp/err")"
echo "tls-key: root's key refused ($(head -c 160 "$tmp/err"))"

[ $failed -eq 0 ] && echo "PASS: sudo inputs"
exit $failed
