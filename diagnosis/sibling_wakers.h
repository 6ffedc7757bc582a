// Who ended a thread's sleeps (docs/DIAGNOSIS.md "Arbitration"): a sibling thread of its own
// process that woke it is lock_contention's evidence, unless the sleep was a hand-off (the
// waker was busy making CUDA calls, or was itself preempted) or a data worker's batch relayed.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "diagnosis/data_workers.h"
#include "diagnosis/event_row.h"
#include "diagnosis/thread_timeline.h"

namespace causeway {

class SiblingWakers {
 public:
  SiblingWakers(const ThreadTimelines& tl, const std::vector<Ev>& events) : tl_(tl), events_(events) {}

  // Sleeps a sibling thread ended (a lock it held), except those it only relayed from a data
  // worker (`relayed`: counted as the worker's). A wake-up by the thread itself is no culprit.
  // Between calls (`between`), a sleep during which the waker made CUDA calls is a hand-off,
  // not a lock: the thread was idle until the waker, busy feeding the GPU meanwhile, gave it
  // work; so is one during which the waker was mostly preempted (waker_starved). Returns
  // whether any: ns is the time of the top waker, waker its tid.
  bool woken_by_sibling(uint32_t tid, uint32_t pid, int64_t a, int64_t b, int64_t& ns, uint32_t& waker, bool between,
                        const std::vector<WorkerWait>& relayed = {});

 private:
  const ThreadTimelines& tl_;
  const std::vector<Ev>& events_;
  std::unordered_map<uint32_t, std::vector<int64_t>> calls_by_tid_;  // tid -> start of each traced call
  bool calls_indexed_ = false;

  bool waker_starved(uint32_t tid, int64_t a, int64_t b) const;
  bool waker_called(uint32_t tid, int64_t a, int64_t b);
};

}  // namespace causeway
