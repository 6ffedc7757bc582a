// Readiness for get_check, answered inside the server process. The full `causeway check` runs
// the collector's checks (a trial BPF load, probe attach), which the MCP library must not link
// (it never links libbpf): the binary hands them in as a HostCheck (cli/cmd_mcp.cpp). Without
// one (unit tests, a build without the collector) only the checks that need no BPF run here.
// The served DB is read through the server's connection pool, never opened beside it.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "mcp/db_pool.h"

namespace causeway::mcp {

// The `causeway check --json` document ({"ready", "checks": [{name, status, detail, remedy}]})
// for the DB at the given path.
using HostCheck = std::function<nlohmann::json(const std::string& db_path)>;

// {"ready": bool, "source": "causeway check" | "mcp", "checks": [{"name","ok","detail"}],
//  "report": {...} (the full check document when host_check ran), "db": served_db(pool)}
nlohmann::json probe_readiness(const HostCheck& host_check, DbPool& pool);

// The DB this server serves: {"path", "readable", "schema_version", "latest_schema_version",
// "sessions", "latest_session_id"} ("error" when it cannot be opened read-only).
nlohmann::json served_db(DbPool& pool);

}  // namespace causeway::mcp
