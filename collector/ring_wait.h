// Sleeping until a BPF ring has records, instead of waking on a short timeout to look
// (docs/COLLECTOR.md "Draining without polling").
//
// The producers wake a sleeping reader only when a ring is a quarter full or a record is urgent
// (bpf/maps.bpf.h wake_flag; a new process, a listen), so a wait here costs nothing while the
// rings fill slowly. Each ring manager's epoll set (libbpf ring_buffer__epoll_fd) goes into one
// epoll set of our own, with an eventfd that wake() writes: the reader sleeps on all its rings
// at once, and a thread that stops it does not wait out a timeout.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

struct ring_buffer;

namespace causeway::collector {

class RingWait {
 public:
  // fds: what to wait on (ring_buffer__epoll_fd of each ring manager; any pollable fd).
  static Result<RingWait> over(const std::vector<int>& fds);

  // Sleeps until one of the fds is readable, wake() was called, a signal arrived, or
  // timeout_ms passed (-1: no timeout). True unless it timed out. A wake() is consumed.
  bool wait(int timeout_ms);
  // From any thread: the current or next wait() returns at once.
  void wake();

 private:
  RingWait() = default;
  UniqueFd epoll_, wake_;
};

// A reader thread's loop over one ring manager until `stop` (set it, then wake()): sleeps on
// the ring, then consumes it. Without a RingWait (no epoll or eventfd) it polls, waking every
// fallback_ms to look at `stop`.
void serve_ring_until_stopped(ring_buffer* rb, std::optional<RingWait>& wait, const std::atomic<bool>& stop,
                              int fallback_ms);

// How long the drain loop sleeps next, after a round that took `records` from the rings,
// emptied them or not (`rings_emptied`: false when the writer's room or the round's budget
// left records behind), and slept `last_ms`: kDrainWaitBusyMs while records come in bulk or
// wait (a burst is drained in steps before the ring's quarter-full wake-up), doubling up to
// kDrainWaitIdleMs while they trickle or none come (docs/COLLECTOR.md "Draining without polling").
inline constexpr int kDrainWaitBusyMs = 10;
inline constexpr int kDrainWaitIdleMs = 100;
inline constexpr uint64_t kDrainBusyRecords = 4096;
int next_drain_wait_ms(uint64_t records, bool rings_emptied, int last_ms);

}  // namespace causeway::collector
