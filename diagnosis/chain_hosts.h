// Names hosts in the typed chains (diagnosis/chain_view.h Doc) before they are written: every
// culprit gains `host` (the session's host; in a merged session the host its pid belongs to,
// with `host_pid`, its pid there). An nccl_straggler
// chain also says how the late rank's rank was learned and, in a merged session, which hosts
// the waiting ranks are on — the cross-host straggler of docs/FLEET.md.
#pragma once

#include <sqlite3.h>

#include <vector>

#include "diagnosis/chain_view.h"
#include "common/result.h"

namespace causeway {

// Also names each culprit's tenant (cgroup, container, pod: diagnosis/tenants.h).
Result<void> annotate_hosts_and_ranks(std::vector<Doc>& chains, sqlite3* db, const CorrelatorState& s);

}  // namespace causeway
