#include "collector/session.h"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <iostream>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "bpf/events.h"
#include "common/sanitize.h"
#include "common/units.h"
#include "collector/bpf_loader.h"
#include "collector/cgroup_paths.h"
#include "collector/cgroup_resolver.h"
#include "collector/clock.h"
#include "collector/decode.h"
#include "collector/discovery.h"
#include "collector/early_maps.h"
#include "collector/elf_file.h"
#include "collector/engine_scraper.h"
#include "collector/chain_watcher.h"
#include "collector/detach_lock.h"
#include "collector/live_stats.h"
#include "collector/system_identity.h"
#include "common/user_output.h"
#include "metrics/registry.h"
#include "collector/request_metrics_feed.h"
#include "metrics/server.h"
#include "tracedb/op_catalog.h"
#include "collector/proc_info.h"
#include "collector/proc_maps.h"
#include "collector/stack_policy.h"
#include "collector/python_runtime.h"
#include "collector/servers.h"
#include "collector/sock_decode.h"
#include "collector/sock_drain.h"
#include "collector/stack_resolver.h"
#include "requests/send_waits.h"
#include "requests/to_record.h"
#include "requests/tracker.h"
#include "collector/symbolizer.h"
#include "collector/call_agg.h"
#include <sys/resource.h>
#include "tracedb/store_writer.h"
#include "diagnosis/tracer_pid.h"

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

// " in 3.1 ms, multi-uprobe links …": when the probes of a library went live, and how.
std::string attach_time_text(const AttachedLib& lib, const BpfObject& bpf) {
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f", static_cast<double>(lib.attach_us) / 1000.0);
  return std::string(" in ") + ms + " ms, " + link_kind_name(bpf.link_kind());
}

struct RingBufferCloser {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};
using RingPtr = std::unique_ptr<ring_buffer, RingBufferCloser>;

// libbpf 1.1's ring_buffer__consume keeps going while producers outpace it; the callback
// bails out after this many records (or fewer: what the writer's queue has room for) so the
// loop can do its periodic work (and the other ring).
constexpr uint64_t kBudgetPerConsume = 16384;
// Rows of the writer's queue the drain leaves free for what is pushed outside it (one
// page_alloc summary per allocating process each second), so those are never refused. At
// most an eighth of the queue, so a small queue (--writer-queue) still leaves the drain room.
constexpr size_t kQueueReserve = 1024;
constexpr int kPollMs = 10;
// Socket records copied out of the kernel's ring and not yet decoded, at most: ~300k records
// of a small request's size, seconds of a burst of thousands of connections (collector/sock_drain.h).
constexpr size_t kSockQueueBytes = 64u << 20;
// A BPF program takes its timestamp a few µs before it submits the record; a record stamped
// before a drain began may land just after the drain saw the ring empty. The host-context
// watermark stays this far behind the drain (docs/DIAGNOSIS.md "The watermark rule").
constexpr int64_t kRingSlackNs = 5'000'000;
// The watermark is stored when it moved at least this much: a few rows a writer batch.
constexpr int64_t kMarkStepNs = 50'000'000;

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
  static int on_sample(void* ctx, void* data, size_t size) {
    auto* s = static_cast<Session*>(ctx);
    s->handle(data, size);
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
  void find_servers_now();
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
  void rescan(const std::vector<uint32_t>& only);
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
  int64_t next_rescan_ = 0, next_second_ = 0, next_offset_ = 0;
  WriteFault reported_fault_ = WriteFault::none;
  int64_t clear_since_ns_ = 0;  // steady clock: writes succeed again since, not yet said
  std::set<std::pair<uint64_t, uint64_t>> attach_failed_;  // (dev, inode) of libraries said once not to attach
  TraceSummary sum_;
};

bool Session::pid_allowed(uint32_t pid) const { return o_.pids.empty() || allowed_.count(pid); }

