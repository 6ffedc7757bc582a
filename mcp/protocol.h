// The MCP protocol core: one JSON-RPC message in, at most one response out (plus
// notifications through the exchange). No I/O; every transport wraps this.
//
// Dual era. Legacy clients (2024-11-05 … 2025-11-25) open with `initialize`; we echo their
// version when we support it. Modern clients (2026-07-28) send no handshake: each request
// carries `_meta["io.modelcontextprotocol/protocolVersion"]` (and clientCapabilities), may
// call `server/discover`, and get -32022 for a version we do not speak. In that era the
// handshake methods (initialize, ping, logging/setLevel) are gone: they are unknown methods.
// Over HTTP the request also carries MCP-Protocol-Version / Mcp-Method / Mcp-Name headers
// (SEP-2243) that must agree with the body (-32020 otherwise). Results always carry
// `resultType: "complete"`; list and read results carry cache hints (`ttlMs`, `cacheScope`).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/cancel.h"
#include "mcp/db_pool.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool_registry.h"

namespace causeway::mcp {

inline constexpr const char* kModernVersion = "2026-07-28";
inline constexpr const char* kLatestLegacyVersion = "2025-11-25";
const std::vector<std::string>& legacy_versions();     // newest first
const std::vector<std::string>& supported_versions();  // modern first, then legacy

// The HTTP headers of one request that must agree with its body (absent on stdio).
struct RequestHeaders {
  std::optional<std::string> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string> method;            // Mcp-Method
  std::optional<std::string> name;              // Mcp-Name
};

// One message's round trip. The transport fills the inputs; the core fills what the audit
// log needs.
struct Exchange {
  // Sends a server→client notification tied to this request (progress). May be empty.
  std::function<void(const std::string& line)> notify;
  // Namespaces request ids for cancellation: one per stdio stream / HTTP client.
  std::string scope;
  // stdio drops the response of a cancelled request (the client gave up on it); HTTP must
  // still answer the POST, so it gets a -32800 error instead.
  bool answer_cancelled = false;
  std::optional<RequestHeaders> headers;
  // Outputs.
  std::string method;
  std::string tool;
  std::string protocol_version;  // as declared by the request or the session
  bool modern = false;           // the request declared its version in _meta (2026-07-28 style)
  int rpc_error = 0;             // JSON-RPC error code sent, 0 if none
  // The request was refused before dispatch: malformed envelope, missing _meta, headers that
  // disagree with the body, unsupported version (HTTP answers these 400).
  bool bad_request = false;
  bool tool_error = false;       // a tools/call answered with isError
  bool cancelled = false;        // the request was cancelled while running
  bool notification = false;
};

class Server {
 public:
  Server(ServerConfig config, ToolRegistry tools);

  // Never throws. Returns nullopt for notifications and for client responses.
  std::optional<std::string> handle(std::string_view message, Exchange& ex);

  // The refusal handle() would answer before dispatching (bad envelope, _meta or headers),
  // without running anything: lets a transport pick its response status before it commits to
  // a stream. nullopt when the message would be dispatched.
  std::optional<std::string> refusal(std::string_view message, Exchange& ex) const;

  // Interrupts every running request (shutdown).
  void cancel_all();

  // Where diagnostic lines go (stderr in the CLI; never stdout).
  void set_log(std::function<void(const std::string&)> log) { log_ = std::move(log); }

  const ServerConfig& config() const { return config_; }
  const ToolRegistry& tools() const { return tools_; }

  // Page size of list results (tests lower it to exercise cursors).
  void set_page_size(size_t n) { page_size_ = n ? n : 1; }

 private:
  struct Outcome {
    json result;
    std::optional<RpcError> error;
  };
  std::optional<RpcError> check_envelope(const Message& m, Exchange& ex) const;
  Outcome dispatch(const Message& m, Exchange& ex);
  Outcome initialize(const json& params, Exchange& ex);
  Outcome discover();
  Outcome list_page(const json& params, const json& items, const char* key);
  Outcome call_tool(const Message& m, Exchange& ex);
  Outcome get_prompt(const json& params);
  std::optional<uint64_t> requests_served();
  Outcome read_resource(const json& params, bool modern);
  void cancel_request(const std::string& scope, const json& request_id);
  json list_tools() const;

  ServerConfig config_;
  ToolRegistry tools_;
  DbPool pool_;
  size_t page_size_ = 50;
  std::function<void(const std::string&)> log_;

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<CancelToken>> running_;  // scope|id → token
  std::string log_level_ = "info";
};

}  // namespace causeway::mcp
