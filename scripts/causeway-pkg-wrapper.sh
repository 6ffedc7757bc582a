#!/bin/sh
# causeway from a package folder (scripts/package.sh, docs/GPU.md "The package"): the binary
# with the libraries packed beside it ahead of the host's. glibc stays the host's unless it is
# older than the binary needs (GLIBC_NEEDED) or CAUSEWAY_PKG_GLIBC=bundled: then the packed
# loader runs it with the packed glibc (CAUSEWAY_PKG_GLIBC=host forces the host's).
here=$(dirname "$(readlink -f "$0")")
need=$(cat "$here/GLIBC_NEEDED" 2>/dev/null)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //')
# older A B: A (major.minor) is before B; an unknown version counts as new enough.
older() {
  [ -n "$1" ] && [ -n "$2" ] || return 1
  a1=${1%%.*} a2=${1#*.} b1=${2%%.*} b2=${2#*.}
  a2=${a2%%.*} b2=${b2%%.*}
  [ "$a1" -lt "$b1" ] || { [ "$a1" -eq "$b1" ] && [ "$a2" -lt "$b2" ]; }
}
case "${CAUSEWAY_PKG_GLIBC:-auto}" in
  bundled) bundled=1 ;;
  host) bundled=0 ;;
  *) if older "$have" "$need"; then bundled=1; else bundled=0; fi ;;
esac
if [ "$bundled" = 1 ]; then
  exec "$here/lib/glibc/ld-linux-x86-64.so.2" --library-path "$here/lib:$here/lib/glibc" "$here/bin/causeway" "$@"
fi
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/causeway" "$@"
