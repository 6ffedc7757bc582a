// Identity of a process from /proc (comm, cmdline, exe, cgroup → container id), and small
// host facts for the session row.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tracedb/records.h"

namespace causeway::collector {

// Fills comm/cmdline/exe/ppid, the cgroup path and v2 id and the container id from /proc
// (collector/cgroup_paths.h); pid alone when it is gone.
ProcessRecord read_process(uint32_t pid);
std::string read_comm(uint32_t pid, std::optional<uint32_t> tid = std::nullopt);
// The parent pid from /proc/PID/status; nullopt when the process is gone.
std::optional<uint32_t> read_ppid(uint32_t pid);

// The processes now below `roots` (children, theirs, ...) among `pids` (the host's, from
// list_pids()), by each one's parent: what `trace --pid` must take at the start, since the
// kernel side only follows forks made while traced (a server's workers already running).
std::set<uint32_t> descendants_of(const std::set<uint32_t>& roots, const std::vector<uint32_t>& pids);

std::string host_name();
std::string kernel_release();

}  // namespace causeway::collector
