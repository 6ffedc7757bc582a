// Session's stop and finish: producers stopped, every ring drained, the uprobes detached, the
// last counts and process ends pushed; nothing accepted is lost.
#include "collector/session_internal.h"

#include <unistd.h>

#include "collector/clock.h"
#include "collector/sock_drain.h"

namespace causeway::collector {

TraceSummary Session::finish() {
  // Stop the producers, let calls in flight for a moment return, then drain everything
  // queued until both rings are empty. A call still inside the library after that is not
  // recorded (it never completed during the session).
  // The scraper first: a scrape in flight finishes while the kernel side still sees the
  // server accept it, so every scrape connection a traced server took is counted as excluded
  // (http_own_scrapes_excluded equals engine_scrape_connections for one server).
  if (scraper_) scraper_->stop();
  bpf_.stop_producers();
  // Only now: a server that accepted an unanswered scrape from its backlog after the scraper
  // stopped still saw it for ours (a /metrics request stored as a user's was the failure).
  if (scraper_) scraper_->forget_all_lingering();
  drain(calls_rb_.get(), 1 << 20, OnFullQueue::drain_anyway);
  ::usleep(20'000);
  drain(calls_rb_.get(), 1 << 20, OnFullQueue::drain_anyway);
  drain(host_rb_.get(), 1 << 20, OnFullQueue::drain_anyway);
  if (sock_drain_) sock_drain_->finish();
  take_sock_records();
  tracker_.finish();  // exchanges still open come out incomplete
  send_waits_.finish();
  store_requests();
  store_engine_samples();
  // Out of the traced processes' text before we exit: with session or multi-uprobe links one
  // close per link (milliseconds); the perf-event fallback hands its closes to a background
  // process.
  const bool background = bpf_.link_kind() == UprobeLinkKind::perf_event && o_.detach_after_return;
  const auto detach = bpf_.detach_uprobes();
  say(background ? "uprobes handed to a background process to detach (perf-event uprobes: one link per probe)"
                 : "uprobes detached in " + std::to_string(detach.count()) + " ms (" + link_kind_name(bpf_.link_kind()) +
                       ")");
  resolver_.finish();  // every stack's frames reach the writer before it flushes
  cgroups_.finish();   // and every cgroup's path
  emit_page_allocs(monotonic_ns());
  read_call_agg();  // producers stopped: the counts are final
  for (const cw_run& r : bpf_.open_runs()) {
    auto k = known_.find(r.pid);
    push_run(r, k == known_.end() ? 0 : static_cast<int64_t>(k->second.cgroup_id), false);
  }
  // Every ring is drained and its records pushed (or refused and counted): the host context
  // is complete up to now, past the end of every recorded call. The final diagnosis runs
  // after the writer has committed this (run_trace).
  writer_.push_meta(HostContextMark{monotonic_ns() + offset_});
  update_counters();
  for (const auto& [pid, k] : known_) {
    ProcessRecord p;
    p.pid = pid;
    p.last_ns = k.last_ns;
    writer_.push_meta(p);
  }
  sum_.elapsed_ns = monotonic_ns() - started_mono_;
  sum_.libs = attacher_.libs();
  sum_.processes = known_.size();
  return sum_;
}

}  // namespace causeway::collector
