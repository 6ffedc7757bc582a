// Session's drain: a consume round takes from a ring what the writer's queue has room for,
// and the host-context watermark follows the host ring (docs/DIAGNOSIS.md "The watermark rule").
#include "collector/session_internal.h"

#include <algorithm>
#include <cerrno>

#include "collector/sock_drain.h"

namespace causeway::collector {

// Backpressure: a round takes from the ring only what the writer's queue has room for. While
// the writer catches up, records wait in the kernel's ring (memory already paid for) instead
// of being refused by a full queue; only a ring that fills up loses records, and BPF counts
// each one. Returns false when there is no room after `wait`.
bool Session::claim_budget(std::chrono::milliseconds wait) {
  auto usable = [this] {
    size_t room = writer_.room();
    const size_t reserve = std::min(kQueueReserve, writer_.capacity() / 8);
    return room > reserve ? room - reserve : 0;
  };
  size_t room = usable();
  if (room == 0 && writer_.wait_for_room(kQueueReserve + kBudgetPerConsume, wait)) room = usable();
  budget_ = std::min<uint64_t>(kBudgetPerConsume, room);
  return budget_ > 0;
}

bool Session::drain(ring_buffer* rb, int max_rounds, OnFullQueue on_full) {
  for (int i = 0; i < max_rounds; ++i) {
    if (!claim_budget(std::chrono::milliseconds(on_full == OnFullQueue::leave_in_ring ? kRoomWaitMs : 1000))) {
      if (on_full == OnFullQueue::leave_in_ring) return false;
      budget_ = kBudgetPerConsume;  // the writer is stuck: take the records, its refusals are counted
    }
    round_ = 0;
    int r = ring_buffer__consume(rb);
    flush_calls();
    if (r != -EAGAIN) return r >= 0;
  }
  return false;
}

// The host ring was empty at some point after drained_from: every sched, wake-up, block-I/O
// and network record stamped before it (less the slack) is in the writer's queue now, or
// was lost in the ring and counted (dropped_ring_host). Page-fault context comes as the
// once-a-second page_alloc summaries, so the mark waits for the one covering its time too.
// Pushed through the writer's queue behind those records: a reader that sees the mark sees
// them (tracedb/records.h HostContextMark).
void Session::mark_host_context(int64_t drained_from_mono) {
  const int64_t mark = std::min(drained_from_mono - kRingSlackNs, page_allocs_to_mono_);
  if (mark < host_mark_mono_ + kMarkStepNs) return;
  host_mark_mono_ = mark;
  writer_.push_meta(HostContextMark{mark + offset_});
}

// The round's budget was claimed from the writer's room, so nothing here is refused unless
// the writer is stuck at stop (drain_anyway), and then each refusal is counted.
void Session::flush_calls() {
  if (call_batch_.empty()) return;
  writer_.push_calls(call_batch_);
  call_batch_.clear();
}

void Session::take_sock_records() {
  if (!sock_drain_) return;
  sock_drain_->take().for_each([this](const char* data, size_t size) { on_sock(data, size); });
}

}  // namespace causeway::collector
