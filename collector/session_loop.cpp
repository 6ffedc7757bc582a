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
  while (!stop() && !writer_cannot_go_on()) {
    const int64_t now = monotonic_ns();
    if (now >= end) break;
    // Producers submit without wake-ups, so the poll mostly times out: consume either way.
    if (claim_budget(std::chrono::milliseconds(kPollMs))) {
      round_ = 0;
      (void)ring_buffer__poll(calls_rb_.get(), kPollMs);
      flush_calls();
    }
    drain(calls_rb_.get(), 8, OnFullQueue::leave_in_ring);
    const int64_t host_from = monotonic_ns();
    if (drain(host_rb_.get(), 8, OnFullQueue::leave_in_ring)) mark_host_context(host_from);
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