Result<void> Session::start() {
  offset_ = measure_mono_to_real_offset();
  started_mono_ = monotonic_ns();
  call_agg_ = std::make_unique<CallAggReader>(bpf_.call_agg_fd());
  page_allocs_to_mono_ = started_mono_;
  host_mark_mono_ = started_mono_;
  for (uint32_t p : o_.pids) {
    allowed_.insert(p);
    bpf_.trace_pid(p);
  }
  // A --pid's processes started before the trace (a server's engine and workers): taken now,
  // since the kernel side follows only forks made while traced. A pid that exits meanwhile
  // is forgotten as any other.
  if (!o_.pids.empty()) {
    const std::set<uint32_t> roots(o_.pids.begin(), o_.pids.end());
    for (uint32_t p : descendants_of(roots, list_pids())) {
      allowed_.insert(p);
      bpf_.trace_pid(p);
    }
  }
  calls_rb_.reset(ring_buffer__new(bpf_.ring_calls_fd(), on_sample, this, nullptr));
  host_rb_.reset(ring_buffer__new(bpf_.ring_host_fd(), on_sample, this, nullptr));
  if (!calls_rb_ || !host_rb_) return make_error("bpf_ring", std::string("cannot map the ring buffers: ") + std::strerror(errno));
  if (o_.requests) {
    sock_drain_ = std::make_unique<SockDrain>(bpf_.ring_sock_fd(), kSockQueueBytes);
    if (!sock_drain_->error().empty()) return make_error("bpf_ring", sock_drain_->error());
  }
  if (o_.stacks) {
    early_maps_ = std::make_unique<EarlyMaps>(bpf_.ring_new_procs_fd());
    if (!early_maps_->error().empty())
      sum_.warnings.push_back(early_maps_->error());
    else if (!early_maps_->realtime())
      say("the early maps reader runs at normal priority (no CAP_SYS_NICE): stacks of processes that live a few ms "
          "may go unsymbolized on a busy host");
  }

  for (const std::string& tp : bpf_.attach_tracepoints()) sum_.warnings.push_back("tracepoint not attached: " + tp);
  for (const auto& w : sum_.warnings) say(w);

  for (const std::string& lib : o_.libs) {
    auto kind = lib_kind_of(base_name(lib));
    if (!kind)
      return make_error("usage", "--lib " + lib + ": cannot tell which library this is (expected a file named "
                                 "libcudart.so*, libcuda.so* or libnccl.so*)");
    auto r = attacher_.attach(lib, lib, *kind);
    if (!r) return r.error();
    if (*r) {
      say("attached " + std::to_string((*r)->probes) + " probes to " + lib + attach_time_text(**r, bpf_));
      for (const auto& slow : (*r)->slow) {
        say("slow probe: " + slow);
        sum_.warnings.push_back("slow probe: " + slow);
      }
    }
  }
  for (const ExtraProbe& x : o_.extra_probes) {
    auto bin = OpenedLib::open(x.binary);
    if (!bin) return bin.error();
    EntryPlan plan = plan_entry(bin->read_at(x.offset, 8));
    if (auto r = bpf_.attach_call(bin->fd_path(), x.offset + plan.skip, x.cookie); !r) return r.error();
  }
  // The --pid tree is the traced set: each of its processes gets a `processes` row (comm,
  // cmdline, parent), whether or not it calls CUDA, so the walk from a server to its workers
  // through parent pids has no hole (an engine core that makes no CUDA calls).
  for (uint32_t p : allowed_) ensure_process(p, monotonic_ns() + offset_);
  rescan(o_.pids);
  if (metrics_) publish_metrics();  // a scrape before the first second sees the writer's state
  if (!o_.ready_file.empty()) {
    // Made as the user it is for under sudo: never through their links (common/user_output.h).
    auto fd = open_user_output(o_.ready_file, OutputOpen::truncate, 0644);
    if (fd) ::close(*fd);
    else say("cannot make the ready file: " + fd.error().message);
  }
  if (o_.on_ready) o_.on_ready();
  const int64_t now = monotonic_ns();
  next_rescan_ = now + o_.rescan_interval_ns;
  next_second_ = now + 1'000'000'000;
  next_offset_ = now + 10'000'000'000;
  return {};
}

