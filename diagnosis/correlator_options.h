// The correlator's tuning and its counters: the one part of its interface the state every
// cause module reads (diagnosis/correlator_internal.h) needs, kept apart from the Correlator
// class so the cause modules below it never include it (no include cycle, docs/DIAGNOSIS.md
// "Layers").
#pragma once

#include <cstdint>

#include "diagnosis/baseline.h"

namespace causeway {

struct CorrelatorOptions {
  int64_t chunk_ns = 10'000'000'000;     // calls analyzed per step; the baseline spans two chunks
  int64_t context_ns = 5'000'000'000;    // sched and host context kept on each side of a chunk
  int64_t startup_ns = 5'000'000'000;    // after a process's first call: slow calls are cold start
  int64_t min_stall_ns = 500'000;        // off-CPU time that is a host stall by itself (R, D, or S woken by a sibling)
  int64_t expensive_alloc_ns = 500'000;  // a device alloc/free this long went to the driver (not the cache)
  OutlierRule outlier;
};

struct CorrelatorCounters {
  uint64_t events = 0;      // rows read from events
  uint64_t sched_rows = 0;  // rows read from sched
  uint64_t wakeups = 0;     // rows read from wakeups
  uint64_t calls = 0;       // calls analyzed
  uint64_t slow_calls = 0;  // calls (or gaps between calls) attributed to a chain
  uint64_t chunks = 0;
};

}  // namespace causeway
