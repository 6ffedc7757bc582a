// Argument helpers shared by the tool handlers (arguments are already schema-validated).
#pragma once

#include <optional>
#include <string>

#include "common/units.h"
#include "mcp/tool_registry.h"

namespace causeway::mcp::tools {

inline Result<std::optional<int64_t>> duration_arg(const json& args, const char* key) {
  if (!args.contains(key)) return std::optional<int64_t>{};
  auto ns = parse_duration_ns(args[key].get<std::string>());
  if (!ns) return make_error("invalid_argument", std::string(key) + ": " + ns.error().message + " (examples: 500ms, 30s, 5m, 2h)");
  return std::optional<int64_t>{ns.value()};
}

inline std::optional<uint32_t> pid_arg(const json& args) {
  if (!args.contains("pid")) return std::nullopt;
  return static_cast<uint32_t>(args["pid"].get<int64_t>());
}

inline std::optional<std::string> string_arg(const json& args, const char* key) {
  if (!args.contains(key)) return std::nullopt;
  return args[key].get<std::string>();
}

// A read-only connection to the served DB, attached to the request's cancel token.
inline Result<DbLease> open_db(ToolContext& ctx) {
  auto lease = ctx.pool.acquire();
  if (!lease) {
    Error e = lease.error();
    if (e.code == "db_missing") {
      if (!e.message.empty() && e.message.back() != '.') e.message += '.';
      e.message += " To see what a diagnosis looks like meanwhile, call run_demo.";
    }
    return e;
  }
  return lease;
}

}  // namespace causeway::mcp::tools
