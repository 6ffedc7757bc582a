// Session's start: the clock, the --pid tree, the rings, the tracepoints, the --lib and
// extra probes, the first scan; then the ready file.
#include "collector/session_internal.h"

#include <sys/types.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "collector/clock.h"
#include "collector/discovery.h"
#include "collector/early_maps.h"
#include "collector/elf_file.h"
#include "collector/lib_file.h"
#include "collector/probe_table.h"
#include "collector/proc_info.h"
#include "collector/proc_maps.h"
#include "collector/sock_drain.h"
#include "common/user_output.h"

namespace causeway::collector {

Result<void> Session::start() {
  offset_ = measure_mono_to_real_offset();
  started_mono_ = monotonic_ns();
  call_agg_ = std::make_unique<CallAggReader>(bpf_.call_agg_maps());
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
  auto waits = RingWait::over({ring_buffer__epoll_fd(calls_rb_.get()), ring_buffer__epoll_fd(host_rb_.get())});
  if (!waits) return waits.error();
  drain_wait_ = std::move(*waits);
  if (o_.requests) {
    sock_drain_ = std::make_unique<SockDrain>(bpf_.ring_sock_fd(), kSockQueueBytes);
    if (!sock_drain_->error().empty()) return make_error("bpf_ring", sock_drain_->error());
    // The socket hook a server gets is chosen now (it times a uprobe trap on this process:
    // ~0.1 s on a busy VM), before ready, not when the first listener is found: a server
    // that starts listening after the trace would otherwise answer its first requests
    // unseen while the trap is timed (measured: its hook live 0.19 s after listen() at
    // load 6, gpu-check's inference phase missing its first 5 of 20 requests). A failure
    // is not kept: the first server meets it again and says why.
    (void)bpf_.sock_choice();
    // Without the host's shared map, another tracer's scrapes of a server traced here are
    // stored as user requests (collector/tracer_conns.h): the user is told.
    if (!bpf_.tracer_conns_why_not().empty())
      say("other causeway tracers' /metrics scrapes are not told apart: " + bpf_.tracer_conns_why_not());
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
  // Before the first scan, so that no library mapped meanwhile goes untold.
  if (auto w = MmapWatch::open(); w) {
    mmap_watch_ = std::make_unique<MmapWatch>(std::move(*w));
  } else {
    say("new mappings not told by the kernel (" + w.error().message + "): every process's maps are read each second");
  }
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
  rescan({});
  find_servers_now();
  if (metrics_) publish_metrics();  // a scrape before the first second sees the writer's state
  if (!o_.ready_file.empty()) {
    // Made as the user it is for under sudo: never through their links (common/user_output.h).
    auto fd = open_user_output(o_.ready_file, OutputOpen::truncate, 0644);
    if (fd) ::close(*fd);
    else say("cannot make the ready file: " + fd.error().message);
  }
  if (o_.on_ready) o_.on_ready();
  const int64_t now = monotonic_ns();
  next_rescan_ = now + slow_rescan_interval();
  next_second_ = now + 1'000'000'000;
  next_offset_ = now + 10'000'000'000;
  return {};
}

}  // namespace causeway::collector
