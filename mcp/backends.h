// The MCP server's view of the modules it serves (analysis, sqlguard, synth): thin adapters
// from their results to the JSON documents the tools return.
#pragma once

#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diagnosis/chains.h"
#include "diagnosis/stats.h"
#include "common/result.h"
#include "mcp/cancel.h"

namespace causeway::mcp {

using json = nlohmann::json;

// The `causeway stats --json` document (same builder) for one page of ops: the top_n ops
// from `offset` on; plus "total_ops", and "next_cursor" when more ops follow.
Result<json> stats_document(sqlite3* db, const StatsQuery& query, size_t offset = 0);

// {"chains": [...]} (docs/INTERFACES.md).
Result<json> chains_document(sqlite3* db, const ChainQuery& query);

struct SqlLimits {
  size_t max_rows = 200;
  size_t max_bytes = 64 * 1024;
  int timeout_ms = 5000;
  size_t skip_rows = 0;  // a run_sql cursor: rows of the result already sent
};

// docs/INTERFACES.md `query` shape: {"columns", "rows", "truncated", "elapsed_ms"}. Untrusted SQL
// from the model: read-only, one statement, guarded. Errors name what to change.
Result<json> guarded_query(sqlite3* db, const std::string& sql, const SqlLimits& limits, CancelToken& cancel);

// {"objects": [{"name","type","description","columns":[{"name","type","unit","description"}]}]}
Result<json> schema_document(sqlite3* db);

struct DemoScenario {
  std::string name;
  std::string description;
};
std::vector<DemoScenario> demo_scenario_list();

// Writes a fresh demo session for `scenario` into db_path (a scratch DB, never the served one).
Result<json> write_demo(const std::string& db_path, const std::string& scenario, uint64_t seed);

}  // namespace causeway::mcp
