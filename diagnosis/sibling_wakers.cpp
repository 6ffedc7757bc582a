#include "diagnosis/sibling_wakers.h"

#include <algorithm>
#include <map>

#include "common/argmax.h"
#include "diagnosis/chunk_context.h"
#include "tracedb/op_catalog.h"

namespace causeway {

bool SiblingWakers::woken_by_sibling(uint32_t tid, uint32_t pid, int64_t a, int64_t b, int64_t& ns, uint32_t& waker,
                                     bool between, const std::vector<WorkerWait>& relayed) {
  std::map<uint32_t, int64_t> by;
  for (const OffCpuInterval& iv : tl_.overlapping(tid, a, b)) {
    if (iv.state != OffCpuState::sleeping || !iv.woken) continue;
    if (iv.waker_pid != pid || iv.waker_tid == tid || iv.waker_tid == 0) continue;
    const int64_t from = std::max(iv.from_ns, a);
    if (between && (waker_called(iv.waker_tid, iv.from_ns, iv.wake_ns) || waker_starved(iv.waker_tid, iv.from_ns, iv.wake_ns)))
      continue;
    if (std::any_of(relayed.begin(), relayed.end(),
                    [&](const WorkerWait& r) { return r.relay_tid == iv.waker_tid && r.from_ns == from; }))
      continue;
    by[iv.waker_tid] += std::min(iv.runnable_from(), b) - from;
  }
  const auto* top = argmax_by(by, [](const auto& e) { return e.second; }, [](const auto& e) { return e.second > 0; });
  ns = top ? top->second : 0;
  if (top) waker = top->first;
  return top != nullptr;
}

// Whether thread tid spent most of [a, b] runnable but off-CPU: a waker that was itself
// preempted (PyTorch's autograd thread idle while the main thread, starved by a CPU hog,
// could not run the forward pass that hands it work: seen on an H200, docs/GPU.md) delayed
// the hand-off through its own CPU contention, which cpu_contention claims; no lock is shown.
bool SiblingWakers::waker_starved(uint32_t tid, int64_t a, int64_t b) const {
  return b > a && 2 * tl_.off_cpu_in(tid, a, b).runnable_ns >= b - a;
}

// Whether thread tid started a traced call inside [a, b]. The per-thread index is built on
// first use: only a sleep between calls that a sibling ended asks (most chunks never do).
bool SiblingWakers::waker_called(uint32_t tid, int64_t a, int64_t b) {
  if (!calls_indexed_) {
    for (const Ev& e : events_)
      if (is_traced_call_op(e.op)) calls_by_tid_[e.tid].push_back(e.ts);
    calls_indexed_ = true;
  }
  auto it = calls_by_tid_.find(tid);
  return it != calls_by_tid_.end() && count_in(it->second, a, b) > 0;
}

}  // namespace causeway
