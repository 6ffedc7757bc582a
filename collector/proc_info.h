// Identity of a process from /proc (comm, cmdline, exe, cgroup → container id), and small
// host facts for the session row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tracedb/records.h"

namespace causeway::collector {

// Fills comm/cmdline/exe/ppid, the cgroup path and v2 id and the container id from /proc
// (collector/cgroup_paths.h); pid alone when it is gone.
ProcessRecord read_process(uint32_t pid);
std::string read_comm(uint32_t pid, std::optional<uint32_t> tid = std::nullopt);

std::string host_name();
std::string kernel_release();

}  // namespace causeway::collector
