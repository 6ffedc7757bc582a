// Which tenant a process belongs to (docs/DIAGNOSIS.md "Tenants"): its cgroup path and, when
// the path is a container's, the container id and Kubernetes pod uid. From the cgroup v2 id
// the BPF side recorded for its threads (resolved by the collector into `cgroups`: still known
// for a culprit that lived 10 ms), else from /proc/PID/cgroup as read at discovery
// (`processes.cgroup_path`: the v1 path on a hybrid host whose v2 tree is flat).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/result.h"

namespace causeway {

struct Tenant {
  std::string cgroup;                    // "" when unknown; untrusted
  std::optional<std::string> container;  // untrusted
  std::optional<std::string> pod;        // untrusted
};

class Tenants {
 public:
  // A DB written before schema 5 has no cgroup ids: tenants then come from processes only.
  static Result<Tenants> load(sqlite3* db, int64_t session_id);
  Tenant of(uint32_t pid) const;

 private:
  std::unordered_map<uint32_t, Tenant> by_pid_;
};

}  // namespace causeway