void Session::rescan(const std::vector<uint32_t>& only) {
  std::vector<uint32_t> pids = only;
  if (!o_.pids.empty() && pids.empty()) pids.assign(allowed_.begin(), allowed_.end());
  for (const FoundLib& f : scan_all(pids)) {
    if (!pid_allowed(f.pid)) continue;
    if (!attacher_.attached(f.dev, f.inode) && !attach_failed_.count({f.dev, f.inode})) {
      auto r = attacher_.attach(f.open_path, f.path, f.kind,
                                LibOpenOptions{.expect = FileId{f.dev, f.inode}, .check_dev = false});
      if (!r) {
        // Once per file: a library deleted (or upgraded in place) under a running process
        // stays mapped but has no path to probe, and the scan sees it every second.
        attach_failed_.insert({f.dev, f.inode});
        sum_.warnings.push_back(r.error().message);
        say(r.error().message);
      } else if (*r) {
        say("attached " + std::to_string((*r)->probes) + " probes to " + f.path + " (found in pid " +
            std::to_string(f.pid) + ")" + attach_time_text(**r, bpf_));
        for (const auto& s : (*r)->slow) {
          say("slow probe: " + s);
          sum_.warnings.push_back("slow probe: " + s);
        }
      }
    }
    bpf_.trace_pid(f.pid);
    ensure_process(f.pid, monotonic_ns() + offset_);
  }
  find_servers_now();
}

// A serving process is traced like a CUDA process (sched, wake-ups, block I/O, page faults,
// TCP: the kernel side's `traced` map), with its descendants already running (an engine core,
// workers; later forks follow in the kernel), each recorded in `processes` whether or not it
// calls CUDA (docs/INFERENCE.md "Which processes").
void Session::trace_serving_tree(uint32_t server) {
  std::set<uint32_t> tree = descendants_of({server}, list_pids());
  tree.insert(server);
  const int64_t now = monotonic_ns() + offset_;
  for (uint32_t p : tree) {
    if (!o_.pids.empty()) allowed_.insert(p);
    bpf_.trace_pid(p);
    ensure_process(p, now);
  }
}

void Session::find_servers_now() {
  if (!o_.requests) return;
  // The traced processes and the --pid tree (a server that makes no CUDA call is found by
  // --pid alone: its tree is the traced set).
  std::set<uint32_t> traced(allowed_.begin(), allowed_.end());
  for (const auto& [pid, k] : known_)
    if (pid_allowed(pid)) traced.insert(pid);
  for (const Server& srv : find_servers(traced, o_.http_ports, static_cast<uint32_t>(::getpid()))) {
    // Every port it listens on: a connection accepted before the trace is taken at its first
    // read or write when its local port is one of them (bpf/sock.bpf.h sock_listen).
    if (listen_ports_.insert({srv.netns, srv.port}).second) bpf_.add_listen_port(static_cast<uint32_t>(srv.netns), srv.port);
    // Scraped only once it is known to speak HTTP: a --http-port port (the user said so), or
    // one a user's request was parsed on (store_requests). A listener of the tree that never
    // served HTTP (NCCL's bootstrap, a raw TCP receiver) is never connected to.
    const ListenerKey key{srv.pid, srv.port};
    const bool declared = std::find(o_.http_ports.begin(), o_.http_ports.end(), srv.port) != o_.http_ports.end();
    if (declared || http_listeners_.count(key)) scrape_listener(srv.pid, srv.listen);
    else unproven_listeners_.emplace(key, srv.listen);
    if (servers_.count(srv.pid)) continue;
    auto hook = bpf_.trace_server(srv.pid);
    if (!hook) {
      sum_.warnings.push_back("HTTP requests of pid " + std::to_string(srv.pid) + " not traced: " + hook.error().message);
      say(sum_.warnings.back());
      servers_.insert(srv.pid);  // once: the next scan finds it again
      continue;
    }
    // The fallback costs every process on the host (docs/BENCHMARKS.md): the user is told.
    if (*hook == SockHook::raw && !raw_warned_) {
      raw_warned_ = true;
      sum_.warnings.push_back(std::string("HTTP requests traced through the ") + sock_hook_name(SockHook::raw) + ": " +
                              bpf_.sock_why_raw());
    }
    if (!hook_told_) {
      hook_told_ = true;
      if (auto c = bpf_.sock_choice(); c && !c->why.empty()) say("request hook: " + c->why);
    }
    servers_.insert(srv.pid);
    trace_serving_tree(srv.pid);
    say("tracing HTTP requests of pid " + std::to_string(srv.pid) + " (listening on port " + std::to_string(srv.port) +
        ") through the " + sock_hook_name(*hook));
    // TLS plaintext through the libssl it maps (docs/INFERENCE.md "TLS").
    if (auto tls = bpf_.trace_server_tls(srv.pid); !tls) {
      sum_.warnings.push_back("TLS of pid " + std::to_string(srv.pid) + " not read: " + tls.error().message);
      say(sum_.warnings.back());
    } else if (tls->reach != TlsReach::none) {
      say("pid " + std::to_string(srv.pid) + ": " + tls->text);
    }
  }
  // Servers gone: their libc probes detach, their pid leaves the filter (a reused pid is a
  // new process, found again if it serves).
  for (auto it = servers_.begin(); it != servers_.end();) {
    if (::kill(static_cast<pid_t>(*it), 0) == 0 || errno != ESRCH) {
      ++it;
      continue;
    }
    bpf_.untrace_server(*it);
    it = servers_.erase(it);
  }
}

