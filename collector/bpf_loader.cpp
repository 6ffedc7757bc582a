#include "collector/bpf_loader.h"

#include "collector/clock.h"
#include "collector/detach_lock.h"
#include "collector/proc_maps.h"
#include "collector/selftest_target.h"
#include "collector/sock_hook.h"
#include "collector/tracer_conns.h"
#include "collector/trap_timing.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>
#include <algorithm>

#include "causeway.skel.h"

namespace causeway::collector {
namespace {

std::mutex g_log_mu;
bool g_quiet = true;
std::string g_last;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, args);
  std::lock_guard lock(g_log_mu);
  g_last = buf;
  if (!g_quiet) std::fputs(buf, stderr);
  return 0;
}

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

// Kernel memory for the counted calls' per-CPU array, all CPUs together (bpf/calls.bpf.h
// "Aggregated calls"): 64 entries on up to 18 CPUs, fewer beyond.
constexpr uint64_t kCallAggArrayBytes = 16ull << 20;
// sock_pids values: which hook traces a server (bpf/sock.bpf.h CW_SOCK_BY_*).
constexpr uint8_t kSockBySyscall = 1;
constexpr uint8_t kSockByLibc = 2;

uint32_t read_pid_max() {
  unsigned v = 32768;
  if (FILE* f = std::fopen("/proc/sys/kernel/pid_max", "r")) {
    if (std::fscanf(f, "%u", &v) != 1) v = 32768;
    std::fclose(f);
  }
  return v;
}

}  // namespace

void set_libbpf_quiet(bool quiet) {
  std::lock_guard lock(g_log_mu);
  g_quiet = quiet;
  libbpf_set_print(libbpf_print);
}

std::string last_libbpf_message() {
  std::lock_guard lock(g_log_mu);
  return g_last;
}

void LinkCloser::operator()(bpf_link* l) const { bpf_link__destroy(l); }

