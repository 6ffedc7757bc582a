// The report's inference-requests section (docs/REPORT.md "Requests"), drawn from the document
// `causeway requests --json` returns (docs/INTERFACES.md "Inference requests") and the window's
// per-request latencies: TTFT, ITL and E2E histograms with the tail coloured by cause
// (exporters/report_request_latency.h), the tail's causes, the per-(server, path, tenant)
// table and the slowest requests. Every string in the document came
// from traffic a client chose and is sanitized and escaped here.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "exporters/report_request_latency.h"

namespace causeway {

// What the report asks of the requests reader: the session and window it shows.
struct RequestsScope {
  int64_t session_id = 0;
  std::optional<int64_t> since_ns;
  std::optional<uint32_t> pid;
};

// Returns the `requests --json` document, or nothing when the session served no requests
// (or this build has no request reader). The report shows the section only for a document.
using RequestsProvider = std::function<Result<std::optional<nlohmann::json>>(sqlite3* db, const RequestsScope&)>;

// The <section> (HTML); a document of another shape draws what it can and says what is missing.
// Without samples the latencies are drawn from the document's percentiles alone.
std::string render_requests_section(const nlohmann::json& doc, const RequestSamples& samples = {});

}  // namespace causeway
