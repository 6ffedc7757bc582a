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

Result<CodeLocation> selftest_call_location() {
  const auto addr = reinterpret_cast<uint64_t>(&causeway_selftest_call);
  auto maps = read_maps(static_cast<uint32_t>(::getpid()));
  const Mapping* m = find_mapping(maps, addr);
  if (!m || m->path.empty() || m->path[0] != '/')
    return make_error("selftest", "cannot find the causeway binary in /proc/self/maps");
  return CodeLocation{m->path, addr - m->start + m->offset};
}

}  // namespace causeway::collector
