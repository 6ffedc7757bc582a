// JSON-RPC 2.0 wire layer: parsing one message and building responses. No MCP semantics here
// (those live in protocol.*), no I/O (transports own that).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace causeway::mcp {

using json = nlohmann::json;

// JSON-RPC 2.0 codes plus the MCP 2026-07-28 codes (header mismatch, unsupported version).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kUnsupportedProtocolVersion = -32022;
inline constexpr int kRequestCancelled = -32800;

struct RpcError {
  int code = kInternalError;
  std::string message;
  json data;  // null = omitted
};

struct Message {
  json id;             // null for notifications
  bool notification = false;
  bool response = false;  // a response from the client (we send no requests; ignored)
  std::string method;
  json params;         // object or null
};

// A parse failure carries the id when one could be read, so the error can echo it.
struct ParseFailure {
  RpcError error;
  json id;
};

std::variant<Message, ParseFailure> parse_message(std::string_view text);

// Serializers produce one line (no newlines inside: strings escape them). Invalid UTF-8 in
// any string is replaced, never thrown on.
std::string dump_compact(const json& value);
std::string make_result(const json& id, json result);
std::string make_error_response(const json& id, const RpcError& error);
std::string make_notification(const std::string& method, json params);

}  // namespace causeway::mcp