void Session::scrape_listener(uint32_t pid, const Endpoint& at) {
  if (o_.engine_metrics_interval_ns <= 0) return;
  if (!scraper_) {
    OwnConnections own;
    own.open = [this](const cw_sock_conn& k) { bpf_.add_own_conn(k); };
    own.close = [this](const cw_sock_conn& k) {
      if (bpf_.remove_own_conn(k)) own_unaccepted_.fetch_add(1, std::memory_order_relaxed);
    };
    scraper_ = std::make_unique<EngineScraper>(o_.engine_metrics_interval_ns, std::move(own));
  }
  scraper_->add(pid, at);
}

void Session::on_sock(const void* data, size_t size) {
  auto r = decode_sock(data, size);
  if (!r) return;
  r->ts_ns += offset_;
  if (r->enter_ns) r->enter_ns += offset_;
  tracker_.add(*r);
  send_waits_.add(*r);
}

void Session::take_sock_records() {
  if (!sock_drain_) return;
  sock_drain_->take().for_each([this](const char* data, size_t size) { on_sock(data, size); });
}

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

void Session::ensure_process(uint32_t pid, int64_t ts, std::optional<uint32_t> ppid) {
  auto [it, inserted] = known_.try_emplace(pid, Known{ts, ts});
  if (!inserted) {
    it->second.last_ns = std::max(it->second.last_ns, ts);
    return;
  }
  // Maps first: a process of a few ms may be gone by the time its other /proc files are read,
  // and without its maps none of its stacks can be symbolized; then the copy read at its
  // first call stands in.
  symbolizer_.snapshot(pid, early_maps_ ? early_maps_->take(pid) : std::nullopt);
  ProcessRecord p = read_process(pid);
  if (ppid) p.ppid = ppid;
  it->second.cgroup_id = p.cgroup_id;
  cgroups_.note(p.cgroup_id);
  p.first_ns = ts;
  p.last_ns = ts;
  writer_.push_meta(p);
  if (o_.stacks && o_.python_frames) detect_python_in(pid);
  if (!p.comm.empty()) name_thread(pid, pid, p.comm, p.cgroup_id);
}

void Session::detect_python_in(uint32_t pid) {
  PyProcess py = detect_python(pid, read_maps(pid));
  if (py.status == PyStatus::unsupported) {
    ++python_unsupported_;
    std::cerr << "causeway trace: pid " << pid << ": " << py.why << "; its Python frames are not read" << std::endl;
    return;
  }
  if (py.status != PyStatus::supported) return;
  say("pid " + std::to_string(pid) + ": CPython " + py.version + " (" + py.binary + "), offsets from " +
      py.layout.source);
  bpf_.set_python(pid, py.layout.proc);
  py_layouts_[pid] = std::move(py.layout);
}

void Session::forget_python(uint32_t pid) {
  if (!py_layouts_.erase(pid)) return;
  bpf_.forget_python(pid);
  py_reader_.forget(pid);
}

// Stores a thread's name and cgroup, again whenever either changes (a forked child renames
// itself with prctl or exec after its first context switch, or is moved into a container's
// cgroup). Every cgroup id seen is resolved to its path, once (collector/cgroup_resolver.h).
void Session::name_thread(uint32_t tid, uint32_t pid, const std::string& comm, uint64_t cgroup_id) {
  if (tid == 0) return;
  auto [it, inserted] = named_tids_.try_emplace(tid);
  ThreadSeen& seen = it->second;
  bool changed = inserted;
  if (!comm.empty() && comm != seen.comm) {
    seen.comm = comm;
    changed = true;
  } else if (inserted) {
    seen.comm = read_comm(pid, tid);
  }
  if (cgroup_id && cgroup_id != seen.cgroup_id) {
    seen.cgroup_id = cgroup_id;
    cgroups_.note(cgroup_id);
    changed = true;
  }
  if (changed) writer_.push_meta(ThreadRecord{tid, pid, seen.comm, seen.cgroup_id});
}

