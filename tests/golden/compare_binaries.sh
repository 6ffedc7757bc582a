#!/usr/bin/env bash
# Byte-identical proof of a refactor (docs/DIAGNOSIS.md "Same answers before and after"): dumps
# what two causeway binaries answer on every demo scenario (with the fixed demo clock) and on
# the trace DBs of an optional folder (tests/golden/dump_outputs.sh), then lists every file that
# differs. Exit 0 when the answers are the same byte for byte, 1 when some differ (each named,
# with its first differing lines), 2 on bad usage.
#
#   tests/golden/compare_binaries.sh BEFORE AFTER [TRACES_DIR]
#   SCENARIOS="incident requests-prefill" tests/golden/compare_binaries.sh B A   # a subset
set -u
before=${1:-}
after=${2:-}
traces=${3:-}
if [ -z "$before" ] || [ -z "$after" ]; then
  echo "usage: compare_binaries.sh BEFORE AFTER [TRACES_DIR]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
bash "$here/dump_outputs.sh" "$before" "$work/before" $traces > /dev/null || exit 2
bash "$here/dump_outputs.sh" "$after" "$work/after" $traces > /dev/null || exit 2
n=$(ls "$work/before" | wc -l)
if diff -rq "$work/before" "$work/after" > "$work/list"; then
  echo "compare_binaries: the same, $n files"
  exit 0
fi
echo "compare_binaries: $(wc -l < "$work/list") of $n files differ:"
cat "$work/list"
while read -r _ a _ b _; do
  [ -f "$a" ] && [ -f "$b" ] || continue
  echo "--- $(basename "$a")"
  diff "$a" "$b" | head -c 2000
  echo
done < <(grep '^Files ' "$work/list")
exit 1
