// Readiness for get_check. Prefers the real `causeway check --json` (run as a child of the
// same binary, so the MCP library never links libbpf); when that command is not available
// it runs the checks that need no BPF here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace causeway::mcp {

// {"ready": bool, "source": "causeway check" | "mcp", "checks": [{"name","ok","detail"}],
//  "report": {...} (the full `check --json` document when it ran), "db": served_db(db_path)}
nlohmann::json probe_readiness(const std::string& self_exe, const std::string& db_path);

// The DB this server serves: {"path", "readable", "schema_version", "latest_schema_version",
// "sessions", "latest_session_id"} ("error" when it cannot be opened read-only).
nlohmann::json served_db(const std::string& db_path);

}  // namespace causeway::mcp