Result<std::unique_ptr<BpfObject>> BpfObject::load(const LoaderOptions& o) {
  libbpf_set_print(libbpf_print);
  std::unique_ptr<BpfObject> obj(new BpfObject());
  obj->skel_ = causeway_bpf__open();
  if (!obj->skel_) return make_error("bpf_open", "cannot open the BPF object: " + errno_text(errno));
  auto* rodata = obj->skel_->rodata;
  rodata->targ_filter = o.filter_pids;
  rodata->targ_stacks = o.stacks;
  rodata->targ_record_all = o.record_all;
  rodata->targ_stack_floor_ns = o.stack_floor_ns;
  rodata->targ_stack_gap_ns = o.stack_gap_ns;
  // Wake the consumer once a quarter of a ring is queued (see maps.bpf.h).
  rodata->targ_wake_calls = o.ring_calls_bytes / 4;
  rodata->targ_wake_host = o.ring_host_bytes / 4;
  bpf_map__set_max_entries(obj->skel_->maps.rb_calls, o.ring_calls_bytes);
  bpf_map__set_max_entries(obj->skel_->maps.rb_host, o.ring_host_bytes);
  bpf_map__set_max_entries(obj->skel_->maps.rb_sock, o.ring_sock_bytes);
  if (!o.stacks) {
    bpf_map__set_max_entries(obj->skel_->maps.stacks, 1);
    bpf_map__set_max_entries(obj->skel_->maps.stack_thresholds, 1);
    bpf_map__set_max_entries(obj->skel_->maps.py_stacks, 1);
  }
  // Pairing slots: one per possible tid when pid_max allows (no sharing), else 32768.
  uint32_t slots = 1;
  const uint32_t pid_max = read_pid_max();
  while (slots < pid_max && slots < 32768) slots <<= 1;
  bpf_map__set_max_entries(obj->skel_->maps.tasks, slots);
  bpf_map__set_max_entries(obj->skel_->maps.runs, slots);
  rodata->targ_task_mask = slots - 1;
  // Counted calls' per-CPU array (bpf/calls.bpf.h "Aggregated calls"): preallocated on every
  // possible CPU, so as many (process, op) entries as kCallAggArrayBytes holds, at most 64; the
  // (process, op)s beyond go to the per-CPU hash, allocated as they come.
  const uint64_t per_entry = sizeof(cw_agg_value) * static_cast<uint64_t>(std::max(1, libbpf_num_possible_cpus()));
  auto agg_slots = static_cast<uint32_t>(std::clamp<uint64_t>(kCallAggArrayBytes / per_entry, 1, 64));
  // Fewer on request (CAUSEWAY_CALL_AGG_ENTRIES, tests: the hash taking over once they are given out).
  if (const char* asked = std::getenv("CAUSEWAY_CALL_AGG_ENTRIES"); asked && std::atoi(asked) > 0)
    agg_slots = std::min<uint32_t>(agg_slots, static_cast<uint32_t>(std::atoi(asked)));
  bpf_map__set_max_entries(obj->skel_->maps.call_agg_slots, agg_slots);
  bpf_map__set_max_entries(obj->skel_->maps.agg_free, agg_slots);
  rodata->targ_agg_slots = agg_slots;
  // Programs used in session or multi-uprobe links must be loaded with that attach type, and
  // such a program cannot be attached as a perf-event uprobe: the kind is chosen once, here.
  // A session link runs cw_session alone; the other kinds cw_enter and cw_return.
  obj->link_kind_ = detect_uprobe_link_kind();
  auto* progs = &obj->skel_->progs;
  const bool session = obj->link_kind_ == UprobeLinkKind::session;
  const auto is_call_prog = [&](const bpf_program* p) {
    return session ? p == progs->cw_session : p == progs->cw_enter || p == progs->cw_return;
  };
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, obj->skel_->obj) {
    if (is_call_prog(p)) {
      if (obj->link_kind_ != UprobeLinkKind::perf_event)
        bpf_program__set_expected_attach_type(
            p, static_cast<bpf_attach_type>(session ? kAttachUprobeSession : kAttachUprobeMulti));
    } else if (!o.host_tracepoints || p == progs->cw_session || p == progs->cw_enter || p == progs->cw_return) {
      bpf_program__set_autoload(p, false);
    } else if (p == progs->cw_sock_libc_session || p == progs->cw_sock_libc_enter || p == progs->cw_sock_libc_exit) {
      // The libc hook of request tracing, as the calls' uprobes: one session link per server,
      // or multi links (one per server and side), or perf-event uprobes.
      if (session != (p == progs->cw_sock_libc_session)) bpf_program__set_autoload(p, false);
      else if (obj->link_kind_ != UprobeLinkKind::perf_event)
        bpf_program__set_expected_attach_type(
            p, static_cast<bpf_attach_type>(session ? kAttachUprobeSession : kAttachUprobeMulti));    } else if (p == progs->cw_ssl_session || p == progs->cw_ssl_enter || p == progs->cw_ssl_exit) {
      // The TLS plaintext hook (bpf/ssl.bpf.h): one session link per server, else perf-event
      // uprobes (collector/bpf_loader_ssl.cpp).
      if (session != (p == progs->cw_ssl_session)) bpf_program__set_autoload(p, false);
      else if (session) bpf_program__set_expected_attach_type(p, static_cast<bpf_attach_type>(kAttachUprobeSession));
    }
  }
  // Every causeway tracer's scrapes (collector/tracer_conns.h): the map a running tracer
  // loaded, else this one, which the tracers that start later find.
  (void)share_tracer_conns(obj->skel_->maps.tracer_conns, obj->tracer_conns_why_not_);
  if (int err = causeway_bpf__load(obj->skel_); err)
    return make_error("bpf_load", "loading the BPF programs failed (" + errno_text(err) +
                                      "); run as root or with CAP_BPF+CAP_PERFMON, on a kernel with BTF. libbpf: " +
                                      last_libbpf_message());
  // Every entry of the counted calls' array is free (bpf/calls.bpf.h agg_free).
  for (uint32_t i = 0; i < agg_slots; ++i)
    if (bpf_map_update_elem(bpf_map__fd(obj->skel_->maps.agg_free), nullptr, &i, BPF_ANY) != 0)
      return make_error("bpf_load", "cannot queue the counted calls' array entries: " + errno_text(errno));
  obj->detach_after_return_ = o.detach_after_return;
  obj->ncpus_ = libbpf_num_possible_cpus();
  if (obj->ncpus_ < 1) obj->ncpus_ = 1;
  return obj;
}

