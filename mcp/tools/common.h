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

// Where a page starts: tools hand out `next_cursor` ("o:<offset>") and take it back as
// `cursor`, like the protocol's list pagination.
inline Result<size_t> cursor_offset(const json& args) {
  if (!args.contains("cursor")) return size_t{0};
  const std::string c = args["cursor"].get<std::string>();
  if (c.size() < 3 || c.size() > 12 || c.rfind("o:", 0) != 0 || c.find_first_not_of("0123456789", 2) != std::string::npos)
    return make_error("invalid_argument", "cursor: pass back next_cursor from the previous answer unchanged");
  return static_cast<size_t>(std::stoull(c.substr(2)));
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