uint64_t Session::stack_for(uint32_t pid, int32_t stack_id, uint64_t py_key) {
  auto key = std::make_tuple(pid, stack_id, py_key);
  if (auto it = stack_cache_.find(key); it != stack_cache_.end()) return it->second;
  std::vector<uint64_t> ips = stack_id >= 0 ? bpf_.stack(stack_id) : std::vector<uint64_t>{};
  std::optional<cw_py_stack> py;
  auto layout = py_layouts_.find(pid);
  if (py_key && layout != py_layouts_.end()) py = bpf_.py_stack(py_key);
  if (ips.empty() && !py) {
    ++stack_read_failures_;  // not cached: the next call with this id tries again
    return 0;
  }
  // Locate now (the maps are the process's as it runs); the text comes later, off this thread.
  // Python frames are read from the live process now too (cached per code object): a short
  // script may be gone by the time the resolver gets to them.
  std::vector<FrameLoc> locs = symbolizer_.locate(pid, ips);
  if (py)
    for (uint32_t i = 0; i < py->depth; ++i) {
      FrameLoc loc;
      loc.kind = FrameLoc::Kind::python;
      if (auto f = py_reader_.frame(pid, layout->second, py->code[i], py->instr[i])) loc.py = std::move(*f);
      else loc.py = PyFrame{"<unreadable>", "?", 0};
      locs.push_back(std::move(loc));
    }
  const uint64_t hash = stack_hash(locs);
  if (submitted_stacks_.insert(hash).second) resolver_.submit(hash, std::move(locs));
  stack_cache_[key] = hash;
  return hash;
}

void Session::on_call(const cw_call_event& e) {
  CallRecord c = decode_call(e);
  c.ts_ns += offset_;
  ensure_process(c.pid, c.ts_ns + c.dur_ns);
  c.cgroup_id = known_[c.pid].cgroup_id;  // per process: not read on the probe's hot path
  if (!named_tids_.count(c.tid)) name_thread(c.tid, c.pid, read_comm(c.pid, c.tid), c.cgroup_id);
  if (o_.stacks) {
    if (e.stack_id >= 0 || e.py_stack) c.stack_hash = stack_for(c.pid, e.stack_id, e.py_stack);
    stack_policy_.observe(c.pid, c.op, static_cast<uint64_t>(std::max<int64_t>(0, c.dur_ns)));
  }
  stats_.add_call(c.op, c.dur_ns, c.ret != 0);
  if (metrics_) metrics_->observe(c.op, c.dur_ns, c.ret != 0);
  ++sum_.calls;
  ++calls_recorded_;
  if (e.run_calls) push_run(run_of(e), static_cast<int64_t>(c.cgroup_id), true);
  // Handed to the writer once per consume round (flush_calls): one lock per round, not per call.
  call_batch_.push_back(c);
}

// The thread's calls counted in the kernel since its previous recorded call, as one row the
// correlator reads like the calls it stands for (docs/COLLECTOR.md "Aggregated calls").
// batch: with the round's calls (before the call that carried it); else straight to the writer
// (the runs still open at stop).
void Session::push_run(const cw_run& r, int64_t cgroup_id, bool batch) {
  CallRecord run = decode_run(r);
  run.ts_ns += offset_;
  run.cgroup_id = static_cast<uint64_t>(cgroup_id);
  if (batch) call_batch_.push_back(run);
  else writer_.push(run);
}

// Fast calls counted in the kernel since the last read: into the rollups (stats, fleet), the
// live table, Prometheus and the stack thresholds, as if each had been recorded.
void Session::read_call_agg() {
  if (!call_agg_) return;
  for (AggregatedCallsRecord& r : call_agg_->read()) {
    r.ts_ns += offset_;
    std::vector<std::pair<int64_t, uint64_t>> durs;
    for (const auto& [bucket, n] : r.hist) {
      const auto low = LatencyHistogram::bucket_low(bucket);
      if (o_.stacks) stack_policy_.observe(r.pid, r.op, low, static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)));
      durs.emplace_back(static_cast<int64_t>(low), n);
    }
    stats_.add_counted(r);
    if (metrics_) metrics_->observe_counted(r.op, durs, r.count, r.sum_ns, r.errors);
    writer_.push_aggregated(std::move(r));
  }
}

