// A distributed job's rank from what its launcher put in the process environment, for ranks
// whose ncclCommInitRank ran before the trace started. /proc/PID/environ is written by the
// traced process: it is parsed strictly (exact names, decimal digits only, rank < world size,
// job ids of a small safe alphabet) and anything else is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tracedb/records.h"

namespace causeway::collector {

// environ: NUL-separated NAME=VALUE entries (the text of /proc/PID/environ).
std::optional<LauncherRank> launcher_rank_from_environ(std::string_view environ);

// Reads /proc/PID/environ (needs root or the same user); nullopt when unreadable or no rank.
std::optional<LauncherRank> read_launcher_rank(uint32_t pid);

}  // namespace causeway::collector
