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
  std::string store;                // the fleet store's URL; "" for a trace DB session
  size_t host_sessions = 0;         // the fleet: host sessions in the store
};

// A row of the hosts table: a merged session's host, or a host session of the fleet store.
struct HostRow {
  std::string name;                 // untrusted
  nlohmann::json system;            // its `system` document
  uint64_t calls = 0, total_ns = 0; // in the window
  size_t chains = 0;                // chains whose culprit is on it
  bool straggler = false;
};

std::string render_header(const SessionHeader& h, const StatsResult& stats, size_t chains);

// One chain document (docs/INTERFACES.md `explain`), `lanes_html` its swimlanes figure or "".
// `n` numbers it in the report; the section's id is "chain-<n>".
std::string render_chain_section(size_t n, const nlohmann::json& chain, const std::string& lanes_html);

// A merged session's rows: its hosts with their calls and the chains that name them (by the
// culprit's pid); the straggler is nccl_straggler's culprit's host, else the most named.
std::vector<HostRow> merged_host_rows(const std::vector<HostSpan>& hosts, const StatsResult& stats,
                                      const nlohmann::json& chains);

// The fleet's rows: each host's calls (`op_hosts[i]` is the host of stats.ops[i]) and the
// chains whose culprit.host it is; the straggler as above.
std::vector<HostRow> fleet_host_rows(const nlohmann::json& hosts, const StatsResult& stats,
                                     const std::vector<std::string>& op_hosts, const nlohmann::json& chains);

// The hosts table, the straggler highlighted.
std::string render_hosts_section(const std::vector<HostRow>& rows);

}  // namespace causeway