namespace {

// Closing the last reference to a uprobe perf event detaches it and waits for an RCU grace
// period, serialized in the kernel: 25 probes took 5.6 s in a row and no less from parallel
// threads. A grandchild that inherited the fds holds them until `done` closes (after our own
// closes, which are then cheap), so the last close and its wait happen there, off our exit
// path. Returns the write end the caller closes when its links are gone; -1 when no fork.
int hand_off_last_close(std::vector<int> keep) {
  int done[2];
  if (::pipe2(done, O_CLOEXEC) != 0) return -1;
  keep.push_back(done[0]);
  // The next trace's attach waits while this lock is held (collector/detach_lock.h).
  const int lock = lock_for_detach();
  if (lock >= 0) keep.push_back(lock);
  std::sort(keep.begin(), keep.end());
  pid_t child = ::fork();
  if (child < 0) {
    ::close(done[0]);
    ::close(done[1]);
    if (lock >= 0) ::close(lock);
    return -1;
  }
  if (child == 0) {
    if (::fork() == 0) {
      unsigned from = 0;
      for (int fd : keep) {
        if (static_cast<unsigned>(fd) > from) ::syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0);
        from = static_cast<unsigned>(fd) + 1;
      }
      ::syscall(SYS_close_range, from, ~0U, 0);
      char c;
      while (::read(done[0], &c, 1) != 0 && errno == EINTR) {
      }
      // The links first, one by one: each close returns only after its detach (the release
      // runs before the syscall returns). Leaving them to _exit would release them in an
      // order of the kernel's choosing, the lock possibly first, letting the next trace attach
      // into a detach still in flight (a trace started during one recorded 48 of ~60,000
      // calls: docs/COLLECTOR.md "Stop").
      for (int fd : keep)
        if (fd != lock && fd != done[0]) ::close(fd);
    }
    ::_exit(0);
  }
  ::close(done[0]);
  if (lock >= 0) ::close(lock);  // the grandchild's copy keeps it
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return done[1];
}

}  // namespace

std::chrono::milliseconds BpfObject::detach_uprobes() {
  const auto t0 = std::chrono::steady_clock::now();
  // Each close returns once its probes are out of every process's text (the link's release
  // unregisters them and waits for one grace period for the whole set). One thread per link
  // beyond the first, so the waits overlap: closed one after another, multi links' two per
  // library took two grace periods (under load 54–126 ms; overlapped 25–56 ms,
  // docs/BENCHMARKS.md "Probes on and off").
  std::vector<std::thread> closers;
  for (size_t i = 1; i < multi_links_.size(); ++i) closers.emplace_back([fd = multi_links_[i]] { ::close(fd); });
  if (!multi_links_.empty()) ::close(multi_links_.front());
  for (std::thread& t : closers) t.join();
  multi_links_.clear();
  std::vector<int> fds;
  for (const auto& l : uprobe_links_)
    if (int fd = bpf_link__fd(l.get()); fd >= 0) fds.push_back(fd);
  const int done = fds.empty() || !detach_after_return_ ? -1 : hand_off_last_close(std::move(fds));
  uprobe_links_.clear();
  if (done >= 0) ::close(done);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
}

void BpfObject::rollback_uprobes(size_t mark) {
  while (uprobe_mark() > mark) {
    if (!multi_links_.empty()) {
      ::close(multi_links_.back());
      multi_links_.pop_back();
    } else {
      uprobe_links_.pop_back();
    }
  }
}

