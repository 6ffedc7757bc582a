// Where the report's data comes from (docs/REPORT.md "Sources"): one renderer, two sources.
// A trace DB session (exporters/report_sqlite_source.cpp) and the ClickHouse fleet store
// (fleet/fleet_report.cpp) each answer the same questions; exporters/report.cpp draws the
// answers and never knows which one it asked.
//   ReportSource: the header, every chain (request-level and call-level, ranked as `explain`
//     ranks them), the hosts table, the requests document and the per-op histograms.
//   LaneSource: the rows of one host's session a chain's swimlanes are drawn from (sched,
//     wakeups, calls, the worst claimed call, the slowed requests), bounded by the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "diagnosis/stats.h"
#include "diagnosis/thread_timeline.h"  // SchedRow
#include "exporters/report_histogram.h"
#include "exporters/report_request_latency.h"
#include "exporters/report_sections.h"

namespace causeway {

// A call or host event in a window, its op resolved.
struct CallRow {
  int64_t ts = 0, dur = 0;
  uint32_t pid = 0, tid = 0;
  std::string op, source;  // untrusted op name
};

// The call_causes row of a chain that lost the most (a gap row: the stall before the call).
struct ClaimedCall {
  uint32_t pid = 0, tid = 0;
  int64_t ts = 0, dur = 0, lost = 0;
  bool gap = false;
  std::string op;  // untrusted
};

// One served request's span (requests table), for a request chain's timeline. TTFT counts
// from the read that completed the request (end_ns), E2E from its start (docs/INFERENCE.md):
// the columns after request_id, server_pid and start_ns that give `end` and `first_token`
// (SQL both SQLite and ClickHouse read).
inline constexpr const char* kRequestSpanColumns =
    "coalesce(start_ns + e2e_ns, last_byte_ns, end_ns), coalesce(end_ns + ttft_ns, first_token_ns)";
struct RequestSpan {
  std::string id;  // the client's x-request-id: untrusted
  uint32_t server_pid = 0;
  int64_t start = 0, end = 0;             // the request read begins; the response completes
  std::optional<int64_t> first_token;     // the first SSE event written
};

class LaneSource {
 public:
  virtual ~LaneSource() = default;
  virtual Result<std::optional<ClaimedCall>> worst_claim(const std::string& chain_id) = 0;
  // The longest call of `op` by `pid` in [from, to]: the focus of a chain nothing claimed
  // (the fleet's cross-host straggler).
  virtual Result<std::optional<ClaimedCall>> longest_call(uint32_t pid, const std::string& op, int64_t from, int64_t to) = 0;
  virtual Result<std::vector<SchedRow>> sched(int64_t from, int64_t to, size_t limit) = 0;
  // The thread's last switch in [since, before).
  virtual Result<std::optional<SchedRow>> prior_switch(uint32_t tid, int64_t before, int64_t since) = 0;
  virtual Result<std::vector<int64_t>> wakeups(uint32_t tid, int64_t from, int64_t to, size_t limit) = 0;
  // Calls and events of pid_a or pid_b starting in [from, to], by start.
  virtual Result<std::vector<CallRow>> calls(int64_t from, int64_t to, uint32_t pid_a, uint32_t pid_b, size_t limit) = 0;
  // The named requests (at most `ids`' size), by start.
  virtual Result<std::vector<RequestSpan>> requests(const std::vector<std::string>& ids) = 0;
  // The thread's (else its process's) name, untrusted; "" when the trace has none.
  virtual std::string comm(uint32_t pid, uint32_t tid) = 0;
  // The host whose rows these are ("" for a trace DB session: one host or a merged one).
  virtual std::string host() const { return ""; }
};

struct ReportScope {
  std::optional<int64_t> since_ns;
  std::optional<uint32_t> pid;
  size_t max_ops = 24;
};

class ReportSource {
 public:
  virtual ~ReportSource() = default;
  virtual Result<SessionHeader> header(const StatsResult& stats) = 0;
  virtual Result<StatsResult> stats() = 0;
  // Every chain, request-level first, ranked (diagnosis/chains.h rank_chains).
  virtual Result<nlohmann::json> chains() = 0;
  // One row per host (a merged session, the fleet); empty: no hosts section.
  virtual Result<std::vector<HostRow>> hosts(const StatsResult& stats, const nlohmann::json& chains) = 0;
  // The `requests --json` document; nothing when no requests were served (or shipped).
  virtual Result<std::optional<nlohmann::json>> requests() = 0;
  // The window's per-request latencies for the requests histograms; empty where the source
  // has only the document's percentiles (the section then draws those).
  virtual Result<RequestSamples> request_samples() { return RequestSamples{}; }
  // The rows of the host a chain is drawn on; null when that host's rows are not here.
  virtual Result<LaneSource*> lanes_for(const nlohmann::json& chain) = 0;
  // The drawn histograms (at most scope.max_ops, largest total time first), and the tail's
  // quantile they colour.
  virtual Result<std::vector<OpHistogram>> histograms(const StatsResult& stats) = 0;
  virtual double tail_quantile() const { return 0.99; }
  // Says where the page came from, for its footer: "session 3", "the fleet store at URL".
  virtual std::string origin() const = 0;
};

}  // namespace causeway
