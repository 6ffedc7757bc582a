// CLOCK_MONOTONIC (what bpf_ktime_get_ns returns) → Unix ns. The offset is measured as the
// tightest of a few realtime/monotonic/realtime brackets and re-measured periodically, so NTP
// slewing during a long session does not skew timestamps by more than a few µs.
#pragma once

#include <cstdint>

namespace causeway::collector {

int64_t monotonic_ns();
int64_t realtime_ns();
// realtime - monotonic, now.
int64_t measure_mono_to_real_offset();

}  // namespace causeway::collector
