// Readiness for get_check. Prefers the real `causeway check --json` (run as a child of the
// same binary, so the MCP library never links libbpf); when that command is not available
// it runs the checks that need no BPF here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace causeway::mcp {

// {"ready": bool, "source": "causeway check" | "mcp", "checks": [{"name","ok","detail"}],
//  "report": {...} (the full `check --json` document when it ran)}
nlohmann::json probe_readiness(const std::string& self_exe, const std::string& db_path);

}  // namespace causeway::mcp
