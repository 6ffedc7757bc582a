// Session's discovery: libraries found in the traced processes' maps (attached once each),
// the processes and threads they belong to (a `processes` / `threads` row each), and the
// CPython runtimes whose frames the stacks read.
#include "collector/session_internal.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "collector/clock.h"
#include "collector/discovery.h"
#include "collector/early_maps.h"
#include "collector/probe_table.h"
#include "collector/proc_info.h"
#include "collector/proc_maps.h"

namespace causeway::collector {

bool Session::pid_allowed(uint32_t pid) const { return o_.pids.empty() || allowed_.count(pid); }

// " in 3.1 ms, multi-uprobe links …": when the probes of a library went live, and how.
std::string Session::attach_time_text(const AttachedLib& lib, const BpfObject& bpf) {
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f", static_cast<double>(lib.attach_us) / 1000.0);
  return std::string(" in ") + ms + " ms, " + link_kind_name(bpf.link_kind());
}

void Session::rescan(const std::vector<uint32_t>& only) {
  std::vector<uint32_t> pids = only;
  if (!o_.pids.empty() && pids.empty()) pids.assign(allowed_.begin(), allowed_.end());
  if (only.empty()) ++discovery_.full_rescans;
  else discovery_.pid_rescans += only.size();
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
}

// The kernel tells each executable mapping (collector/mmap_watch.h); a CUDA library's names
// its process, whose maps are read then: a library dlopen()ed at any time is attached
// within a drain round, and no process is rescanned for nothing. Lost mappings (a ring
// overflowed) name no process: every process is rescanned at once.
void Session::take_new_mappings() {
  if (!mmap_watch_) return;
  const uint64_t lost_before = mmap_watch_->lost();
  std::vector<uint32_t> pids;
  for (const ExecMapping& m : mmap_watch_->take([](std::string_view path) { return lib_kind_of(base_name(path)).has_value(); }))
    if (std::find(pids.begin(), pids.end(), m.pid) == pids.end() && pid_allowed(m.pid)) pids.push_back(m.pid);
  if (mmap_watch_->lost() != lost_before) {
    say("the kernel dropped " + std::to_string(mmap_watch_->lost() - lost_before) + " mapping records: rescanning every process");
    rescan({});
    return;
  }
  if (!pids.empty()) rescan(pids);
}

// With the kernel telling mappings and listens, /proc is read in full only as a safety net:
// an event lost to a full ring, a listener handed over a Unix socket (no listen() in its
// new holder). Without the mmap watch or the exec/fork/listen tracepoints, every second.
int64_t Session::slow_rescan_interval() const {
  return by_events() ? std::max(o_.rescan_interval_ns, o_.event_rescan_interval_ns) : o_.rescan_interval_ns;
}

void Session::ensure_process(uint32_t pid, int64_t ts, std::optional<uint32_t> ppid) {
  auto [it, inserted] = known_.try_emplace(pid, Known{ts, ts});
  if (!inserted) {
    it->second.last_ns = std::max(it->second.last_ns, ts);
    return;
  }
  if (pid_allowed(pid)) joined_.push_back(pid);  // its listeners (and its ancestors') looked at
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

}  // namespace causeway::collector
