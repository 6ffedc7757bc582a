#!/usr/bin/env bash
# A causeway folder that runs on another x86-64 Linux host without this one's packages
# (docs/GPU.md "The package"): the release binary, every shared library it needs beyond glibc
# (from ldd: libbpf, libelf, libdw, SQLite, OpenSSL, zlib, xz, zstd, bzip2, libstdc++, libgcc_s),
# a copy of glibc for hosts whose own is older than the binary needs, and the fake CUDA/NCCL
# libraries that `scripts/gpu-check.sh --fake` runs against.
#
#   scripts/package.sh [--build DIR] [--out DIR]     (default: build → dist/causeway-pkg)
#
#   OUT/causeway           the wrapper to run (sets the loader path; passes every argument)
#   OUT/bin/causeway       the binary, debug sections stripped
#   OUT/lib/               the non-glibc libraries, by soname
#   OUT/lib/glibc/         the build host's loader, libc and libm: used only where the host's
#                          glibc is older than OUT/GLIBC_NEEDED (or CAUSEWAY_PKG_GLIBC=bundled)
#   OUT/testprogs/         fake libcudart.so.13 / libcuda.so.1 / libnccl.so.2, cw_workload
#   OUT/MANIFEST           what was packed, from where, and the glibc version needed
set -euo pipefail
cd "$(dirname "$0")/.."
build=build out=dist/causeway-pkg
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    -h|--help) echo "usage: scripts/package.sh [--build DIR] [--out DIR]   (default: build → dist/causeway-pkg; needs DIR/causeway and DIR/testprogs)"; exit 0 ;;
    *) echo "usage: scripts/package.sh [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
# Everything the package needs is checked before anything is written, and every missing piece
# is named at once with the command that builds it.
bin="$build/causeway"
missing=""
[ -x "$bin" ] || missing="$missing $bin"
for t in libcudart.so.13 libcuda.so.1 libnccl.so.2 cw_workload; do
  [ -e "$build/testprogs/$t" ] || missing="$missing $build/testprogs/$t"
done
if [ -n "$missing" ]; then
  echo "package: nothing packed: missing$missing" >&2
  echo "package: build them first: scripts/build.sh (or: ninja -C $build causeway causeway_testprogs), then rerun" >&2
  exit 1
fi
for tool in objcopy ldd; do
  command -v "$tool" >/dev/null || { echo "package: nothing packed: no $tool on PATH (apt-get install binutils libc-bin)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/glibc" "$out/testprogs"
objcopy --strip-debug "$bin" "$out/bin/causeway"

# glibc's own libraries stay the host's (its loader must match them); everything else travels.
is_glibc() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libresolv.so.*|libutil.so.*|libanl.so.*|libnss_*|libBrokenLocale.so.*|libthread_db.so.*|libc_malloc_debug.so.*) return 0 ;;
  esac
  return 1
}
{
  echo "causeway package, built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "binary: $("$bin" version 2>/dev/null | head -1)"
} > "$out/MANIFEST"
ldd "$bin" | while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue
  if is_glibc "$name"; then continue; fi
  [ -f "$path" ] || { echo "package: $name not found (ldd: $path)" >&2; exit 1; }
  cp -L "$path" "$out/lib/$name"
  echo "lib: $name from $path" >> "$out/MANIFEST"
done
# The bundled glibc: loader, libc, libm (and their helpers the binary links).
ldd "$bin" | while read -r name arrow path _; do
  case "$name" in
    /*/ld-linux*) cp -L "$name" "$out/lib/glibc/$(basename "$name")" ;;
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*)
      [ "$arrow" = "=>" ] && cp -L "$path" "$out/lib/glibc/$name" ;;
  esac
done
# The newest GLIBC_x.y symbol version any packed file needs: the wrapper compares the host's.
need=$(for f in "$out/bin/causeway" "$out"/lib/*.so*; do objdump -T "$f"; done 2>/dev/null |
       grep -oE 'GLIBC_[0-9]+\.[0-9]+' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -u | tail -1)
echo "$need" > "$out/GLIBC_NEEDED"
echo "glibc needed: $need" >> "$out/MANIFEST"
for t in libcudart.so.13 libcuda.so.1 libnccl.so.2 cw_workload; do cp -L "$build/testprogs/$t" "$out/testprogs/$t"; done
echo "testprogs: $(ls "$out/testprogs" | tr '\n' ' ')" >> "$out/MANIFEST"
# The cost benches of gpu-check's bench phase (docs/GPU.md "The bench phase"), when built:
# trace_cost's libraries join lib/ (it runs with LD_LIBRARY_PATH=lib), syscall_cost has none.
if [ -x "$build/bench/trace_cost" ] && [ -x "$build/bench/syscall_cost" ]; then
  mkdir -p "$out/bench"
  objcopy --strip-debug "$build/bench/trace_cost" "$out/bench/trace_cost"
  cp "$build/bench/syscall_cost" "$out/bench/syscall_cost"
  ldd "$build/bench/trace_cost" | while read -r name arrow path _; do
    if [ "$arrow" = "=>" ] && ! is_glibc "$name" && [ ! -e "$out/lib/$name" ] && [ -f "$path" ]; then cp -L "$path" "$out/lib/$name"; fi
  done
  echo "bench: trace_cost syscall_cost" >> "$out/MANIFEST"
else
  echo "bench: not built (ninja trace_cost syscall_cost): gpu-check's bench phase will say so" >> "$out/MANIFEST"
fi
cp scripts/causeway-pkg-wrapper.sh "$out/causeway"
chmod +x "$out/causeway"

size=$(du -sb "$out" | cut -f1)
echo "size: $size bytes" >> "$out/MANIFEST"
if [ "$size" -gt $((40 * 1024 * 1024)) ]; then
  echo "package: $out is $size bytes, over the 40 MiB budget" >&2
  exit 1
fi
"$out/causeway" version > /dev/null
echo "package: $out ($((size / 1024 / 1024)) MiB, needs glibc >= $need; bundled glibc for older hosts)"
