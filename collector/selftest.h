// `causeway selftest`: traces a built-in workload (a child process calling a probed function
// in causeway itself, sleeping and doing fsync'ed writes) end to end through the real BPF
// path into the DB, checks what came back, and stores the verdict in test_reports.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace causeway::collector {

struct SelftestReport {
  bool ok = false;
  std::string summary;
  nlohmann::json doc;  // {"checks": [{"name","ok","detail"}], "numbers": {...}}
};

Result<SelftestReport> run_selftest(const std::string& db_path);

}  // namespace causeway::collector
