#!/bin/sh
# First-use edges of the shipped scripts (issue #38), on copies of them in a scratch checkout:
# gpu-check.sh --help answers (exit 0, usage on stdout); gpu-check.sh --fake takes the
# checkout's build/ and its testprogs before an installed causeway; package.sh names every
# missing input before it writes anything.
#   test_scripts_first_use.sh SOURCE_DIR
set -u
src=${1:?source dir}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # check WHAT CONDITION...: run the condition, report when it does not hold
  what=$1; shift
  if "$@"; then :; else echo "FAIL: $what" >&2; fail=1; fi
}
mkdir -p "$tmp/co/scripts" "$tmp/bin"
cp "$src/scripts/gpu-check.sh" "$src/scripts/package.sh" "$tmp/co/scripts/"
printf '#!/bin/sh\necho fake causeway\n' > "$tmp/bin/causeway"
chmod +x "$tmp/bin/causeway"
gc="$tmp/co/scripts/gpu-check.sh"

# --help: usage on stdout, exit 0; an unknown flag: usage on stderr, exit 2.
out=$(sh -c "bash '$gc' --help" 2>/dev/null); rc=$?
check "gpu-check --help exits 0 (got $rc)" [ $rc = 0 ]
check "gpu-check --help prints the usage with --fake" sh -c "printf '%s' \"\$1\" | grep -q -- '--fake'" _ "$out"
bash "$gc" --no-such-flag >/dev/null 2>"$tmp/err"; rc=$?
check "gpu-check --no-such-flag exits 2 (got $rc)" [ $rc = 2 ]
check "gpu-check --no-such-flag names the flag" grep -q -- '--no-such-flag' "$tmp/err"

# The checkout's build with its testprogs wins over an installed causeway and a package.
mkdir -p "$tmp/co/build/testprogs" "$tmp/co/dist/causeway-pkg/testprogs"
cp "$tmp/bin/causeway" "$tmp/co/build/causeway"
cp "$tmp/bin/causeway" "$tmp/co/dist/causeway-pkg/causeway"
: > "$tmp/co/dist/causeway-pkg/testprogs/libcudart.so.13"
: > "$tmp/co/build/testprogs/libcudart.so.13"
which=$(PATH="$tmp/bin:$PATH" BUILD_DIR= bash "$gc" --fake --which 2>&1); rc=$?
check "gpu-check --fake --which exits 0 (got $rc: $which)" [ $rc = 0 ]
check "gpu-check --fake takes the checkout's build (got: $which)" \
  sh -c "printf '%s\n' \"\$1\" | grep -qx 'causeway: $tmp/co/build/causeway'" _ "$which"
check "gpu-check --fake takes the build's testprogs (got: $which)" \
  sh -c "printf '%s\n' \"\$1\" | grep -qx 'testprogs: $tmp/co/build/testprogs'" _ "$which"
# A build without the fakes: --fake goes to the package that has them; a GPU run keeps the build.
rm "$tmp/co/build/testprogs/libcudart.so.13"
which=$(PATH="$tmp/bin:$PATH" BUILD_DIR= bash "$gc" --fake --which 2>&1)
check "gpu-check --fake without fakes in build/ takes the package (got: $which)" \
  sh -c "printf '%s\n' \"\$1\" | grep -qx 'causeway: $tmp/co/dist/causeway-pkg/causeway'" _ "$which"
which=$(PATH="$tmp/bin:$PATH" BUILD_DIR= bash "$gc" --which 2>&1)
check "gpu-check (GPU) takes the checkout's build (got: $which)" \
  sh -c "printf '%s\n' \"\$1\" | grep -qx 'causeway: $tmp/co/build/causeway'" _ "$which"
# Only an installed causeway: the checkout's build/testprogs is still where the fakes are looked for.
rm -rf "$tmp/co/build" "$tmp/co/dist"
which=$(PATH="$tmp/bin:$PATH" BUILD_DIR= bash "$gc" --fake --which 2>&1)
check "gpu-check --fake with only PATH's causeway looks in build/testprogs (got: $which)" \
  sh -c "printf '%s\n' \"\$1\" | grep -qx 'testprogs: $tmp/co/build/testprogs'" _ "$which"

# package.sh without a build: exit 1, every missing piece and the build command named, nothing written.
(cd "$tmp/co" && bash scripts/package.sh) >/dev/null 2>"$tmp/err"; rc=$?
check "package.sh without build/ exits 1 (got $rc)" [ $rc = 1 ]
check "package.sh names build/causeway" grep -q 'build/causeway' "$tmp/err"
check "package.sh names the fakes" grep -q 'build/testprogs/libcudart.so.13' "$tmp/err"
check "package.sh says how to build" grep -q 'scripts/build.sh' "$tmp/err"
check "package.sh wrote nothing" [ ! -e "$tmp/co/dist" ]
(cd "$tmp/co" && bash scripts/package.sh --help) >"$tmp/out" 2>&1; rc=$?
check "package.sh --help exits 0 (got $rc)" [ $rc = 0 ]
check "package.sh --help prints the usage" grep -q 'usage: scripts/package.sh' "$tmp/out"
[ $fail = 0 ] && echo "scripts first use: all checks passed"
exit $fail
