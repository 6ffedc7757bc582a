#!/bin/sh
# The package runs without this host's libraries (docs/GPU.md "The package"): scripts/package.sh
# builds it, then, in a private mount namespace where every library it carries is hidden at its
# host path (an empty file bind-mounted over it), the packaged causeway runs version, demo,
# explain and check. The bare build binary must fail there, or the hiding proved nothing; the
# bundled-glibc path (CAUSEWAY_PKG_GLIBC=bundled) must load libc from the package.
#   package_portable.sh SOURCE_DIR BUILD_DIR
# Root for the mount namespace, else exit 77.
set -u
src=$1 build=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (mount namespace)"; exit 77; }
command -v unshare > /dev/null || { echo "SKIP: no unshare"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cw-pkg-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$src/scripts/package.sh" --build "$build" --out "$tmp/pkg" || fail "package.sh failed"
pkg="$tmp/pkg"
size=$(du -sb "$pkg" | cut -f1)
echo "package: $size bytes"; cat "$pkg/MANIFEST"
[ "$size" -le $((40 * 1024 * 1024)) ] || fail "package over 40 MiB"
for l in libbpf.so.1 libsqlite3.so.0 libelf.so.1 libdw.so.1 libcrypto.so.3 libstdc++.so.6; do
  [ -f "$pkg/lib/$l" ] || fail "$l not packed"
done
[ -f "$pkg/lib/glibc/libc.so.6" ] || fail "glibc not packed"
[ ! -e "$pkg/lib/libc.so.6" ] || fail "libc.so.6 packed among the host-glibc libraries"

# In the namespace: every packed library's host copies (by file name, in every folder the loader
# searches) covered with an empty file, then the commands.
: > "$tmp/empty"
cat > "$tmp/inside.sh" <<EOF
set -u
for l in \$(ls "$pkg/lib" | grep '\.so'); do
  for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/local/lib /lib /usr/lib; do
    [ -f "\$d/\$l" ] && mount --bind "$tmp/empty" "\$d/\$l"
  done
done
echo "hidden: \$(grep -c 'cw-pkg-test.*/empty' /proc/self/mountinfo) library paths"
if "$build/causeway" version > "$tmp/bare.out" 2>&1; then echo "FAIL: the build's own binary still runs: nothing was hidden"; exit 1; fi
echo "bare binary, as expected: \$(head -1 "$tmp/bare.out")"
"$pkg/causeway" version || { echo "FAIL: version"; exit 1; }
"$pkg/causeway" demo --db "$tmp/demo.db" --quiet || { echo "FAIL: demo"; exit 1; }
"$pkg/causeway" explain --json --db "$tmp/demo.db" > "$tmp/explain.json" || { echo "FAIL: explain"; exit 1; }
grep -q '"cause"' "$tmp/explain.json" || { echo "FAIL: explain named no cause on the demo"; exit 1; }
"$pkg/causeway" check --json --db "$tmp/check.db" > "$tmp/check.json"; rc=\$?
[ \$rc -le 1 ] || { echo "FAIL: check exited \$rc"; exit 1; }
grep -q '"bpf_load"' "$tmp/check.json" || { echo "FAIL: check --json has no bpf_load item"; cat "$tmp/check.json"; exit 1; }
echo "check exit \$rc"
CAUSEWAY_PKG_GLIBC=bundled LD_DEBUG=files "$pkg/causeway" version > "$tmp/bundled.out" 2> "$tmp/bundled.err" ||
  { echo "FAIL: version with the bundled glibc"; cat "$tmp/bundled.err" | tail -5; exit 1; }
grep -q "calling init: $pkg/lib/glibc/libc.so.6" "$tmp/bundled.err" ||
  { echo "FAIL: bundled glibc not loaded from the package"; grep 'calling init' "$tmp/bundled.err"; exit 1; }
CAUSEWAY_PKG_GLIBC=bundled "$pkg/causeway" demo --db "$tmp/demo2.db" --quiet || { echo "FAIL: demo, bundled glibc"; exit 1; }
echo "bundled glibc: \$(head -1 "$tmp/bundled.out")"
EOF
unshare -m sh "$tmp/inside.sh" || fail "inside the namespace (output above)"
echo "PASS"