BpfObject::~BpfObject() {
  (void)detach_uprobes();
  tp_links_.clear();
  arrival_link_.reset();
  sock_links_.clear();
  sock_libc_.clear();
  ssl_links_.clear();
  if (skel_) causeway_bpf__destroy(skel_);
}

void BpfObject::stop_producers() { __atomic_store_n(&skel_->bss->cw_stopped, true, __ATOMIC_RELEASE); }

std::vector<std::string> BpfObject::attach_tracepoints() {
  struct Tp {
    bpf_program* prog;
    const char* name;
  };
  const Tp tps[] = {
      {skel_->progs.cw_sched_switch, "sched_switch"},       {skel_->progs.cw_sched_wakeup, "sched_waking"},
      {skel_->progs.cw_sched_wakeup_new, "sched_wakeup_new"}, {skel_->progs.cw_proc_exec, "sched_process_exec"},
      {skel_->progs.cw_proc_fork, "sched_process_fork"},     {skel_->progs.cw_proc_exit, "sched_process_exit"},
      {skel_->progs.cw_block_issue, "block_rq_issue"},       {skel_->progs.cw_block_complete, "block_rq_complete"},
      {skel_->progs.cw_tcp_retransmit, "tcp_retransmit_skb"}, {skel_->progs.cw_tcp_sendmsg, "tcp_sendmsg_locked"},
      {skel_->progs.cw_sock_state, "inet_sock_set_state"},   {skel_->progs.cw_page_alloc, "mm_page_alloc"},
      {skel_->progs.cw_oom_victim, "mark_victim"},          {skel_->progs.cw_sched_migrate, "sched_migrate_task"},
  };
  std::vector<std::string> failed;
  int process_events = 0;
  for (const Tp& tp : tps) {
    if (!bpf_program__autoload(tp.prog)) continue;
    // The scheduler hooks are BTF tracepoints (tp_btf: the tracepoint is named in their
    // section, bpf/sched.bpf.h says why), the others raw ones.
    bpf_link* l = bpf_program__type(tp.prog) == BPF_PROG_TYPE_TRACING ? bpf_program__attach_trace(tp.prog)
                                                                       : bpf_program__attach_raw_tracepoint(tp.prog, tp.name);
    if (!l) {
      failed.push_back(std::string(tp.name) + " (" + errno_text(errno) + ")");
      continue;
    }
    tp_links_.emplace_back(l);
    if (tp.prog == skel_->progs.cw_proc_exec || tp.prog == skel_->progs.cw_proc_fork || tp.prog == skel_->progs.cw_sock_state)
      ++process_events;
  }
  process_events_ = process_events == 3;
  return failed;
}

Result<void> BpfObject::attach_calls(const std::string& binary, const std::vector<UprobeSite>& sites) {
  const size_t mark = uprobe_mark();
  auto multi = [&](bpf_program* prog, ProbeSide side) -> Result<void> {
    auto fd = attach_uprobe_multi(bpf_program__fd(prog), binary, sites, side);
    if (!fd) return fd.error();
    multi_links_.push_back(*fd);
    return {};
  };
  auto perf = [&](bpf_program* prog, bool retprobe) -> Result<void> {
    for (const UprobeSite& site : sites) {
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = retprobe);
      bpf_link* l = bpf_program__attach_uprobe_opts(prog, -1, binary.c_str(), site.offset, &opts);
      if (!l)
        return make_error("attach", std::string(retprobe ? "uretprobe" : "uprobe") + " on " + binary + "+0x" +
                                        std::to_string(site.offset) + ": " + errno_text(errno));
      uprobe_links_.emplace_back(l);
    }
    return {};
  };
  // Returns before entries (collector/attacher.cpp says why); a session link is both at once.
  Result<void> r;
  switch (link_kind_) {
    case UprobeLinkKind::session:
      r = multi(skel_->progs.cw_session, ProbeSide::session);
      break;
    case UprobeLinkKind::multi:
      r = multi(skel_->progs.cw_return, ProbeSide::ret);
      if (r) r = multi(skel_->progs.cw_enter, ProbeSide::entry);
      break;
    case UprobeLinkKind::perf_event:
      r = perf(skel_->progs.cw_return, true);
      if (r) r = perf(skel_->progs.cw_enter, false);
      break;
  }
  if (!r) rollback_uprobes(mark);
  return r;
}

