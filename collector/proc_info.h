// Identity of a process from /proc (comm, cmdline, exe, cgroup → container id), and small
// host facts for the session row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tracedb/records.h"

namespace causeway::collector {

// Fills comm/cmdline/exe/cgroup/container_id/ppid from /proc; pid alone when it is gone.
ProcessRecord read_process(uint32_t pid);
std::string read_comm(uint32_t pid, std::optional<uint32_t> tid = std::nullopt);

// Container id (64-hex docker/containerd/cri-o id, or "pod<uid>/<id>" under kubepods) from
// the text of /proc/PID/cgroup; "" when the process is not in a recognizable container.
std::string container_id_from_cgroup(std::string_view cgroup_text);

std::string host_name();
std::string kernel_release();

}  // namespace causeway::collector
