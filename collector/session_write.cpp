// Session's writes besides the drained records: requests, engine samples, the counters of
// collector_stats, and the Prometheus endpoint's view of them.
#include "collector/session_internal.h"

#include <sys/resource.h>
#include <unistd.h>

#include "collector/request_metrics_feed.h"
#include "collector/sock_drain.h"
#include "collector/sock_hook.h"
#include "diagnosis/tracer_pid.h"
#include "metrics/registry.h"
#include "requests/to_record.h"
#include "tracedb/op_catalog.h"

namespace causeway::collector {

void Session::store_requests() {
  // causeway's own scrapes never get here: the kernel side leaves their connections untraced
  // (bpf/sock.bpf.h own_conns; counted as http_own_scrapes_excluded).
  for (const requests::Request& q : tracker_.take()) {
    // The listener it came in on speaks HTTP: scraped from now on (find_servers_now).
    if (q.local_port && http_listeners_.insert({q.pid, q.local_port}).second)
      if (auto it = unproven_listeners_.find({q.pid, q.local_port}); it != unproven_listeners_.end()) {
        scrape_listener(q.pid, it->second);
        unproven_listeners_.erase(it);
      }
    RequestRecord rec = requests::to_record(q);
    if (request_metrics_) request_metrics_->observe(rec);
    writer_.push_meta(std::move(rec));
    ++sum_.requests;
  }
  for (const requests::SendWait& w : send_waits_.take()) writer_.push(requests::send_wait_record(w));
}

void Session::store_engine_samples() {
  if (!scraper_) return;
  for (EngineSampleRecord& r : scraper_->take()) writer_.push_meta(std::move(r));
}

void Session::update_counters() {
  auto drops = bpf_.drops();
  uint64_t ring = 0;
  for (uint32_t i = 0; i < drops.size(); ++i) {
    writer_.set_counter(drop_counter_name(i), static_cast<int64_t>(drops[i]));
    sum_.counters[drop_counter_name(i)] = drops[i];
  }
  ring = drops[CW_DROP_RING_CALL] + drops[CW_DROP_RING_HOST];
  sum_.dropped_ring = ring;
  writer_.set_counter("dropped_ring", static_cast<int64_t>(ring));
  writer_.set_counter(std::string(kTracerPidCounter), static_cast<int64_t>(::getpid()));
  writer_.set_counter("calls_received", static_cast<int64_t>(sum_.calls));
  writer_.set_counter("stack_read_failures", static_cast<int64_t>(stack_read_failures_));
  writer_.set_counter("python_unsupported", static_cast<int64_t>(python_unsupported_));
  writer_.set_counter("switches_received", static_cast<int64_t>(sum_.switches));
  writer_.set_counter("wakeups_received", static_cast<int64_t>(sum_.wakeups));
  writer_.set_counter("host_events_received", static_cast<int64_t>(sum_.host_events));
  writer_.set_counter("uprobe_links", static_cast<int64_t>(bpf_.uprobe_links()));
  const bool raw = bpf_.sock_tracepoint_hook() == SockHook::raw;
  writer_.set_counter("http_syscall_tracepoint_links", static_cast<int64_t>(raw ? 0 : bpf_.sock_links()));
  writer_.set_counter("http_raw_syscall_links", static_cast<int64_t>(raw ? bpf_.sock_links() : 0));
  writer_.set_counter("http_libc_servers", static_cast<int64_t>(bpf_.sock_libc_servers()));
  writer_.set_counter("http_libc_links", static_cast<int64_t>(bpf_.sock_libc_links()));
  writer_.set_counter("http_tls_servers", static_cast<int64_t>(bpf_.ssl_servers()));
  writer_.set_counter("http_tls_links", static_cast<int64_t>(bpf_.ssl_links()));
  // Other causeway tracers' scrapes of a server this one traces (bpf/sock.bpf.h tracer_conns).
  writer_.set_counter("http_tracer_scrapes_excluded", static_cast<int64_t>(bpf_.tracer_scrapes()));
  const std::vector<uint64_t> tls_stats = bpf_.ssl_stats();  // what the TLS hook recorded and lost
  for (uint32_t i = 0; i < tls_stats.size(); ++i) writer_.set_counter(ssl_stat_name(i), static_cast<int64_t>(tls_stats[i]));
  if (hook_told_)
    if (auto c = bpf_.sock_choice(); c && c->trap_ns)
      writer_.set_counter("http_uprobe_trap_ns", static_cast<int64_t>(*c->trap_ns));
  if (sock_drain_) {
    writer_.set_counter("dropped_sock_queue", static_cast<int64_t>(sock_drain_->dropped()));
    sum_.counters["dropped_sock_queue"] = sock_drain_->dropped();
    writer_.set_counter("sock_records_received", static_cast<int64_t>(sock_drain_->records()));
  }
  writer_.set_counter("cgroups_resolved", static_cast<int64_t>(cgroups_.resolved()));
  writer_.set_counter("cgroups_unresolved", static_cast<int64_t>(cgroups_.unresolved()));
  int64_t slow = 0;
  for (const auto& lib : attacher_.libs()) slow += static_cast<int64_t>(lib.slow.size());
  writer_.set_counter("slow_probes", slow);
  const requests::Counters& rc = tracker_.counters();
  for (auto [name, v] : {std::pair{"http_connections", rc.connections}, {"http_requests", rc.requests},
                         {"http_tls_connections", rc.tls}, {"http2_connections", rc.http2},
                         {"http_non_http_connections", rc.non_http}, {"http_headers_oversized", rc.headers_oversized},
                         {"http_headers_truncated", rc.headers_truncated}, {"http_desync", rc.desync},
                         {"http_disconnected", rc.disconnected}, {"http_unmatched_responses", rc.unmatched_responses},
                         {"http_sse_unseen", rc.sse_unseen}}) {
    writer_.set_counter(name, static_cast<int64_t>(v));
    sum_.counters[name] = v;
  }
  if (scraper_) {
    const ScraperCounters sc = scraper_->counters();
    for (auto [name, v] : {std::pair{"engine_scrapes", sc.scrapes}, {"engine_scrape_failures", sc.failures},
                           {"engine_metrics_bad_lines", sc.bad_lines}, {"engine_scrape_connections", sc.connections},
                           {"engine_scrape_unaccepted", own_unaccepted_.load(std::memory_order_relaxed)}}) {
      writer_.set_counter(name, static_cast<int64_t>(v));
      sum_.counters[name] = v;
    }
  }
  sum_.counters["dropped_ring"] = ring;
  // What left the kernel as a record vs what was only counted there, and what tracing cost
  // this process (docs/COLLECTOR.md "Aggregated calls").
  const uint64_t counted = call_agg_ ? call_agg_->counted() : 0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto tv_ns = [](const timeval& tv) { return int64_t{tv.tv_sec} * 1'000'000'000 + int64_t{tv.tv_usec} * 1000; };
  // How discovery found what it found (docs/COLLECTOR.md "Discovery and lifecycle").
  for (auto [name, v] : {std::pair{"discovery_by_events", uint64_t{by_events()}},
                         {"discovery_full_rescans", discovery_.full_rescans},
                         {"discovery_pid_rescans", discovery_.pid_rescans},
                         {"discovery_mappings_seen", mmap_watch_ ? mmap_watch_->seen() : 0},
                         {"discovery_mappings_lost", mmap_watch_ ? mmap_watch_->lost() : 0},
                         {"discovery_listen_events", discovery_.listen_events},
                         {"discovery_listener_checks", discovery_.listener_checks}}) {
    writer_.set_counter(name, static_cast<int64_t>(v));
    sum_.counters[name] = v;
  }
  for (auto [name, v] : {std::pair{"calls_recorded", static_cast<int64_t>(calls_recorded_)},
                         {"calls_aggregated", static_cast<int64_t>(counted)},
                         {"tracer_cpu_user_ns", tv_ns(ru.ru_utime)},
                         {"tracer_cpu_system_ns", tv_ns(ru.ru_stime)},
                         {"tracer_cpu_ns", tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime)}}) {
    writer_.set_counter(name, v);
    sum_.counters[name] = static_cast<uint64_t>(v);
  }
}

void Session::publish_metrics() {
  for (const auto& [name, value] : sum_.counters)
    if (name.rfind("dropped", 0) == 0) metrics_->set_drops(name, value);
  const WriterCounters c = writer_.counters();
  metrics_->set_drops("dropped_writer", c.dropped_writer);
  for (const auto& [op, n] : c.dropped_by_op) {
    const OpInfo* info = find_op(op);
    metrics_->set_writer_lost(info ? std::string(source_name(info->source)) : "unknown",
                              info ? std::string(info->name) : "op" + std::to_string(op), n);
  }
  // As said on stderr: set at once, cleared once writes have succeeded for 2 s.
  const WriteFault f = reported_fault_;
  for (WriteFault k : {WriteFault::disk_full, WriteFault::io_error, WriteFault::db_deleted, WriteFault::db_replaced,
                       WriteFault::write_failed})
    metrics_->set_writer_failing(write_fault_name(k), f == k);
}

}  // namespace causeway::collector