Result<void> BpfObject::attach_sock_syscalls() {
  for (const std::string& name : sock_syscalls()) {
    const bool close = name == "close";
    std::vector<std::pair<bpf_program*, std::string>> tps = {
        {close ? skel_->progs.cw_sock_sys_close : skel_->progs.cw_sock_sys_enter, "sys_enter_" + name}};
    if (!close) tps.emplace_back(skel_->progs.cw_sock_sys_exit, "sys_exit_" + name);
    for (const auto& [prog, tp] : tps) {
      bpf_link* l = bpf_program__attach_tracepoint(prog, "syscalls", tp.c_str());
      if (!l) {
        const int err = errno;
        sock_links_.clear();
        return make_error("attach", "tracepoint syscalls:" + tp + ": " + errno_text(err));
      }
      sock_links_.emplace_back(l);
    }
  }
  return {};
}

Result<SockHookChoice> BpfObject::sock_choice() {
  if (!sock_choice_) {
    auto c = choose_sock_hook([this] { return libc_trap_ns(); });
    if (!c) return c.error();
    sock_choice_ = *c;
  }
  return *sock_choice_;
}

Result<void> BpfObject::attach_sock_tracepoints() {
  if (!sock_links_.empty()) return {};
  if (!bpf_program__autoload(skel_->progs.cw_sock_enter)) return make_error("attach", "socket tracing needs the host tracepoints");
  auto choice = sock_choice();
  if (!choice) return choice.error();
  sock_tracepoint_ = choice->tracepoint;
  sock_why_raw_ = choice->tracepoint == SockHook::syscalls ? "" : choice->forced ? "CAUSEWAY_SOCK_HOOK=raw" : choice->why_raw;
  if (choice->tracepoint == SockHook::syscalls) {
    auto r = attach_sock_syscalls();
    if (r || choice->forced) return r;
    sock_tracepoint_ = SockHook::raw;  // tracefs lists them but this kernel refused one: the fallback
    sock_why_raw_ = r.error().message;
  }
  for (auto [prog, name] : {std::pair{skel_->progs.cw_sock_enter, "sys_enter"}, std::pair{skel_->progs.cw_sock_exit, "sys_exit"}}) {
    bpf_link* l = bpf_program__attach_raw_tracepoint(prog, name);
    if (!l) {
      const int err = errno;
      sock_links_.clear();
      return make_error("attach", std::string("raw tracepoint ") + name + ": " + errno_text(err));
    }
    sock_links_.emplace_back(l);
  }
  return {};
}

Result<BpfObject::LibcLinks> BpfObject::attach_libc_sites(const std::string& path, const std::vector<UprobeSite>& entries,
                                                          const std::vector<UprobeSite>& returns, uint32_t pid) {
  LibcLinks links;
  // Returns first, so no entry runs without its return (collector/attacher.cpp says why).
  if (link_kind_ == UprobeLinkKind::session) {
    auto fd = attach_uprobe_multi(bpf_program__fd(skel_->progs.cw_sock_libc_session), path, entries, ProbeSide::session, pid);
    if (!fd) return fd.error();
    links.multi.emplace_back(*fd);
  } else if (link_kind_ == UprobeLinkKind::multi) {
    for (auto [prog, side, list] : {std::tuple{skel_->progs.cw_sock_libc_exit, ProbeSide::ret, &returns},
                                    std::tuple{skel_->progs.cw_sock_libc_enter, ProbeSide::entry, &entries}}) {
      if (list->empty()) continue;
      auto fd = attach_uprobe_multi(bpf_program__fd(prog), path, *list, side, pid);
      if (!fd) return fd.error();
      links.multi.emplace_back(*fd);
    }
  } else {
    for (auto [prog, retprobe, list] : {std::tuple{skel_->progs.cw_sock_libc_exit, true, &returns},
                                        std::tuple{skel_->progs.cw_sock_libc_enter, false, &entries}}) {
      for (const UprobeSite& site : *list) {
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = site.cookie, .retprobe = retprobe);
        bpf_link* l = bpf_program__attach_uprobe_opts(prog, static_cast<pid_t>(pid), path.c_str(), site.offset, &opts);
        if (!l)
          return make_error("attach", std::string(retprobe ? "uretprobe" : "uprobe") + " on " + path + "+0x" +
                                          std::to_string(site.offset) + " for pid " + std::to_string(pid) + ": " +
                                          errno_text(errno));
        links.perf.emplace_back(l);
      }
    }
  }
  return links;
}

