// The run-time statistics of the BPF programs a process holds, for the benches that split a
// tracer's cost by program (bench/trace_cost.cpp, bench/sched_hook_cost.cpp).
#pragma once

#include <bpf/bpf.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace causeway::bench {

// The BPF programs a process holds open (its fdinfo "prog_id:" lines), by id.
inline std::vector<uint32_t> bpf_programs_held_by(pid_t pid) {
  std::vector<uint32_t> ids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fdinfo")) {
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("prog_id:", 0) == 0) ids.push_back(static_cast<uint32_t>(std::stoul(line.substr(8))));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

struct BpfProgStat {
  std::string name;
  uint64_t runs = 0, ns = 0, recursion_misses = 0;
};
using BpfProgStats = std::map<uint32_t, BpfProgStat>;  // by program id

// What the kernel counted so far for each of `ids` (a program freed meanwhile is left out).
inline BpfProgStats bpf_prog_stats(const std::vector<uint32_t>& ids) {
  BpfProgStats out;
  for (uint32_t id : ids) {
    const UniqueFd fd(bpf_prog_get_fd_by_id(id));
    if (!fd) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) == 0)
      out[id] = {info.name, info.run_cnt, info.run_time_ns, info.recursion_misses};
  }
  return out;
}

// Run-time statistics on while this lives, through a reference the kernel counts
// (BPF_ENABLE_STATS), not the kernel.bpf_stats_enabled sysctl: two benches measuring at once
// must not switch them off under each other. valid() is false when the kernel refused (errno).
class BpfRunTimeStats {
 public:
  BpfRunTimeStats() : fd_(bpf_enable_stats(BPF_STATS_RUN_TIME)) {}
  bool valid() const { return static_cast<bool>(fd_); }

 private:
  UniqueFd fd_;
};

}  // namespace causeway::bench
