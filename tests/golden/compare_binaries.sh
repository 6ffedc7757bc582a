#!/usr/bin/env bash
# Byte-identical proof of a refactor (docs/DIAGNOSIS.md "Same answers before and after"): dumps
# what two causeway binaries answer (tests/golden/dump_outputs.sh) on every demo scenario and on
# the trace DBs of an optional folder, then lists every file that differs. Exit 0 when the
# answers are the same byte for byte, 1 when some differ (each named, with what differs: for a
# JSON answer by path, tests/golden/summarize_diff.py; else its first differing lines), 2 on bad
# usage or when a dump could not be made.
#
#   tests/golden/compare_binaries.sh BEFORE AFTER [TRACES_DIR]
#   SCENARIOS="incident requests-prefill" tests/golden/compare_binaries.sh B A   # a subset
#   KEEP=DIR tests/golden/compare_binaries.sh B A      # keep the dumps (DIR/before, DIR/after)
#
# DEMOS chooses how the demo scenarios are compared:
#   shared (default)  each demo DB is written ONCE, by the WRITER binary (before, the default, or
#                     after), and both binaries answer over that same file, as stored and after
#                     `merge` (which re-runs the correlator and the request chains): the fair
#                     comparison when the binaries' demo writers differ or one binary writes a
#                     schema the other cannot read (a newer binary must read an older DB; the
#                     reverse is refused as db_too_new). The older binary is the usual writer.
#   each              each binary writes its own demo DBs with the fixed demo clock (both need
#                     `demo --start-ns`): this also covers changes to the scenarios themselves.
set -u
before=${1:-}
after=${2:-}
traces=${3:-}
if [ -z "$before" ] || [ -z "$after" ]; then
  echo "usage: compare_binaries.sh BEFORE AFTER [TRACES_DIR]" >&2
  exit 2
fi
for b in "$before" "$after"; do
  [ -x "$b" ] || { echo "compare_binaries: $b is not an executable" >&2; exit 2; }
done
if [ -n "$traces" ] && [ ! -d "$traces" ]; then
  echo "compare_binaries: $traces is not a folder of trace DBs" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d) || exit 2
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP" || exit 2
  work=$(cd "$KEEP" && pwd)
  rm -rf "$work/before" "$work/after" "$work/dbs"
else
  trap 'rm -rf "$work"' EXIT
fi

case "${DEMOS:-shared}" in
  shared)
    case "${WRITER:-before}" in
      before) writer=$before ;;
      after) writer=$after ;;
      *) echo "compare_binaries: WRITER is before or after, not '$WRITER'" >&2; exit 2 ;;
    esac
    writer=$(cd "$(dirname "$writer")" && pwd)/$(basename "$writer")
    # The demo DBs and the folder's trace DBs side by side, as one folder of DBs.
    mkdir -p "$work/dbs" || exit 2
    if [ -n "$traces" ]; then
      for src in "$traces"/*.db; do
        [ -f "$src" ] && ln -s "$(cd "$(dirname "$src")" && pwd)/$(basename "$src")" "$work/dbs/"
      done
    fi
    if [ -n "${SCENARIOS:-}" ]; then
      scenarios=$SCENARIOS
      [ "$scenarios" != none ] || scenarios=""
    else
      scenarios=$("$writer" demo --list | awk 'NF { print $1 }')
    fi
    clock=()
    if "$writer" demo --help 2>/dev/null | grep -q -- --start-ns; then
      clock=(--start-ns "${DEMO_START_NS:-1767225600000000000}")
    fi
    for s in $scenarios; do
      # Written in the folder under its final name: a path the DB stores is the same for both.
      (cd "$work/dbs" && "$writer" demo "$s" --db "demo-$s.db" -q "${clock[@]}") ||
        { echo "compare_binaries: $writer demo $s failed" >&2; exit 2; }
    done
    export SCENARIOS=none
    traces=$work/dbs
    ;;
  each) ;;
  *) echo "compare_binaries: DEMOS is shared or each, not '$DEMOS'" >&2; exit 2 ;;
esac

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
  case "$a" in
    *.json | *.jsonl) python3 "$here/summarize_diff.py" "$a" "$b" | head -c 4000 ;;  # by path: added, changed
    *) diff "$a" "$b" | head -c 2000 ;;
  esac
  echo
done < <(grep '^Files ' "$work/list")
exit 1
