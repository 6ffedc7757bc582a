// The Session of one live trace (collector/session.h run_trace), private to the collector.
// Its members live by phase, each in a file of its own (docs/COLLECTOR.md "Session phases"):
//   start            session_start.cpp       clock, --pid tree, rings, tracepoints, --lib, first scan
//   discover, attach session_discover.cpp    libraries in the maps, processes, threads, CPython
//                    session_servers.cpp     HTTP listeners, their process trees, /metrics scrapes
//   drain            session_drain.cpp       consume rounds under the writer's room, host watermark
//   decode           session_decode.cpp      ring records → writer records, fast-call counts
//   symbolize        session_symbolize.cpp   a call's stack located while the process runs
//   write            session_write.cpp       requests, engine samples, counters, Prometheus
//                    session_write_health.cpp a failing writer said and, when hopeless, the stop
//   loop             session_loop.cpp        rounds until stopped, the periodic work
//   stop, finish     session_finish.cpp      producers stopped, rings emptied, last rows pushed
#pragma once

#include <bpf/libbpf.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bpf/events.h"
#include "collector/attacher.h"
#include "collector/bpf_loader.h"
#include "collector/call_agg.h"
#include "collector/cgroup_paths.h"
#include "collector/cgroup_resolver.h"
#include "collector/early_maps.h"
#include "collector/endpoint.h"
#include "collector/engine_scraper.h"
#include "collector/live_stats.h"
#include "collector/mmap_watch.h"
#include "collector/python_runtime.h"
#include "collector/request_metrics_feed.h"
#include "collector/ring_wait.h"
#include "collector/servers.h"
#include "collector/session.h"
#include "collector/sock_drain.h"
#include "collector/stack_policy.h"
#include "collector/stack_resolver.h"
#include "collector/symbolizer.h"
#include "metrics/registry.h"
#include "requests/send_waits.h"
#include "requests/tracker.h"
#include "tracedb/store_writer.h"

namespace causeway::collector {

struct RingBufferCloser {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};
using RingPtr = std::unique_ptr<ring_buffer, RingBufferCloser>;

class Session {
 public:
  Session(const TraceOptions& o, StoreWriter& w, BpfObject& b, MetricsRegistry* m)
      : o_(o), writer_(w), metrics_(m), bpf_(b), attacher_(b) {
    if (metrics_) request_metrics_ = std::make_unique<RequestMetricsFeed>(*metrics_);
  }

  Result<void> start();
  void loop(const std::function<bool()>& stop);
  TraceSummary finish();

 private:
  // libbpf 1.1's ring_buffer__consume keeps going while producers outpace it; the callback
  // bails out after this many records (or fewer: what the writer's queue has room for) so the
  // loop can do its periodic work (and the other ring).
  static constexpr uint64_t kBudgetPerConsume = 16384;
  // Rows of the writer's queue the drain leaves free for what is pushed outside it (one
  // page_alloc summary per allocating process each second), so those are never refused. At
  // most an eighth of the queue, so a small queue (--writer-queue) still leaves the drain room.
  static constexpr size_t kQueueReserve = 1024;
  // How long a round waits for the writer's room.
  static constexpr int kRoomWaitMs = 10;
  // Socket records copied out of the kernel's ring and not yet decoded, at most: ~300k records
  // of a small request's size, seconds of a burst of thousands of connections (collector/sock_drain.h).
  static constexpr size_t kSockQueueBytes = 64u << 20;
  // A BPF program takes its timestamp a few µs before it submits the record; a record stamped
  // before a drain began may land just after the drain saw the ring empty. The host-context
  // watermark stays this far behind the drain (docs/DIAGNOSIS.md "The watermark rule").
  static constexpr int64_t kRingSlackNs = 5'000'000;
  // The watermark is stored when it moved at least this much: a few rows a writer batch.
  static constexpr int64_t kMarkStepNs = 50'000'000;