Result<size_t> BpfObject::attach_sock_libc(uint32_t pid) {
  if (!bpf_program__autoload(skel_->progs.cw_sock_enter)) return make_error("attach", "socket tracing needs the host tracepoints");
  const std::string libc = mapped_libc(read_maps(pid));
  if (libc.empty()) return make_error("libc", "pid " + std::to_string(pid) + " maps no C library (a static binary?)");
  // The file as the process sees it: a server in a container has its own.
  const std::string path = "/proc/" + std::to_string(pid) + "/root" + libc;
  auto sites = libc_sock_sites(path);
  if (!sites) return sites.error();
  auto links = attach_libc_sites(path, sites->entries, sites->returns, pid);
  if (!links) return links.error();
  const size_t n = links->multi.size() + links->perf.size();
  sock_libc_[pid] = std::move(*links);
  return n;
}

Result<double> BpfObject::libc_trap_ns() {
  if (!bpf_program__autoload(skel_->progs.cw_sock_enter)) return make_error("attach", "socket tracing needs the host tracepoints");
  auto at = trap_site_location();
  if (!at) return at.error();
  // The libc hook's own entry program on a function of this process, with our pid: it stops
  // at the server filter, as it does for a server's calls on fds it does not trace, so each
  // call is one trap and the filter.
  const auto time_calls = [] {
    return time_per_call([] { causeway_trap_site(0); });
  };
  const double bare = time_calls();
  auto links = attach_libc_sites(at->binary, {UprobeSite{at->offset, 0}}, {}, static_cast<uint32_t>(::getpid()));
  if (!links) return links.error();
  const double probed = time_calls();
  return std::max(0.0, probed - bare);
}

Result<SockHook> BpfObject::trace_server(uint32_t pid) {
  auto choice = sock_choice();
  if (!choice) return choice.error();
  SockHook got = SockHook::libc;
  std::string why_not_libc;
  if (choice->libc) {
    auto r = sock_libc_.count(pid) ? Result<size_t>(size_t{0}) : attach_sock_libc(pid);
    if (!r) why_not_libc = r.error().message;
  }
  if (!choice->libc || !why_not_libc.empty()) {
    if (auto r = attach_sock_tracepoints(); !r)
      return why_not_libc.empty() ? r.error() : make_error("attach", why_not_libc + "; " + r.error().message);
    got = sock_tracepoint_;
  }
  uint8_t by = got == SockHook::libc ? kSockByLibc : kSockBySyscall;
  bpf_map__update_elem(skel_->maps.sock_pids, &pid, sizeof(pid), &by, sizeof(by), BPF_ANY);
  if (got == SockHook::libc) ++sock_libc_servers_;
  return got;
}

void BpfObject::add_listen_port(uint32_t netns, uint16_t port) {
  const cw_listen_key k{netns, port, 0};
  const uint8_t one = 1;
  bpf_map__update_elem(skel_->maps.sock_listen, &k, sizeof(k), &one, sizeof(one), BPF_ANY);
  // The arrival hook's first filter (bpf/arrival.bpf.h), then the hook itself, attached with
  // the first served port so a host without one runs nothing on its segments.
  __atomic_fetch_or(&skel_->bss->cw_listen_port_bits[port >> 6], uint64_t{1} << (port & 63), __ATOMIC_RELEASE);
  if (arrival_link_ || !arrival_why_not_.empty() || !bpf_program__autoload(skel_->progs.cw_tcp_arrival)) return;
  if (bpf_link* l = bpf_program__attach_raw_tracepoint(skel_->progs.cw_tcp_arrival, "tcp_probe")) arrival_link_.reset(l);
  else arrival_why_not_ = "tcp_probe (" + errno_text(errno) + ")";
}