void Session::on_proc(const cw_proc_event& e) {
  CallRecord c = decode_proc(e);
  c.ts_ns += offset_;
  const uint32_t pid = e.hdr.pid;
  switch (e.hdr.op) {
    case CW_OP_PROC_EXEC:
      // The loader maps the libraries right after exec; look twice, then the periodic scan.
      pending_rescans_.push_back({monotonic_ns() + 50'000'000, pid});
      pending_rescans_.push_back({monotonic_ns() + 300'000'000, pid});
      if (!known_.count(pid)) return;
      known_.erase(pid);  // new image: new identity, new maps
      forget_python(pid);
      ensure_process(pid, c.ts_ns);
      break;
    case CW_OP_PROC_FORK: {
      if (!o_.pids.empty() && allowed_.count(pid)) allowed_.insert(e.child_pid);
      // The parent comes from the event: a short-lived child (an NCCL rank, a dataloader
      // worker) may be gone from /proc before it is read.
      ensure_process(e.child_pid, c.ts_ns, pid);
      break;
    }
    case CW_OP_PROC_EXIT: {
      ProcessRecord p;
      p.pid = pid;
      p.ppid = e.ppid;
      p.comm = comm_string(e.comm);
      p.last_ns = c.ts_ns;
      p.exit_code = e.exit_code;
      // A process the user named with --pid: its end is news (the trace goes on, for its
      // children and for the record); others' exits are only stored, or a busy host would
      // fill the terminal.
      if (std::find(o_.pids.begin(), o_.pids.end(), pid) != o_.pids.end())
        say("pid " + std::to_string(pid) + " (" + sanitize_untrusted(p.comm, 64) + ") exited with code " +
            std::to_string(e.exit_code) + "; still tracing");
      writer_.push_meta(p);
      if (auto it = known_.find(pid); it != known_.end()) it->second.last_ns = c.ts_ns;
      bpf_.untrace_pid(pid);
      for (uint16_t op : stack_policy_.forget(pid)) bpf_.clear_stack_threshold(pid, op);
      forget_python(pid);
      break;
    }
  }
  stats_.add_host(e.hdr.op == CW_OP_PROC_EXEC ? "exec" : e.hdr.op == CW_OP_PROC_FORK ? "fork" : "exit");
  ++sum_.host_events;
  writer_.push(c);
}

void Session::handle(const void* data, size_t size) {
  auto kind = record_kind(data, size);
  if (!kind) return;
  switch (*kind) {
    case CW_REC_CALL:
      if (size >= sizeof(cw_call_event)) on_call(*static_cast<const cw_call_event*>(data));
      break;
    case CW_REC_SWITCH:
      if (size >= sizeof(cw_switch_event)) {
        const auto& e = *static_cast<const cw_switch_event*>(data);
        SwitchRecord s = decode_switch(e);
        s.ts_ns += offset_;
        name_thread(e.prev_tid, e.prev_pid, comm_string(e.prev_comm), e.hdr.cgroup_id);
        name_thread(e.next_tid, e.next_pid, comm_string(e.next_comm), e.next_cgroup_id);
        ++sum_.switches;
        stats_.add_host("sched_switch");
        writer_.push(s);
      }
      break;
    case CW_REC_WAKEUP:
      if (size >= sizeof(cw_wakeup_event)) {
        const auto& e = *static_cast<const cw_wakeup_event*>(data);
        WakeupRecord w = decode_wakeup(e);
        w.ts_ns += offset_;
        name_thread(e.tid, e.pid, comm_string(e.comm), e.cgroup_id);
        name_thread(e.hdr.tid, e.hdr.pid, comm_string(e.waker_comm), e.hdr.cgroup_id);
        ++sum_.wakeups;
        stats_.add_host("wakeup");
        writer_.push(w);
      }
      break;
    case CW_REC_PROC:
      if (size >= sizeof(cw_proc_event)) on_proc(*static_cast<const cw_proc_event*>(data));
      break;
    case CW_REC_SOCK:
      on_sock(data, size);
      break;
    case CW_REC_HOST:
      if (size >= sizeof(cw_host_event)) {
        const auto& e = *static_cast<const cw_host_event*>(data);
        CallRecord c = decode_host(e);
        c.ts_ns += offset_;
        if (c.pid) name_thread(c.tid, c.pid, {}, e.hdr.cgroup_id);
        ++sum_.host_events;
        const OpInfo* op = find_op(e.hdr.op);  // block_rq, tcp_retransmit(6), oom_kill
        stats_.add_host(op ? std::string(op->name) : std::string("host"));
        // block_rq has a duration and is a call in the DB (stats lists it): the endpoint too.
        if (metrics_ && op && op->is_call) metrics_->observe(c.op, c.dur_ns, c.ret != 0);
        writer_.push(c);
      }
      break;
  }
}

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
    if (!claim_budget(std::chrono::milliseconds(on_full == OnFullQueue::leave_in_ring ? kPollMs : 1000))) {
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
  for (auto [name, v] : {std::pair{"calls_recorded", static_cast<int64_t>(calls_recorded_)},
                         {"calls_aggregated", static_cast<int64_t>(counted)},
                         {"tracer_cpu_user_ns", tv_ns(ru.ru_utime)},
                         {"tracer_cpu_system_ns", tv_ns(ru.ru_stime)},
                         {"tracer_cpu_ns", tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime)}}) {
    writer_.set_counter(name, v);
    sum_.counters[name] = static_cast<uint64_t>(v);
  }
}

