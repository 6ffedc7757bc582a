// The report's data from one trace DB session (docs/REPORT.md "Sources"): the readers
// `explain`, `stats` and `get_tail_breakdown` use (diagnosis/), the DB opened read-only.
#pragma once

#include <memory>
#include <string>

#include "exporters/report_requests.h"
#include "exporters/report_source.h"

namespace causeway {

struct SqliteReportOptions {
  std::string db_path;
  std::optional<int64_t> session_id;  // default: the latest
  ReportScope scope;
  RequestsProvider requests;          // empty: no requests section
};

// Errors: the DB's (missing, not a trace DB) and "no_data" (no such session).
Result<std::unique_ptr<ReportSource>> open_sqlite_report_source(const SqliteReportOptions& o);

}  // namespace causeway