  // " in 3.1 ms, multi-uprobe links …": when the probes of a library went live, and how.
  static std::string attach_time_text(const AttachedLib& lib, const BpfObject& bpf);
  // "30 s" rather than "30.00s" for the whole seconds a person sets.
  static std::string stall_text(int64_t ns);
  static int on_sample(void* ctx, void* data, size_t size) {
    auto* s = static_cast<Session*>(ctx);
    s->handle(data, size);
    ++s->records_taken_;
    if (++s->round_ >= s->budget_) {
      s->round_ = 0;
      return -EAGAIN;
    }
    return 0;
  }
  void handle(const void* data, size_t size);
  void on_call(const cw_call_event& e);
  void on_proc(const cw_proc_event& e);
  void on_sock(const void* data, size_t size);
  // Every listener of the traced job, from /proc (at start and at the slow rescan).
  void find_servers_now();
  // Listeners of the processes that joined the trace since the last call, and of those the
  // kernel saw begin listening (docs/COLLECTOR.md "Discovery and lifecycle").
  void check_new_listeners(int64_t now_mono);
  void on_listen(const cw_listen_event& e);
  void take_servers(const std::vector<Server>& found);
  void forget_gone_servers();
  void trace_serving_tree(uint32_t server);
  void take_sock_records();
  void store_requests();
  void store_engine_samples();
  enum class OnFullQueue { leave_in_ring, drain_anyway };
  // True when the ring was consumed until empty (nothing left for lack of room or rounds).
  bool drain(ring_buffer* rb, int max_rounds, OnFullQueue on_full);
  void mark_host_context(int64_t drained_from_mono);
  bool claim_budget(std::chrono::milliseconds wait);
  void periodic(int64_t now_mono);
  void emit_page_allocs(int64_t now_mono);
  void read_call_agg();
  void push_run(const cw_run& r, int64_t cgroup_id, bool batch);
  // Libraries in the maps of `only`, or of every process (the --pid tree with --pid) when empty.
  void rescan(const std::vector<uint32_t>& only);
  // The processes that mapped a CUDA library since the last call (MmapWatch), rescanned.
  void take_new_mappings();
  int64_t slow_rescan_interval() const;
  bool by_events() const { return mmap_watch_ && bpf_.tells_process_events(); }
  // ppid: the parent when the event says it (a fork); else /proc says it, if still there.
  void ensure_process(uint32_t pid, int64_t ts, std::optional<uint32_t> ppid = std::nullopt);
  void flush_calls();
  // cgroup_id 0: not known here (keeps the one stored).
  void name_thread(uint32_t tid, uint32_t pid, const std::string& comm, uint64_t cgroup_id);
  uint64_t stack_for(uint32_t pid, int32_t stack_id, uint64_t py_key);
  void detect_python_in(uint32_t pid);
  void forget_python(uint32_t pid);
  void update_counters();
  void publish_metrics();
  bool writer_cannot_go_on();
  bool pid_allowed(uint32_t pid) const;
  void say(const std::string& msg) {
    if (o_.verbose) std::cerr << "causeway trace: " << msg << std::endl;
  }

