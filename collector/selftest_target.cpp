#include "collector/selftest_target.h"

#include <time.h>
#include <unistd.h>

#include "collector/proc_maps.h"

namespace causeway::collector {

extern "C" __attribute__((noinline, used)) int causeway_selftest_call(uint64_t stream, uint64_t spin_ns) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t end = uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec) + spin_ns;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec) >= end) break;
  }
  __asm__ volatile("" ::"r"(stream) : "memory");
  return 0;
}

namespace {
volatile bool g_trap_site_flag = false;
}  // namespace

// It opens as glibc's socket functions do (read, write, send, recv: a compare of a global,
// rip-relative), an instruction the kernel must step out of line, so the trap timed is the
// one a server pays on the libc hook.
extern "C" __attribute__((noinline, used)) void causeway_trap_site(uint64_t v) {
  if (g_trap_site_flag) __asm__ volatile("" ::"r"(v) : "memory");
}

namespace {

Result<CodeLocation> location_of(uint64_t addr) {
  auto maps = read_maps(static_cast<uint32_t>(::getpid()));
  const Mapping* m = find_mapping(maps, addr);
  if (!m || m->path.empty() || m->path[0] != '/')
    return make_error("selftest", "cannot find the causeway binary in /proc/self/maps");
  return CodeLocation{m->path, addr - m->start + m->offset};
}

}  // namespace

Result<CodeLocation> selftest_call_location() { return location_of(reinterpret_cast<uint64_t>(&causeway_selftest_call)); }

Result<CodeLocation> trap_site_location() { return location_of(reinterpret_cast<uint64_t>(&causeway_trap_site)); }

}  // namespace causeway::collector
