// DataLoader-style worker processes (docs/DIAGNOSIS.md "dataloader_starvation"): which sleeps
// of a training thread between its CUDA calls a worker ended, and what that worker was doing
// while the thread waited. Read-only over the chunk's timeline.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/correlator_internal.h"
#include "diagnosis/thread_timeline.h"

namespace causeway {

// One sleep of the waiting thread that a worker ended: by waking it, or by waking the sibling
// thread that then woke it (PyTorch's pin-memory thread relays batches from the workers).
struct WorkerWait {
  uint32_t worker_pid = 0;
  uint32_t relay_tid = 0;  // 0: the worker woke the thread itself
  int64_t from_ns = 0;     // the sleep began (clipped to the examined interval)
  int64_t wake_ns = 0;     // the worker's wake-up (of the thread, or of the relay)
  int64_t ns = 0;          // asleep until woken, inside the examined interval
};

// A worker of `victim`: a process the victim forked (or its descendant, a few generations
// deep), or one PyTorch named `pt_data_worker`. Other processes that wake the thread (a
// frontend feeding a server, an unrelated service) are not its data pipeline.
bool is_data_worker(const CorrelatorState& s, uint32_t pid, uint32_t victim_pid);

// The sleeps of thread `tid` (of process `pid`) inside [a, b] that a data worker ended.
std::vector<WorkerWait> data_worker_waits(const CorrelatorState& s, const ThreadTimelines& tl, uint32_t tid, uint32_t pid,
                                          int64_t a, int64_t b);

// What a worker process did over [from, to]: the split of its busiest thread (the one least
// asleep), from that thread's own switch records. `seen` is false when none of its threads
// left a CPU record in the window (an untraced worker: nothing is claimed about it).
struct WorkerActivity {
  bool seen = false;
  uint32_t tid = 0;
  int64_t on_cpu_ns = 0, io_wait_ns = 0, runnable_ns = 0, sleep_ns = 0;
};
WorkerActivity worker_activity(const CorrelatorState& s, const ThreadTimelines& tl, uint32_t pid, int64_t from, int64_t to);

}  // namespace causeway
