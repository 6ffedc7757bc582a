// run_trace: the one live trace's coordinator. Opens the writer (its lock first), loads BPF,
// begins the session row, starts the metrics endpoint and the live diagnosis, then hands the
// trace to Session (collector/session_internal.h: one file per phase) and records what the
// writer could not store.
#include "collector/session.h"

#include <malloc.h>
#include <sqlite3.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>

#include "bpf/events.h"
#include "collector/bpf_loader.h"
#include "collector/chain_watcher.h"
#include "collector/clock.h"
#include "collector/detach_lock.h"
#include "collector/request_metrics_feed.h"
#include "collector/session_internal.h"
#include "collector/system_identity.h"
#include "metrics/registry.h"
#include "metrics/server.h"
#include "tracedb/op_catalog.h"
#include "tracedb/store_writer.h"

namespace causeway::collector {

const char* drop_counter_name(uint32_t reason) {
  switch (reason) {
    case CW_DROP_RING_CALL: return "dropped_ring_calls";
    case CW_DROP_RING_HOST: return "dropped_ring_host";
    case CW_DROP_DEPTH: return "dropped_nesting";
    case CW_DROP_UNPAIRED: return "unpaired_returns";
    case CW_DROP_SLOT: return "dropped_slot_busy";
    case CW_DROP_STACK: return "stack_failures";
    case CW_DROP_BLOCK_MAP: return "dropped_block_map";
    case CW_DROP_PAGE_MAP: return "dropped_page_map";
    case CW_DROP_NCCL_MAP: return "dropped_nccl_map";
    case CW_DROP_TRACED_MAP: return "dropped_traced_map";
    case CW_DROP_RING_SOCK: return "dropped_ring_sock";
    case CW_DROP_SOCK_CONN_MAP: return "dropped_sock_map";
    case CW_DROP_AGG_MAP: return "agg_map_full_recorded";
    case CW_COUNT_OWN_SCRAPE: return "http_own_scrapes_excluded";
  }
  return "dropped_other";
}

namespace {

// The writer (and its lock) before BPF: a second trace of the same DB is refused before it
// loads or attaches anything.
Result<std::unique_ptr<StoreWriter>> open_trace_writer(const TraceOptions& o) {
  // The writer is the stage that falls behind first on a busy host; SQLite's allocation
  // statistics take a global mutex on every malloc and nothing in `trace` reads them (no
  // heap limit here, unlike sqlguard's connections). Only possible before SQLite's first use.
  (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  // The big buffers (writer queue chunks, the correlator's event window) come and go with
  // bursts. glibc raises its mmap threshold to the largest block freed, after which such
  // blocks come from the heap and their pages stay resident once freed; a fixed threshold
  // keeps them mmap()ed, so RSS follows what is in use (−3 to −4 MB at 500k calls/s).
  (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  WriterOptions wo;
  wo.max_db_bytes = o.max_db_bytes;
  // Live data: readers (explain, MCP) see each 100 ms of it committed.
  wo.flush_interval_ms = 100;
  wo.holder = "causeway trace";
  if (o.writer_queue) wo.queue_capacity = o.writer_queue;
  return StoreWriter::open(o.db, wo);
}

Result<std::unique_ptr<BpfObject>> load_trace_bpf(const TraceOptions& o) {
  set_libbpf_quiet(true);
  LoaderOptions lo;
  lo.stacks = o.stacks;
  lo.record_all = o.record_all;
  lo.filter_pids = !o.pids.empty();
  lo.ring_calls_bytes = o.ring_calls_bytes;
  lo.ring_host_bytes = o.ring_host_bytes;
  lo.detach_after_return = o.detach_after_return;
  // A previous trace's probes may still be detaching: attaching now could leave ours dead.
  constexpr auto kDetachWait = std::chrono::seconds(20);
  if (auto waited = wait_for_detaches(kDetachWait); waited >= std::chrono::milliseconds(500))
    std::cerr << "causeway trace: waited " << waited.count() << " ms for a previous trace's probes to detach" << std::endl;
  return BpfObject::load(lo);
}

// --metrics: the registry named with every op and the host the DB's session records.
struct TraceMetrics {
  std::unique_ptr<MetricsRegistry> registry;
  std::unique_ptr<MetricsServer> server;
};

Result<TraceMetrics> start_trace_metrics(const TraceOptions& o, const SessionInfo& info) {
  TraceMetrics m;
  if (o.metrics_addr.empty()) return m;
  m.registry = std::make_unique<MetricsRegistry>();
  for (const OpInfo& op : op_catalog()) m.registry->name_op(op.id, std::string(source_name(op.source)), std::string(op.name));
  m.registry->set_host(info.host, info.boot_id);  // the same identity the DB's session records
  auto srv = MetricsServer::start(o.metrics_addr, *m.registry);
  if (!srv) return srv.error();
  m.server = std::move(*srv);
  return m;
}

// The live diagnosis (docs/DIAGNOSIS.md): chains every 3 s, their counts and the requests'
// time lost published to the metrics registry when there is one.
struct TraceDiagnosis {
  std::unique_ptr<RequestMetricsFeed> time_lost_feed;  // outlives the watcher that calls it
  std::unique_ptr<ChainWatcher> watcher;
};

void start_trace_diagnosis(TraceDiagnosis& d, const TraceOptions& o, StoreWriter& writer, int64_t sid,
                           const SessionInfo& info, MetricsRegistry* reg) {
  if (!o.diagnose) return;
  if (reg) d.time_lost_feed = std::make_unique<RequestMetricsFeed>(*reg);
  d.watcher = std::make_unique<ChainWatcher>(o.db, writer, sid, info.started_ns, 3'000'000'000,
                                             [reg](const std::map<std::string, uint64_t>& by_cause) {
                                               if (reg)
                                                 for (const auto& [cause, n] : by_cause) reg->set_chains(cause, n);
                                             },
                                             [feed = d.time_lost_feed.get()](sqlite3* ro, int64_t session_id) {
                                               if (feed) feed->publish_time_lost(ro, session_id);
                                             });
  d.watcher->start();
}

// What the writer could not store, from its counters and health once it is closed.
void record_trace_loss(TraceSummary& sum, StoreWriter& writer, const Result<void>& closed) {
  const WriterCounters wc = writer.counters();
  const WriterHealth wh = writer.health();
  sum.dropped_writer = wc.dropped_writer;
  sum.loss.failed = wh.ever_failed || !closed;
  sum.loss.fault = write_fault_name(wh.last_fault);
  sum.loss.error = wh.error;
  sum.loss.events = wc.dropped_write_error;
  for (const auto& [op, n] : wc.dropped_by_op) {
    const OpInfo* info = find_op(op);
    sum.loss.by_op[info ? std::string(info->name) : "op" + std::to_string(op)] = n;
  }
  if (!closed) sum.loss.record_error = closed.error().message;
}

}  // namespace

Result<TraceSummary> run_trace(const TraceOptions& o, const std::function<bool()>& stop) {
  auto writer = open_trace_writer(o);
  if (!writer) return writer.error();
  auto bpf = load_trace_bpf(o);
  if (!bpf) return bpf.error();

  SessionInfo info;
  info.source_kind = "live";
  info.label = o.label;
  fill_system_identity(info);
  info.started_ns = realtime_ns();
  auto sid = (*writer)->begin_session(info);
  if (!sid) return sid.error();

  auto metrics = start_trace_metrics(o, info);
  if (!metrics) {
    (void)(*writer)->close(realtime_ns());
    return metrics.error();
  }
  MetricsRegistry* registry = metrics->registry.get();
  Session s(o, **writer, **bpf, registry);
  if (auto r = s.start(); !r) {
    (void)(*writer)->close(realtime_ns());
    return r.error();
  }
  TraceDiagnosis diagnosis;
  start_trace_diagnosis(diagnosis, o, **writer, *sid, info, registry);
  s.loop(stop);
  TraceSummary sum = s.finish();
  sum.session_id = *sid;
  (*writer)->flush();
  if (diagnosis.watcher) {
    // Everything is committed now: the last analysis sees the whole session.
    auto n = diagnosis.watcher->finish();
    if (n) sum.chains = *n;
    else sum.warnings.push_back("diagnosis at the end of the trace failed: " + n.error().message);
    (*writer)->flush();
  }
  auto closed = (*writer)->close(realtime_ns());
  record_trace_loss(sum, **writer, closed);
  if (registry) {
    for (const auto& [name, value] : sum.counters)
      if (name.rfind("dropped", 0) == 0) registry->set_drops(name, value);
    registry->set_drops("dropped_writer", sum.dropped_writer);
    sum.metrics_url = metrics->server->url();
  }
  return sum;
}

}  // namespace causeway::collector