// One page_alloc point event per process that allocated since the last drain.
void Session::emit_page_allocs(int64_t now_mono) {
  page_allocs_to_mono_ = now_mono;
  for (const auto& [pid, agg] : bpf_.drain_page_agg()) {
    CallRecord c;
    c.ts_ns = now_mono + offset_;
    c.pid = pid;
    c.tid = pid;
    c.op = CW_OP_PAGE_ALLOC;
    c.a[0] = static_cast<int64_t>(agg.pages);
    c.a[1] = agg.max_order;
    writer_.push(c);
    stats_.add_host("page_alloc");
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
  if (now >= next_rescan_) {
    rescan({});
    next_rescan_ = now + o_.rescan_interval_ns;
  }
  if (now >= next_offset_) {
    offset_ = measure_mono_to_real_offset();
    next_offset_ = now + 10'000'000'000;
  }
  if (now >= next_second_) {
    next_second_ = now + 1'000'000'000;
    emit_page_allocs(now);
    read_call_agg();
    store_engine_samples();
    for (const auto& u : stack_policy_.updates()) bpf_.set_stack_threshold(u.pid, u.op, u.threshold_ns);
    update_counters();
    if (metrics_) publish_metrics();
    if (o_.live_table) {
      std::cerr << "\x1b[H\x1b[2J"
                << stats_.render(now - started_mono_, sum_.dropped_ring, writer_.counters().dropped_writer, known_.size())
                << std::flush;
    }
  }
}

// "30 s" rather than "30.00s" for the whole seconds a person sets.
std::string stall_text(int64_t ns) {
  return ns % 1'000'000'000 == 0 ? std::to_string(ns / 1'000'000'000) + " s" : format_duration_ns(ns);
}

