// Which host a session (or, in a merged session, a process) ran on: the `system` object of
// stats and the host named in chains (docs/TRACEDB.md "System identity", docs/FLEET.md).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "tracedb/merge.h"

namespace causeway {

struct HostSpan {
  int64_t pid_base = 0;
  std::string host;
  nlohmann::json system;
};

// The session's `system` document; sessions written before schema 3 (or imports) give what
// the row has, with null for what was not recorded.
Result<nlohmann::json> load_session_system(sqlite3* db, int64_t session_id);

// One line for people: "host gpu-node-01: kernel 6.8.0, 64 CPUs (model), 512 GiB, 8 GPUs
// (driver 550.54.15)"; a merged session lists its hosts. Untrusted text is sanitized.
std::string system_line(sqlite3* db, int64_t session_id);

// A merged session's hosts (empty for an ordinary session).
Result<std::vector<HostSpan>> load_merged_hosts(sqlite3* db, int64_t session_id);

// The host of pid: its merged host, else the session's host.
class HostOfPid {
 public:
  static Result<HostOfPid> load(sqlite3* db, int64_t session_id);
  std::string host(int64_t pid) const;
  int64_t host_pid(int64_t pid) const;  // the pid on its own host
  bool merged() const { return !spans_.empty(); }
  const std::vector<HostSpan>& spans() const { return spans_; }

 private:
  std::string session_host_;
  std::vector<HostSpan> spans_;
  const HostSpan* span_of(int64_t pid) const;
};

}  // namespace causeway
