// Where a thread's time went between its first traced call and the end of its last one:
// inside calls (launches, GPU waits, the rest) and between them (on-CPU, off-CPU). Part of
// the per-thread timeline the correlator keeps (CorrelatorState::activity); the session causes
// host_bound, launch_bound and transfer_bound, and dataloader_starvation's share, read it
// (docs/DIAGNOSIS.md).
#pragma once

#include <cstdint>
#include <map>

#include "diagnosis/event_row.h"
#include "diagnosis/thread_timeline.h"

namespace causeway {

struct ThreadActivity {
  uint32_t pid = 0;
  int64_t first_ns = INT64_MAX, last_end_ns = INT64_MIN;
  int64_t calls = 0;                         // outermost traced calls
  int64_t submits = 0;                       // of them, calls that put work on a GPU queue
  int64_t launches = 0, launch_cpu_ns = 0;   // kernel launches and their time on-CPU
  int64_t gpu_waits = 0, gpu_wait_ns = 0;    // syncs and synchronous copies: time not runnable/D inside
  int64_t gap_ns = 0, gap_cpu_ns = 0;        // between calls: all of it, and the part on-CPU
  int64_t long_gaps = 0;                     // gaps >= 1 ms mostly on-CPU
  int64_t longest_gap_cpu_ns = 0;            // the most on-CPU time in one gap of 1 ms or more
  // GPU submissions (launches, async copies) since the thread's last GPU wait, and that count as
  // it stood when the last GPU wait came (gpu_wait's "since its previous GPU wait"). Kept per
  // thread in call order: a thread's run of counted calls lies between two of its recorded
  // calls, so the counts are the same whether its launches were rows or counted in the kernel.
  int64_t submits_since_wait = 0, submits_before_wait = 0;
  std::map<uint64_t, int64_t> gap_stacks;    // stack of the call after a long on-CPU gap -> on-CPU ns before it
  std::map<uint16_t, int64_t> gap_ops;       // op of the call after a long on-CPU gap -> on-CPU ns before it
  int64_t span() const { return last_end_ns > first_ns ? last_end_ns - first_ns : 0; }

  // Accounts outermost call e and the gap before it. prev_end: the end of the thread's previous
  // call (INT64_MIN: none); in_call: its off-CPU time inside e; tl: null without a timeline.
  void add_call(const Ev& e, int64_t prev_end, const OffCpuSummary& in_call, const ThreadTimelines* tl);
};

}  // namespace causeway
