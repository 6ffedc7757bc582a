// The loaded causeway BPF object: open → configure (tunables, map sizes) → load → attach, in
// that order. Owns the skeleton and every link (RAII); tracepoints whose hook is missing on
// this kernel are skipped with a warning rather than failing the whole load.
#pragma once

#include <chrono>
#include <map>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf/events.h"
#include "collector/call_agg.h"
#include "collector/sock_hook.h"
#include "collector/ssl_attach.h"
#include "common/unique_fd.h"
#include "collector/stack_policy.h"
#include "collector/uprobe_multi.h"
#include "common/result.h"

struct causeway_bpf;
struct bpf_link;
struct bpf_map;

namespace causeway::collector {

struct LoaderOptions {
  bool stacks = true;
  // Stack policy (bpf/calls.bpf.h "User stacks"; collector/stack_policy.h).
  uint64_t stack_floor_ns = StackLimits{}.floor_ns;  // a call this long gets a stack unless its threshold says more
  uint64_t stack_gap_ns = StackLimits{}.stall_ns;    // so does a call after this long outside traced calls
  bool filter_pids = false;        // only processes in the traced map (--pid)
  bool record_all = false;         // --record-all: every call its own record (bpf/calls.bpf.h "Aggregated calls")
  uint32_t ring_calls_bytes = 4u << 20;  // power of two, ≥ page size; sizing in bpf/maps.bpf.h
  uint32_t ring_host_bytes = 2u << 20;
  uint32_t ring_sock_bytes = 16u << 20;  // sizing in bpf/sock.bpf.h
  bool host_tracepoints = true;    // sched/proc/io/net/mem
  // The process exits right after teardown (the CLI): uprobes detach in a grandchild after
  // we return, not on our exit path (docs/COLLECTOR.md, "Stop"). Off for in-process callers
  // that trace again next, so one session's detach never overlaps the next one.
  bool detach_after_return = false;
};

struct LinkCloser {
  void operator()(bpf_link* l) const;
};
using LinkPtr = std::unique_ptr<bpf_link, LinkCloser>;

class BpfObject {
 public:
  static Result<std::unique_ptr<BpfObject>> load(const LoaderOptions& options);
  ~BpfObject();
  BpfObject(const BpfObject&) = delete;
  BpfObject& operator=(const BpfObject&) = delete;

  // Attaches the host tracepoints; returns the names that could not attach (warnings).
  std::vector<std::string> attach_tracepoints();
  // Whether the kernel side tells each listen() (bpf/net.bpf.h CW_REC_LISTEN) and each exec:
  // their tracepoints attached.
  bool tells_process_events() const { return process_events_; }
  // Traces the calls of the functions at file offsets of binary, in every process: entry and
  // return, as link_kind() makes them (one session link for all sites, or a multi link for the
  // returns then one for the entries, or a perf-event link per site and side, returns first:
  // docs/COLLECTOR.md "Uprobe links"). All or nothing: on failure what it attached is undone.
  Result<void> attach_calls(const std::string& binary, const std::vector<UprobeSite>& sites);
  Result<void> attach_call(const std::string& binary, uint64_t offset, uint64_t cookie) {
    return attach_calls(binary, {UprobeSite{offset, cookie}});
  }
  UprobeLinkKind link_kind() const { return link_kind_; }
  // Links held: one or two per library with session or multi links, two per probed function
  // without.
  size_t uprobe_links() const { return multi_links_.size() + uprobe_links_.size(); }
  // Detaches every uprobe now (one close per link) and returns how long that took; the
  // destructor does the same for whatever is still attached.
  std::chrono::milliseconds detach_uprobes();
  // Tells the programs to ignore new calls and host events (returns of calls already entered
  // still complete); instant, unlike detaching (each uprobe unregistration waits for RCU).
  void stop_producers();

  void trace_pid(uint32_t pid);
  void untrace_pid(uint32_t pid);
  bool is_traced(uint32_t pid) const;

