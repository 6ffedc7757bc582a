// Session's loop: drain the rings until stopped, and the periodic work between rounds (rescans,
// the clock offset, the once-a-second counters, page_alloc summaries and live table).
#include "collector/session_internal.h"

#include <algorithm>
#include <climits>
#include <iostream>

#include "collector/clock.h"
#include "metrics/registry.h"

namespace causeway::collector {

void Session::loop(const std::function<bool()>& stop) {
  const int64_t end = o_.duration_ns > 0 ? started_mono_ + o_.duration_ns : INT64_MAX;
  int wait_ms = kDrainWaitBusyMs;
  while (!stop() && !writer_cannot_go_on()) {
    const int64_t now = monotonic_ns();
    if (now >= end) break;
    // The producers wake this wait only when a ring is a quarter full or a record is urgent,
    // so it mostly times out, after a longer time the fewer records come (collector/ring_wait.h).
    // Without room in the writer's queue there is nothing to wait for: the drains below
    // leave the records in the ring.
    // A listen seen is looked at 20 ms later (on_listen): the wait ends then, not after the
    // drain's longer sleep, so a new server's hook goes live before its first requests.
    int64_t wait_now = std::min<int64_t>(wait_ms, (end - now) / 1'000'000 + 1);
    for (const auto& pending : pending_listens_)
      wait_now = std::min<int64_t>(wait_now, std::max<int64_t>(1, (pending.first - now) / 1'000'000 + 1));
    if (claim_budget(std::chrono::milliseconds(kRoomWaitMs))) drain_wait_->wait(static_cast<int>(wait_now));
    const uint64_t taken_before = records_taken_;
    const bool calls_emptied = drain(calls_rb_.get(), 8, OnFullQueue::leave_in_ring);
    const int64_t host_from = monotonic_ns();
    const bool host_emptied = drain(host_rb_.get(), 8, OnFullQueue::leave_in_ring);
    if (host_emptied) mark_host_context(host_from);
    wait_ms = next_drain_wait_ms(records_taken_ - taken_before, calls_emptied && host_emptied, wait_ms);
    take_sock_records();
    store_requests();
    periodic(monotonic_ns());
  }
}

void Session::periodic(int64_t now) {
  if (!pending_rescans_.empty()) {
    std::vector<uint32_t> due;
    std::erase_if(pending_rescans_, [&](const auto& p) {
      if (p.first > now) return false;
      due.push_back(p.second);
      return true;
    });
    if (!due.empty()) rescan(due);
  }
  take_new_mappings();
  if (now >= next_rescan_) {
    rescan({});
    find_servers_now();
    next_rescan_ = now + slow_rescan_interval();
  }
  check_new_listeners(now);
  if (now >= next_offset_) {
    offset_ = measure_mono_to_real_offset();
    next_offset_ = now + 10'000'000'000;
  }
  if (now >= next_second_) {
    next_second_ = now + 1'000'000'000;
    emit_page_allocs(now);
    forget_gone_servers();
    read_call_agg();
    store_engine_samples();
    for (const auto& u : stack_policy_.updates()) bpf_.set_stack_threshold(u.pid, u.op, u.threshold_ns);
    update_counters();
    // An exec, fork or listen the host ring had no room for: the slow rescan comes sooner
    // (at most every 5 s while the ring keeps overflowing).
    if (const uint64_t d = sum_.counters[drop_counter_name(CW_DROP_RING_HOST)]; d != host_drops_seen_) {
      host_drops_seen_ = d;
      next_rescan_ = std::min(next_rescan_, now + 5'000'000'000);
    }
    if (metrics_) publish_metrics();
    if (o_.live_table) {
      std::cerr << "\x1b[H\x1b[2J"
                << stats_.render(now - started_mono_, sum_.dropped_ring, writer_.counters().dropped_writer, known_.size())
                << std::flush;
    }
  }
}

}  // namespace causeway::collector
