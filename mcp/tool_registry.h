// One registry of tools, served by every transport. A tool is its embedded schema document
// (schemas/tools/<name>.json: name, title, description, inputSchema, outputSchema) plus a
// handler that returns structuredContent and a compact text rendering.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "mcp/cancel.h"
#include "mcp/check_probe.h"
#include "mcp/db_pool.h"

namespace causeway::mcp {

using json = nlohmann::json;

// Response budget: what a small local model can take in one tool result, counted in bytes of
// the serialized tools/call result (text and structuredContent together, docs/MCP.md "Tools").
struct Limits {
  size_t max_rows = 200;             // run_sql rows, list entries
  size_t max_reply_bytes = 64 * 1024;
  size_t max_text_bytes = 8 * 1024;  // the text's share (describe_schema takes three shares)
  int sql_timeout_ms = 5000;
  // The result's envelope around text and structuredContent: {"content":[{"type":"text",
  // "text":""}],"structuredContent":…,"isError":false} is 77 bytes; the rest is slack.
  static constexpr size_t kEnvelopeBytes = 256;
  // What structuredContent may take beside a text of at most text_bytes.
  size_t structured_bytes(size_t text_bytes) const { return max_reply_bytes - text_bytes - kEnvelopeBytes; }
  size_t structured_bytes() const { return structured_bytes(max_text_bytes); }
};

struct ServerConfig {
  std::string db_path;
  // The collector's checks for get_check, handed in by the binary (cli/cmd_mcp.cpp; mcp never
  // links libbpf); empty: only the checks that need no BPF (mcp/check_probe.h).
  HostCheck host_check;
  std::string scratch_dir;   // where run_demo writes its separate DB; "" = a temp folder
  size_t db_connections = 8; // read-only connections shared by concurrent requests
  Limits limits;
  // `mcp --fleet`: tools read the ClickHouse fleet store (mcp/fleet_tools.h) and nothing reads
  // db_path; resources, which describe one host's DB, answer that they need one.
  bool fleet = false;
};

struct ToolContext {
  DbPool& pool;
  const ServerConfig& config;
  CancelToken& cancel;
  // Reports progress (no-op when the client gave no progressToken).
  std::function<void(double progress, double total, const std::string& message)> progress;
};

struct ToolOutput {
  json structured;   // validates against the tool's outputSchema; never empty
  std::string text;  // compact rendering for the model
};

using ToolHandler = std::function<Result<ToolOutput>(const json& args, ToolContext& ctx)>;

struct ToolDef {
  json spec;  // the schema document
  ToolHandler handler;
  const std::string name() const { return spec.at("name").get<std::string>(); }
};

class ToolRegistry {
 public:
  // Parses the embedded schema document; throws on a malformed one (a build defect).
  void add(const char* schema_document, ToolHandler handler);
  const ToolDef* find(const std::string& name) const;
  // Serves tool `name` (its schema unchanged) with another handler: `mcp --fleet` keeps the
  // local tool list and schemas and swaps what answers them.
  void set_handler(const std::string& name, ToolHandler handler);
  const std::vector<ToolDef>& tools() const { return tools_; }
  // The tools/list entry: name, title, description, schemas, annotations (readOnlyHint).
  static json list_entry(const ToolDef& tool);

 private:
  std::vector<ToolDef> tools_;
};

// Every built-in tool: one per file mcp/tools/<name>.cpp (generated list, see CMakeLists.txt).
ToolRegistry builtin_tools();

}  // namespace causeway::mcp

// Declares the built-in tool `name` once: its schema document schemas/tools/<name>.json
// (name, title, description, input and output schemas, idempotency) and its handler. Used
// once at global scope at the end of mcp/tools/<name>.cpp.
#define CAUSEWAY_TOOL(name, handler)                                                      \
  namespace causeway {                                                                    \
  extern const char* const kToolSchema_##name;                                            \
  }                                                                                       \
  namespace causeway::mcp::tools {                                                        \
  void register_##name(ToolRegistry& r) { r.add(::causeway::kToolSchema_##name, handler); } \
  }