void BpfObject::add_own_conn(const cw_sock_conn& key) {
  const uint8_t one = 1;
  bpf_map__update_elem(skel_->maps.own_conns, &key, sizeof(key), &one, sizeof(one), BPF_ANY);
  const auto until = static_cast<uint64_t>(monotonic_ns() + kTracerConnHoldNs);  // bpf_ktime_get_ns's clock
  bpf_map__update_elem(skel_->maps.tracer_conns, &key, sizeof(key), &until, sizeof(until), BPF_ANY);
}

bool BpfObject::remove_own_conn(const cw_sock_conn& key) {
  bpf_map__delete_elem(skel_->maps.tracer_conns, &key, sizeof(key), 0);
  return bpf_map__delete_elem(skel_->maps.own_conns, &key, sizeof(key), 0) == 0;
}

uint64_t BpfObject::tracer_scrapes() const { return __atomic_load_n(&skel_->bss->cw_tracer_scrapes, __ATOMIC_RELAXED); }

void BpfObject::untrace_server(uint32_t pid) {
  bpf_map__delete_elem(skel_->maps.sock_pids, &pid, sizeof(pid), 0);
  sock_libc_.erase(pid);
  ssl_links_.erase(pid);
}

size_t BpfObject::sock_libc_links() const {
  size_t n = 0;
  for (const auto& [pid, l] : sock_libc_) n += l.multi.size() + l.perf.size();
  return n;
}

void BpfObject::trace_pid(uint32_t pid) {
  uint8_t one = 1;
  bpf_map__update_elem(skel_->maps.traced, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY);
}

void BpfObject::untrace_pid(uint32_t pid) { bpf_map__delete_elem(skel_->maps.traced, &pid, sizeof(pid), 0); }

bool BpfObject::is_traced(uint32_t pid) const {
  uint8_t v = 0;
  return bpf_map__lookup_elem(skel_->maps.traced, &pid, sizeof(pid), &v, sizeof(v), 0) == 0;
}

void BpfObject::set_stack_threshold(uint32_t pid, uint16_t op, uint64_t ns) {
  cw_stack_key k{pid, op, 0};
  bpf_map__update_elem(skel_->maps.stack_thresholds, &k, sizeof(k), &ns, sizeof(ns), BPF_ANY);
}

void BpfObject::clear_stack_threshold(uint32_t pid, uint16_t op) {
  cw_stack_key k{pid, op, 0};
  bpf_map__delete_elem(skel_->maps.stack_thresholds, &k, sizeof(k), 0);
}

std::vector<uint64_t> BpfObject::percpu_sums(const bpf_map* counters, uint32_t n) const {
  std::vector<uint64_t> out(n, 0);
  std::vector<uint64_t> percpu(static_cast<size_t>(ncpus_));
  for (uint32_t k = 0; k < n; ++k) {
    if (bpf_map__lookup_elem(counters, &k, sizeof(k), percpu.data(), percpu.size() * sizeof(uint64_t), 0)) continue;
    for (uint64_t v : percpu) out[k] += v;
  }
  return out;
}

std::vector<uint64_t> BpfObject::drops() const { return percpu_sums(skel_->maps.drops, CW_DROP__COUNT); }

std::vector<uint64_t> BpfObject::stack(int32_t id) const {
  std::vector<uint64_t> ips(32, 0);  // CW_STACK_DEPTH in maps.bpf.h
  uint32_t key = static_cast<uint32_t>(id);
  if (id < 0 || bpf_map__lookup_elem(skel_->maps.stacks, &key, sizeof(key), ips.data(), ips.size() * 8, 0)) return {};
  while (!ips.empty() && ips.back() == 0) ips.pop_back();
  return ips;
}