  // Request tracing of one serving process (bpf/sock.bpf.h, collector/sock_hook.h): the libc
  // hook when CAUSEWAY_SOCK_HOOK allows it and the process maps a libc (its socket functions
  // probed with its pid: no other process traps), else the tracepoint hook, attached once for
  // the host on the first server that needs it (never while every server has the libc hook).
  // Returns the hook the server got; an error leaves it untraced.
  Result<SockHook> trace_server(uint32_t pid);
  // Stops tracing a server (gone, or never to be seen again): its libc probes detach.
  void untrace_server(uint32_t pid);
  // A port a server listens on, in its network namespace: a connection first seen at a read
  // or write (accepted before the trace) is taken when its local port is one of these.
  // Also attaches the arrival hook (bpf/arrival.bpf.h) on the first port.
  void add_listen_port(uint32_t netns, uint16_t port);
  // Whether the bytes read carry their arrival times; why not when they do not.
  bool arrival_attached() const { return arrival_link_ != nullptr; }
  const std::string& arrival_why_not() const { return arrival_why_not_; }
  // causeway's own connections (the /metrics scraper's) while they are open: a traced server
  // that accepts one leaves it untraced and counts it (bpf/sock.bpf.h own_conns).
  // True when the tuple was still there: no traced server accepted that connection (the
  // kernel side forgets a tuple once it matched).
  // Each also goes to the map every causeway tracer on the host reads (bpf/sock.bpf.h
  // tracer_conns, collector/tracer_conns.h), so another tracer of the same server leaves it
  // untraced too.
  void add_own_conn(const cw_sock_conn& key);
  bool remove_own_conn(const cw_sock_conn& key);
  // Other tracers' scrapes a traced server accepted, left untraced (bpf/sock.bpf.h
  // cw_tracer_scrapes); and why this tracer does not share the host's map (empty when it does).
  uint64_t tracer_scrapes() const;
  const std::string& tracer_conns_why_not() const { return tracer_conns_why_not_; }
  // The hook choice (CAUSEWAY_SOCK_HOOK, a uprobe trap's cost here, tracefs), made once.
  Result<SockHookChoice> sock_choice();
  // What one trap of the libc hook costs a process here, in ns above the call it interrupts:
  // the hook's entry program on a function of causeway itself, probed with our pid.
  Result<double> libc_trap_ns();
  // The tracepoint hook for the host, as the choice says (idempotent): `check` attaches it
  // with no server in the filter. Its links, its kind and why it is raw (empty otherwise).
  Result<void> attach_sock_tracepoints();
  size_t sock_links() const { return sock_links_.size(); }
  SockHook sock_tracepoint_hook() const { return sock_tracepoint_; }
  const std::string& sock_why_raw() const { return sock_why_raw_; }
  // The libc hook's links now (per server: one session link, or two multi links, or one per
  // probed function and side), and the servers that got it since the start.
  size_t sock_libc_links() const;
  size_t sock_libc_servers() const { return sock_libc_servers_; }

  // TLS plaintext of a server traced by trace_server (bpf/ssl.bpf.h, collector/ssl_attach.h):
  // uprobes on the libssl it maps, with its pid (collector/bpf_loader_ssl.cpp). Says what its
  // TLS reach is; `error` when a readable libssl could not be probed. untrace_server detaches.
  Result<TlsReadability> trace_server_tls(uint32_t pid);
  size_t ssl_links() const;
  // bpf/sock.bpf.h enum cw_ssl_stat, summed over CPUs (collector/ssl_attach.h ssl_stat_name).
  std::vector<uint64_t> ssl_stats() const;
  size_t ssl_servers() const { return ssl_servers_; }

  // Per-(process, op) duration from which a returning call's user stack is taken.
  void set_stack_threshold(uint32_t pid, uint16_t op, uint64_t ns);
  void clear_stack_threshold(uint32_t pid, uint16_t op);

