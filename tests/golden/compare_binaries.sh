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
#   CACHE=DIR  keeps the demo DBs and BEFORE's answers in DIR/KEY (KEY: a digest of BEFORE,
#              WRITER, dump_outputs.sh, the trace DBs and the scenario list): a rerun against the
#              same BEFORE dumps AFTER only.
#   EXPECT=FILE  the differences expected (a summary this script wrote, SUMMARY=FILE): exit 0
#              when the differences are exactly those (wall-clock stamps folded), else 1 with
#              what is new or gone. The last line prints the runtime.
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
started=$SECONDS
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
    if [ -n "${CACHE:-}" ]; then
      key=$({
        sha256sum < "$before"; sha256sum < "$writer"; sha256sum < "$here/dump_outputs.sh"
        if [ -n "$traces" ]; then for t in "$traces"/*.db; do [ -f "$t" ] && sha256sum "$t"; done; fi
        echo "${SCENARIOS:-all} ${DEMO_START_NS:-}"
      } | sha256sum | cut -c1-16)
      cached=$CACHE/$key
    fi
  ;;
esac
if [ -n "${cached:-}" ] && [ -f "$cached/done" ]; then
  echo "compare_binaries: the demo DBs and BEFORE's answers from $cached"
  SCENARIOS=none bash "$here/dump_outputs.sh" "$after" "$work/after" "$cached/dbs" > /dev/null || exit 2
  rm -rf "$work/before" && cp -r "$cached/before" "$work/before" || exit 2
else
case "${DEMOS:-shared}" in
  shared)
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
      while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-4}" ]; do wait -n; done
      # Written in the folder under its final name: a path the DB stores is the same for both.
      (cd "$work/dbs" && "$writer" demo "$s" --db "demo-$s.db" -q "${clock[@]}") || echo "$s" >> "$work/demo_failed" &
    done
    wait
    [ ! -s "$work/demo_failed" ] ||
      { echo "compare_binaries: $writer demo failed: $(tr '\n' ' ' < "$work/demo_failed")" >&2; exit 2; }
    export SCENARIOS=none
    traces=$work/dbs
    ;;
  each) ;;
  *) echo "compare_binaries: DEMOS is shared or each, not '$DEMOS'" >&2; exit 2 ;;
esac

# BEFORE and AFTER at once: each dump mostly waits (disk, MCP answers).
bash "$here/dump_outputs.sh" "$before" "$work/before" $traces > /dev/null & before_dump=$!
bash "$here/dump_outputs.sh" "$after" "$work/after" $traces > /dev/null || exit 2
wait $before_dump || exit 2
if [ -n "${cached:-}" ]; then
  rm -rf "$cached" && mkdir -p "$cached" &&
    { [ "${DEMOS:-shared}" != shared ] || cp -a "$work/dbs" "$cached/dbs"; } &&
    cp -r "$work/before" "$cached/before" && touch "$cached/done"
fi
fi
n=$(ls "$work/before" | wc -l)
took() { echo "compare_binaries: took $((SECONDS - started)) s"; }
if diff -rq "$work/before" "$work/after" > "$work/list"; then
  echo "compare_binaries: the same, $n files"
  took
  exit 0
fi
echo "compare_binaries: $(wc -l < "$work/list") of $n files differ"
# The whole summary: per file what differs (a JSON answer by path: added, changed).
while read -r _ a _ b _; do
  [ -f "$a" ] && [ -f "$b" ] || continue
  echo "--- $(basename "$a")"
  case "$a" in
    *.json | *.jsonl) python3 "$here/summarize_diff.py" "$a" "$b" ;;
    *) diff "$a" "$b" ;;
  esac
done < <(grep '^Files ' "$work/list") > "$work/summary"
grep '^Only in ' "$work/list" | sed "s|$work/||" >> "$work/summary"
[ -z "${SUMMARY:-}" ] || cp "$work/summary" "$SUMMARY"
if [ -n "${EXPECT:-}" ]; then
  # Wall-clock stamps (ns since the epoch, UTC dates) folded: the older demos start at the clock.
  fold() { sed -E 's/[0-9]{16,}/N/g; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/T/g' "$1"; }
  if diff <(fold "$EXPECT") <(fold "$work/summary") > "$work/expect.diff"; then
    echo "compare_binaries: every difference is one of $EXPECT's ($(grep -c '^--- ' "$EXPECT") files; SUMMARY=FILE keeps them)"
    took
    exit 0
  fi
fi
cat "$work/list"
# Printed in short: a file's first 4000 characters.
awk '/^--- /{n=0; print ""} {n+=length($0)+1; if (n<=4000) print}' "$work/summary"
if [ -n "${EXPECT:-}" ]; then
  echo "compare_binaries: differences NOT as in $EXPECT (< expected, > now):"
  cat "$work/expect.diff"
fi
took
exit 1