void BpfObject::set_python(uint32_t pid, const cw_py_proc& proc) {
  // Sites already stacked in this process carried no Python frames: stack each once more.
  __atomic_fetch_add(&skel_->bss->cw_site_gen, 1, __ATOMIC_RELEASE);
  bpf_map__update_elem(skel_->maps.py_procs, &pid, sizeof(pid), &proc, sizeof(proc), BPF_ANY);
}

void BpfObject::forget_python(uint32_t pid) { bpf_map__delete_elem(skel_->maps.py_procs, &pid, sizeof(pid), 0); }

std::optional<cw_py_stack> BpfObject::py_stack(uint64_t key) const {
  cw_py_stack s{};
  if (!key || bpf_map__lookup_elem(skel_->maps.py_stacks, &key, sizeof(key), &s, sizeof(s), 0)) return std::nullopt;
  if (s.depth > CW_PY_DEPTH) s.depth = CW_PY_DEPTH;
  return s;
}

std::vector<std::pair<uint32_t, cw_page_agg>> BpfObject::drain_page_agg() {
  std::vector<std::pair<uint32_t, cw_page_agg>> out;
  int fd = bpf_map__fd(skel_->maps.page_agg);
  uint32_t key = 0, next = 0;
  std::vector<uint32_t> keys;
  uint32_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    keys.push_back(next);
    key = next;
    prev = &key;
  }
  for (uint32_t k : keys) {
    cw_page_agg v{};
    // lookup_and_delete is not supported on hash maps by every kernel; a read then delete
    // can lose the few pages allocated in between, which an aggregate tolerates.
    if (bpf_map_lookup_elem(fd, &k, &v) == 0) {
      bpf_map_delete_elem(fd, &k);
      out.emplace_back(k, v);
    }
  }
  return out;
}

int BpfObject::ring_calls_fd() const { return bpf_map__fd(skel_->maps.rb_calls); }
CallAggMaps BpfObject::call_agg_maps() const {
  return {bpf_map__fd(skel_->maps.call_agg), bpf_map__fd(skel_->maps.agg_index), bpf_map__fd(skel_->maps.call_agg_slots)};
}

std::vector<cw_run> BpfObject::open_runs() const {
  std::vector<cw_run> out;
  const int fd = bpf_map__fd(skel_->maps.runs);
  const uint32_t n = bpf_map__max_entries(skel_->maps.runs);
  // In batches: one lookup per entry was 32,768 syscalls at every stop, 0.7 s of it on a loaded
  // 2-core host (the tracer's exit after SIGINT waited on them).
  constexpr uint32_t kRunsBatch = 4096;
  std::vector<uint32_t> keys(kRunsBatch);
  std::vector<cw_run> runs(kRunsBatch);
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  uint32_t at = 0;  // the kernel's position token: for an array, the next index
  for (bool first = true;; first = false) {
    uint32_t count = kRunsBatch;
    const int err = bpf_map_lookup_batch(fd, first ? nullptr : &at, &at, keys.data(), runs.data(), &count, &opts);
    if (err && err != -ENOENT) break;
    for (uint32_t i = 0; i < count; ++i)
      if (runs[i].calls) out.push_back(runs[i]);
    if (err == -ENOENT) return out;  // the last batch
  }
  // A kernel without batch lookups on arrays (before 5.6): one entry at a time.
  out.clear();
  for (uint32_t i = 0; i < n; ++i) {
    cw_run r{};
    if (bpf_map_lookup_elem(fd, &i, &r) == 0 && r.calls) out.push_back(r);
  }
  return out;
}
int BpfObject::ring_host_fd() const { return bpf_map__fd(skel_->maps.rb_host); }
int BpfObject::ring_new_procs_fd() const { return bpf_map__fd(skel_->maps.rb_new_procs); }
int BpfObject::ring_sock_fd() const { return bpf_map__fd(skel_->maps.rb_sock); }

}  // namespace causeway::collector
