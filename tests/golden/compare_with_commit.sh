#!/usr/bin/env bash
# The byte-identical check against an older commit in one command: builds that commit's
# `causeway` in a git worktree of its own (kept for the next run), then compares it with this
# checkout's build/causeway through tests/golden/compare_binaries.sh (each demo DB written once,
# by the older binary, and read by both; the trace DBs of TRACES_DIR too). Exit status and
# output are compare_binaries.sh's; 2 when the older binary cannot be built.
#
#   tests/golden/compare_with_commit.sh REF [TRACES_DIR]
#   OLD_TREE=DIR   where the older commit's worktree goes (default: $TMPDIR/causeway-golden-SHA)
#   AFTER=BINARY   the binary to compare instead of build/causeway
#   BEFORE=BINARY  REF's binary already built (its tree is then neither made nor rebuilt)
#   EXPECT=FILE    the differences expected: tests/golden/expected_REF.txt when it exists
#   CACHE=DIR      REF's demo DBs and answers kept between runs (default: $TMPDIR/causeway-golden-cache)
# Other variables (SCENARIOS, KEEP, DEMOS, WRITER, SUMMARY, JOBS) pass through to compare_binaries.sh.
set -u
ref=${1:-}
traces=${2:-}
[ -n "$ref" ] || { echo "usage: compare_with_commit.sh REF [TRACES_DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
sha=$(git -C "$repo" rev-parse --verify --quiet "$ref^{commit}") ||
  { echo "compare_with_commit: $ref is not a commit of $repo" >&2; exit 2; }
after=${AFTER:-$repo/build/causeway}
[ -x "$after" ] || { echo "compare_with_commit: $after is missing: build it first (ninja -C build causeway)" >&2; exit 2; }
if [ -n "${BEFORE:-}" ]; then
  [ -x "$BEFORE" ] || { echo "compare_with_commit: BEFORE=$BEFORE is not an executable" >&2; exit 2; }
  old=$BEFORE
else
  tree=${OLD_TREE:-${TMPDIR:-/tmp}/causeway-golden-${sha:0:12}}
  if [ ! -e "$tree/.git" ]; then
    git -C "$repo" worktree add --detach "$tree" "$sha" > /dev/null ||
      { echo "compare_with_commit: cannot make a worktree of $sha at $tree" >&2; exit 2; }
  fi
  launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$tree/build/build.ninja" ]; then
    cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAUSEWAY_UNITY=OFF "${launcher[@]}" \
      > "$tree/configure.log" 2>&1 || { echo "compare_with_commit: configuring $sha failed ($tree/configure.log)" >&2; exit 2; }
  fi
  ninja -C "$tree/build" causeway > "$tree/build.log" 2>&1 ||
    { echo "compare_with_commit: building $sha failed ($tree/build.log)" >&2; exit 2; }
  old=$tree/build/causeway
fi
echo "compare_with_commit: before = $sha ($old), after = $after"
export CACHE=${CACHE:-${TMPDIR:-/tmp}/causeway-golden-cache}
[ -n "${EXPECT:-}" ] || [ ! -f "$here/expected_${ref}.txt" ] || export EXPECT=$here/expected_${ref}.txt
exec bash "$here/compare_binaries.sh" "$old" "$after" $traces
