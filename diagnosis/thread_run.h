// A thread's run of fast calls counted in the kernel (a calls_aggregated row: a0 calls of op a2
// taking a1 ns in all, from ts to end; docs/COLLECTOR.md "Aggregated calls") in the thread's
// activity and its op's baseline, as the calls it stands for.
#pragma once

#include <cstdint>

#include "diagnosis/event_row.h"
#include "diagnosis/thread_activity.h"
#include "tracedb/histogram.h"

namespace causeway {

// The calls count as on-CPU launch/submit time; the time between them and before the first is
// gap, none of it long (a call after a long gap is always recorded). prev_end: the end of the
// thread's previous call (INT64_MIN: none); tl: null without a timeline.
void add_counted_run(ThreadActivity& a, const Ev& e, int64_t prev_end, const ThreadTimelines* tl);

// The run's calls into an op baseline's count, histogram and extremes, each at the run's mean
// duration (the kernel keeps their exact histogram for `stats`; the baseline needs where most
// calls are, and none of these was slow).
void add_counted_run_to_baseline(const Ev& e, uint64_t& count, LatencyHistogram& hist, uint64_t& min, uint64_t& max);

}  // namespace causeway
