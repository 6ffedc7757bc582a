// Reading diagnosed causal chains back from the trace DB (written by the correlator).
// Shared by `causeway explain` and MCP get_causal_chains; JSON shape of docs/INTERFACES.md.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway {

struct ChainQuery {
  std::optional<int64_t> since_ns;   // chains overlapping [end - since, end]
  std::optional<uint32_t> pid;       // chains whose victim or culprit is this pid
  std::optional<std::string> min_severity;  // HIGH | MEDIUM | LOW: at least this severe
  std::optional<int64_t> session_id; // default: the latest session
  size_t limit = 20;
};

// {"chains": [ {id, severity, cause, summary, pid, comm, op, calls, p50_us, p99_us,
//   slow_share, culprit?, evidence, timeline, stack, recommendation}, … ]}, request-level
// chains first, then most severe first.
Result<nlohmann::json> load_chains(sqlite3* db, const ChainQuery& query);

// HIGH 3, MEDIUM 2, LOW 1, anything else 0: severities compare as numbers.
int severity_rank(std::string_view severity);

// Root cause first: request-level chains (docs/INFERENCE.md "Request chains": what a served
// session's users waited for) before call-level ones, then by severity, then within a
// severity the chain that lost the most wall time (`impact`).
// `explain` and the MCP chains tool rank fleet chains (unsorted from the store) this way.
void rank_chains(nlohmann::json& chains);

}  // namespace causeway