  const TraceOptions& o_;
  StoreWriter& writer_;
  MetricsRegistry* metrics_;  // null without --metrics
  std::unique_ptr<RequestMetricsFeed> request_metrics_;  // with metrics_: each stored request
  BpfObject& bpf_;
  Attacher attacher_;
  Symbolizer symbolizer_;
  StackResolver resolver_{symbolizer_, writer_};  // after symbolizer_ and writer_: it uses both
  CgroupResolver cgroups_{cgroup2_mount(), writer_};
  std::unordered_set<uint64_t> submitted_stacks_;
  StackPolicy stack_policy_;
  std::unique_ptr<CallAggReader> call_agg_;  // the kernel's counts of fast calls
  uint64_t calls_recorded_ = 0;               // call records received (not runs)
  LiveStats stats_;
  RingPtr calls_rb_, host_rb_;
  std::optional<RingWait> drain_wait_;  // the loop sleeps on both rings (collector/ring_wait.h)
  uint64_t records_taken_ = 0;          // from both rings, ever: how busy the last round was
  std::unique_ptr<SockDrain> sock_drain_;  // the socket ring, emptied by a thread of its own
  // The kernel side reports the client's hangup at each close (bpf/sock.bpf.h CW_SOCK_HANGUP).
  requests::Tracker tracker_{requests::TrackerOptions{.tenant_header = o_.tenant_header, .hangups_reported = true}};
  requests::SendWaits send_waits_;  // the served connections' full send buffers (network)
  std::set<uint32_t> servers_;  // pids whose accepted connections are traced (or that could not be)
  bool raw_warned_ = false;
  bool hook_told_ = false;  // why the request hook is what it is: said with the first server
  std::unique_ptr<EngineScraper> scraper_;  // started with the first listener known to speak HTTP
  void scrape_listener(uint32_t pid, const Endpoint& at);
  using ListenerKey = std::pair<uint32_t, uint16_t>;  // (server pid, port)
  std::set<ListenerKey> http_listeners_;              // a user's request was parsed on it
  std::map<ListenerKey, Endpoint> unproven_listeners_;  // found, not yet seen speaking HTTP: not scraped
  // Scrape connections no traced server accepted while they were ours (the scraper's thread
  // counts): with http_own_scrapes_excluded they add up to engine_scrape_connections.
  std::atomic<uint64_t> own_unaccepted_{0};
  std::set<std::pair<uint64_t, uint16_t>> listen_ports_;  // (netns, port) told to the kernel side
  std::unique_ptr<EarlyMaps> early_maps_;  // after the rings: started with them
  int64_t offset_ = 0;
  int64_t started_mono_ = 0;
  uint64_t round_ = 0;
  std::vector<CallRecord> call_batch_;  // decoded this round, not yet handed to the writer
  uint64_t budget_ = kBudgetPerConsume;  // records this consume round may hand the writer
  uint64_t stack_read_failures_ = 0;
  int64_t page_allocs_to_mono_ = 0;  // page_alloc summaries are pushed up to here
  int64_t host_mark_mono_ = 0;       // the last host-context watermark pushed

  struct Known {
    int64_t first_ns = 0;
    int64_t last_ns = 0;
    uint64_t cgroup_id = 0;
  };
  std::unordered_map<uint32_t, Known> known_;
  std::set<uint32_t> allowed_;  // --pid and their descendants
  struct ThreadSeen {
    std::string comm;
    uint64_t cgroup_id = 0;
  };
  std::unordered_map<uint32_t, ThreadSeen> named_tids_;  // tid → what its threads row says
  std::map<std::tuple<uint32_t, int32_t, uint64_t>, uint64_t> stack_cache_;  // (pid, stack id, py key)
  std::unordered_map<uint32_t, PyLayout> py_layouts_;  // CPython processes whose frames are read
  PyCodeReader py_reader_;
  uint64_t python_unsupported_ = 0;
  std::vector<std::pair<int64_t, uint32_t>> pending_rescans_;  // (due mono ns, pid)
  // Discovery by events (docs/COLLECTOR.md "Discovery and lifecycle"): mappings from perf,
  // listens from the host ring; /proc is read for the processes they name, and all of it
  // only at the slow rescan. Without the mmap watch, the rescans of every second stay.
  std::unique_ptr<MmapWatch> mmap_watch_;
  ServingTree tree_;                                           // the traced job's processes and session ancestors
  std::vector<uint32_t> joined_;                               // traced since the last listener check
  std::vector<std::pair<int64_t, uint32_t>> pending_listens_;  // (due mono ns, pid) of listens to look at
  uint64_t host_drops_seen_ = 0;                               // rb_host drops: an exec, fork or listen may be lost
  struct DiscoveryCounts {
    uint64_t full_rescans = 0;  // every process's maps (the slow rescan, a lost event)
    uint64_t pid_rescans = 0;   // one process's maps, named by an event
    uint64_t listen_events = 0;
    uint64_t listener_checks = 0;  // processes whose sockets were read
  } discovery_;
  int64_t next_rescan_ = 0, next_second_ = 0, next_offset_ = 0;
  WriteFault reported_fault_ = WriteFault::none;
  int64_t clear_since_ns_ = 0;  // steady clock: writes succeed again since, not yet said
  std::set<std::pair<uint64_t, uint64_t>> attach_failed_;  // (dev, inode) of libraries said once not to attach
  TraceSummary sum_;
};
}  // namespace causeway::collector
