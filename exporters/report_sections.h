// The report's sections as HTML (docs/REPORT.md): the header (hosts, GPUs, session window,
// what was traced, drops), one section per causal chain, the per-op histograms and the
// cross-host table of a merged session. Each takes what diagnosis/ already computed — the chain
// documents of `explain --json`, stats, the tail breakdown — and only draws it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnosis/stats.h"
#include "diagnosis/system_info.h"

namespace causeway {

struct SessionHeader {
  int64_t session_id = 0;
  std::string source_kind, label;  // label untrusted
  int64_t from_ns = 0, to_ns = 0;
  std::string system_line;          // diagnosis/system_info.h, sanitized
  nlohmann::json systems;           // one `system` per host (one for an ordinary session)
  std::optional<uint32_t> pid;      // the report's --pid
};

std::string render_header(const SessionHeader& h, const StatsResult& stats, size_t chains);

// One chain document (docs/INTERFACES.md `explain`), `lanes_html` its swimlanes figure or "".
// `n` numbers it in the report; the section's id is "chain-<n>".
std::string render_chain_section(size_t n, const nlohmann::json& chain, const std::string& lanes_html);

// A merged session: one row per host with its calls and the chains that name it; the host a
// chain names as the straggler (nccl_straggler's culprit, else the most named) is highlighted.
std::string render_hosts_section(const std::vector<HostSpan>& hosts, const StatsResult& stats,
                                 const nlohmann::json& chains);

}  // namespace causeway