  // Summed per-CPU drop counters, indexed by enum cw_drop.
  std::vector<uint64_t> drops() const;
  // Frames of a user stack id (innermost first); empty when the id is unknown.
  std::vector<uint64_t> stack(int32_t id) const;
  // CPython processes the BPF side walks the frames of (bpf/python.bpf.h).
  void set_python(uint32_t pid, const cw_py_proc& proc);
  void forget_python(uint32_t pid);
  // A captured Python stack by its key; nullopt when unknown.
  std::optional<cw_py_stack> py_stack(uint64_t key) const;
  // Removes and returns every process's page-allocation aggregate.
  std::vector<std::pair<uint32_t, cw_page_agg>> drain_page_agg();

  int ring_calls_fd() const;
  CallAggMaps call_agg_maps() const;  // per-CPU (process, op) counts of fast calls (collector/call_agg.h)
  // The threads' runs of counted calls no recorded call has taken (read at stop).
  std::vector<cw_run> open_runs() const;
  int ring_host_fd() const;
  int ring_new_procs_fd() const;  // pids (u32) at their first traced call: collector/early_maps.h
  int ring_sock_fd() const;       // socket records: collector/sock_drain.h

 private:
  BpfObject() = default;
  // Undoes the uprobe attaches made since uprobe_mark() returned `mark`.
  size_t uprobe_mark() const { return uprobe_links(); }
  void rollback_uprobes(size_t mark);
  causeway_bpf* skel_ = nullptr;
  std::vector<LinkPtr> tp_links_;
  bool process_events_ = false;
  std::vector<LinkPtr> uprobe_links_;  // perf-event uprobes (fallback)
  std::vector<int> multi_links_;       // session or multi-uprobe link fds
  UprobeLinkKind link_kind_ = UprobeLinkKind::perf_event;
  // All or nothing: on failure what it attached is undone.
  Result<void> attach_sock_syscalls();
  // The libc hook on one process: its libc's socket functions, with its pid; the link count.
  Result<size_t> attach_sock_libc(uint32_t pid);
  std::optional<SockHookChoice> sock_choice_;
  std::vector<LinkPtr> sock_links_;  // the tracepoint hook's
  LinkPtr arrival_link_;             // tcp_probe (bpf/arrival.bpf.h), with the first served port
  std::string arrival_why_not_;
  std::string tracer_conns_why_not_;
  SockHook sock_tracepoint_ = SockHook::raw;
  std::string sock_why_raw_;
  struct LibcLinks {
    std::vector<UniqueFd> multi;  // session or multi-uprobe links
    std::vector<LinkPtr> perf;    // perf-event uprobes (kernels before 6.6)
  };
  // The libc hook's programs at `entries` and `returns` of `path`, for pid's threads only, in
  // this kernel's link kind (a session link needs no returns: its entry asks for them).
  Result<LibcLinks> attach_libc_sites(const std::string& path, const std::vector<UprobeSite>& entries,
                                      const std::vector<UprobeSite>& returns, uint32_t pid);
  // A per-CPU array of n counters (bpf/maps.bpf.h drops, bpf/sock.bpf.h ssl_stats), summed.
  std::vector<uint64_t> percpu_sums(const bpf_map* counters, uint32_t n) const;
  std::map<uint32_t, LibcLinks> sock_libc_;  // by server pid
  size_t sock_libc_servers_ = 0;
  // By server pid: one session link, or an entry and a return per SSL function (bpf/ssl.bpf.h).
  std::map<uint32_t, LibcLinks> ssl_links_;
  size_t ssl_servers_ = 0;
  int ncpus_ = 1;
  bool detach_after_return_ = false;
};

// libbpf's messages: warnings go to stderr unless silenced; the last ones are kept for
// `check` remedies.
void set_libbpf_quiet(bool quiet);
std::string last_libbpf_message();

}  // namespace causeway::collector