// A failed write must not go unnoticed until the user stops the trace: said on stderr the
// round it is seen (the writer tries every 100 ms), and again once writes have succeeded for
// 2 s — a disk that is nearly full takes a small batch now and then, which is no recovery
// worth a line each time. True when waiting cannot help: the DB is gone, or nothing was
// stored for stall_exit_ns.
bool Session::writer_cannot_go_on() {
  const WriteFault now_fault = writer_.fault();
  if (now_fault == WriteFault::none && reported_fault_ == WriteFault::none) return false;
  const WriterHealth h = writer_.health();
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  if (h.fault == WriteFault::none) {
    if (clear_since_ns_ == 0) clear_since_ns_ = now;
    if (now - clear_since_ns_ < 2'000'000'000) return false;
    std::cerr << "causeway trace: writing " << o_.db << " again; " << writer_.counters().dropped_write_error
              << " events could not be stored meanwhile (counted per op in the session)" << std::endl;
    reported_fault_ = WriteFault::none;
    return false;
  }
  clear_since_ns_ = 0;
  if (h.fault != reported_fault_) {
    reported_fault_ = h.fault;
    if (!write_fault_may_clear(h.fault))
      std::cerr << "causeway trace: " << o_.db
                << (h.fault == WriteFault::db_deleted ? " was deleted or moved away" : " was replaced by another file")
                << " while tracing: nothing more can be stored in it; stopping" << std::endl;
    else
      std::cerr << "causeway trace: cannot write " << o_.db << ": "
                << (h.fault == WriteFault::disk_full ? "the disk is full: " : h.fault == WriteFault::io_error ? "I/O error: " : "")
                << h.error << "; events from now on are counted as lost, per op; the trace stops by itself after "
                << stall_text(o_.stall_exit_ns)
                << " with nothing stored: free space (or pass --max-db), or press Ctrl-C to stop now" << std::endl;
  }
  if (!write_fault_may_clear(h.fault)) {
    sum_.loss.stopped_by_itself = o_.db + (h.fault == WriteFault::db_deleted ? " was deleted or moved away" : " was replaced");
    return true;
  }
  // Stalled: failing, and no row stored since (a nearly full disk that takes a small batch
  // now and then is slow progress, not none).
  if (now - std::max(h.failing_since_ns, h.stored_at_ns) < o_.stall_exit_ns) return false;
  sum_.loss.stopped_by_itself = "nothing could be stored in " + o_.db + " for " + stall_text(o_.stall_exit_ns);
  std::cerr << "causeway trace: " << sum_.loss.stopped_by_itself << "; stopping" << std::endl;
  return true;
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

}  // namespace

Result<TraceSummary> run_trace(const TraceOptions& o, const std::function<bool()>& stop) {
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
  // The writer (and its lock) before BPF: a second trace of the same DB is refused before it
  // loads or attaches anything.
  auto writer = StoreWriter::open(o.db, wo);
  if (!writer) return writer.error();
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
  auto bpf = BpfObject::load(lo);
  if (!bpf) return bpf.error();

  SessionInfo info;
  info.source_kind = "live";
  info.label = o.label;
  fill_system_identity(info);
  info.started_ns = realtime_ns();
  auto sid = (*writer)->begin_session(info);
  if (!sid) return sid.error();

  std::unique_ptr<MetricsRegistry> registry;
  std::unique_ptr<MetricsServer> metrics_server;
  if (!o.metrics_addr.empty()) {
    registry = std::make_unique<MetricsRegistry>();
    for (const OpInfo& op : op_catalog()) registry->name_op(op.id, std::string(source_name(op.source)), std::string(op.name));
    registry->set_host(info.host, info.boot_id);  // the same identity the DB's session records
    auto srv = MetricsServer::start(o.metrics_addr, *registry);
    if (!srv) {
      (void)(*writer)->close(realtime_ns());
      return srv.error();
    }
    metrics_server = std::move(*srv);
  }
  Session s(o, **writer, **bpf, registry.get());
  if (auto r = s.start(); !r) {
    (void)(*writer)->close(realtime_ns());
    return r.error();
  }
  std::unique_ptr<RequestMetricsFeed> time_lost_feed;  // outlives the watcher that calls it
  std::unique_ptr<ChainWatcher> watcher;
  if (o.diagnose) {
    MetricsRegistry* reg = registry.get();
    if (reg) time_lost_feed = std::make_unique<RequestMetricsFeed>(*reg);
    watcher = std::make_unique<ChainWatcher>(o.db, **writer, *sid, info.started_ns, 3'000'000'000,
                                             [reg](const std::map<std::string, uint64_t>& by_cause) {
                                               if (reg)
                                                 for (const auto& [cause, n] : by_cause) reg->set_chains(cause, n);
                                             },
                                             [feed = time_lost_feed.get()](sqlite3* ro, int64_t session_id) {
                                               if (feed) feed->publish_time_lost(ro, session_id);
                                             });
    watcher->start();
  }
  s.loop(stop);
  TraceSummary sum = s.finish();
  sum.session_id = *sid;
  (*writer)->flush();
  if (watcher) {
    // Everything is committed now: the last analysis sees the whole session.
    auto n = watcher->finish();
    if (n) sum.chains = *n;
    else sum.warnings.push_back("diagnosis at the end of the trace failed: " + n.error().message);
    (*writer)->flush();
  }
  auto closed = (*writer)->close(realtime_ns());
  const WriterCounters wc = (*writer)->counters();
  const WriterHealth wh = (*writer)->health();
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
  if (registry) {
    for (const auto& [name, value] : sum.counters)
      if (name.rfind("dropped", 0) == 0) registry->set_drops(name, value);
    registry->set_drops("dropped_writer", sum.dropped_writer);
    sum.metrics_url = metrics_server->url();
  }
  return sum;
}

}  // namespace causeway::collector
