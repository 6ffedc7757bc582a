#include "collector/clock.h"

#include <time.h>

namespace causeway::collector {
namespace {
int64_t read(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t monotonic_ns() { return read(CLOCK_MONOTONIC); }
int64_t realtime_ns() { return read(CLOCK_REALTIME); }

int64_t measure_mono_to_real_offset() {
  int64_t best_width = INT64_MAX, offset = 0;
  for (int i = 0; i < 5; ++i) {
    int64_t r0 = realtime_ns(), m = monotonic_ns(), r1 = realtime_ns();
    if (r1 - r0 < best_width) {
      best_width = r1 - r0;
      offset = r0 + (r1 - r0) / 2 - m;
    }
  }
  return offset;
}

}  // namespace causeway::collector
