// In-process driving of the MCP core for unit tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mcp/protocol.h"

namespace causeway::test {

inline mcp::Server make_mcp_server(const std::string& db_path, const std::string& scratch = "") {
  mcp::ServerConfig c;
  c.db_path = db_path;
  c.scratch_dir = scratch;
  return mcp::Server(c, mcp::builtin_tools());
}

// Sends one message; returns the parsed response (null json when none was sent).
inline nlohmann::json rpc(mcp::Server& s, const nlohmann::json& message, std::vector<nlohmann::json>* notes = nullptr,
                          const std::string& scope = "test") {
  mcp::Exchange ex;
  ex.scope = scope;
  if (notes) ex.notify = [notes](const std::string& line) { notes->push_back(nlohmann::json::parse(line)); };
  auto reply = s.handle(message.dump(), ex);
  return reply ? nlohmann::json::parse(*reply) : nlohmann::json();
}

inline nlohmann::json call_tool(mcp::Server& s, const std::string& name, const nlohmann::json& args, int id = 1) {
  return rpc(s, {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", name}, {"arguments", args}}}});
}

}  // namespace causeway::test
