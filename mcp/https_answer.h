// The answer of the HTTPS transport (the handler, in the MCP go-sdk's handler/middleware
// split): one POSTed JSON-RPC message through the protocol core, answered as JSON (200, or 400 /
// 404 for refusals as the 2026-07-28 revision maps them), as 202 with no body (a notification or
// a client's response), or as an SSE stream when a tools/call asks for progress and the client
// accepts text/event-stream. No cpp-httplib here: mcp/transport_https.cpp writes what this
// decides. The request gate before it: mcp/https_admission.h. docs/MCP.md (HTTPS).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "mcp/protocol.h"

namespace causeway::mcp {

// What the audit line of the request says of its JSON-RPC message.
struct AnswerFacts {
  std::string rpc_method;
  std::string tool;
  int rpc_error = 0;
  bool tool_error = false;
};

struct JsonAnswer {
  int status = 200;
  std::optional<std::string> body;  // nullopt: 202, no body
};

class McpAnswer {
 public:
  explicit McpAnswer(Server& server) : server_(server) {}

  // Whether the answer is an SSE stream: a tools/call with a progress token, from a client that
  // accepts text/event-stream.
  static bool streams(const std::string& body, std::string_view accept);

  // The message answered as JSON. `scope` namespaces its request id (the client's address).
  JsonAnswer reply_json(const std::string& body, const std::string& scope, const RequestHeaders& headers, AnswerFacts& facts);

  // Before a stream: the 400 JSON answer of a request refused before dispatch (not a stream).
  std::optional<std::string> stream_refusal(const std::string& body, const RequestHeaders& headers, AnswerFacts& facts);
  // The stream: each progress notification, then the result, as one `send(line)` each.
  void stream(const std::string& body, const std::string& scope, const RequestHeaders& headers,
              const std::function<void(const std::string&)>& send, AnswerFacts& facts);

  // "event: message\ndata: LINE\n\n": one SSE event.
  static std::string sse_event(const std::string& line);

 private:
  std::optional<std::string> handle(const std::string& body, Exchange& ex, AnswerFacts& facts);
  Server& server_;
};

}  // namespace causeway::mcp
