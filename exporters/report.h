// `causeway report`: one self-contained HTML file of a session (docs/REPORT.md): the header,
// each causal chain with its swimlanes, per-op latency histograms with the tail coloured by
// cause, the hosts of a merged session (or of the fleet store) and, when requests were served,
// their latency. Drawn from a ReportSource: a trace DB session or the fleet store, through the
// same readers as `explain --json` / `stats` / MCP get_tail_breakdown
// (diagnosis/): the report draws, it does not diagnose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "exporters/report_requests.h"
#include "exporters/report_source.h"

namespace causeway {

struct ReportOptions {
  std::string db_path;
  std::string out_path;               // "-" = stdout
  std::optional<int64_t> since_ns;
  std::optional<uint32_t> pid;
  std::optional<int64_t> session_id;  // default: the latest
  size_t max_chains = 10;             // chains drawn (most severe first)
  size_t max_ops = 24;                // op histograms (largest total time first)
  RequestsProvider requests;          // empty: no requests section
};

struct ReportSummary {
  std::string origin;                 // ReportSource::origin(): "session 3", "the fleet store at URL"
  size_t chains = 0, swimlanes = 0, histograms = 0, hosts = 0;
  bool requests = false;
  uint64_t bytes = 0;
  double seconds = 0;
};

// The page from any source (exporters/report_source.h); only out_path, max_chains and
// max_ops of `options` apply (the source has its own scope).
Result<ReportSummary> write_report(ReportSource& source, const ReportOptions& options);

// A trace DB session's page (exporters/report_sqlite_source.h).
Result<ReportSummary> write_report(const ReportOptions& options);

}  // namespace causeway
