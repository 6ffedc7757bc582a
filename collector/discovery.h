// Finds the processes that map libcudart / libcuda / libnccl (any path: venvs, conda, wheels)
// by scanning /proc/*/maps, so the collector attaches once per library file and knows which
// processes to follow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collector/probe_table.h"

namespace causeway::collector {

struct FoundLib {
  uint32_t pid = 0;
  LibKind kind;
  std::string path;       // as mapped inside the process
  std::string open_path;  // openable from here: /proc/PID/map_files/<range> (the mapped file itself)
  uint64_t dev = 0, inode = 0;
};

// Libraries mapped by one process (empty when it has none or is gone).
std::vector<FoundLib> scan_process(uint32_t pid);
// Every process on the host; `only` restricts to those pids when non-empty.
std::vector<FoundLib> scan_all(const std::vector<uint32_t>& only = {});
std::vector<uint32_t> list_pids();

}  // namespace causeway::collector
