#include "mcp/jsonrpc.h"

#include "common/untrusted_json.h"

namespace causeway::mcp {
namespace {

ParseFailure invalid(std::string message, json id = nullptr) {
  return ParseFailure{RpcError{kInvalidRequest, std::move(message), nullptr}, std::move(id)};
}

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

}  // namespace

std::variant<Message, ParseFailure> parse_message(std::string_view text) {
  // Depth-limited: params are copied and later dumped, both recursive in nlohmann.
  auto parsed = parse_untrusted_json(text);
  if (!parsed) return ParseFailure{RpcError{kParseError, "Parse error: " + parsed.error().message, nullptr}, nullptr};
  json doc = std::move(*parsed);
  if (doc.is_array()) return invalid("Invalid Request: JSON-RPC batches are not supported (MCP removed them)");
  if (!doc.is_object()) return invalid("Invalid Request: a message must be a JSON object");

  json id = doc.contains("id") ? doc["id"] : json(nullptr);
  if (doc.contains("id") && !valid_id(id)) return invalid("Invalid Request: id must be a string or an integer");
  auto jsonrpc = doc.find("jsonrpc");
  if (jsonrpc == doc.end() || *jsonrpc != "2.0") return invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"", id);

  Message m;
  m.id = id;
  auto method = doc.find("method");
  if (method == doc.end()) {
    if (doc.contains("result") || doc.contains("error")) {
      m.response = true;
      return m;
    }
    return invalid("Invalid Request: missing \"method\"", id);
  }
  if (!method->is_string()) return invalid("Invalid Request: \"method\" must be a string", id);
  m.method = method->get<std::string>();
  m.notification = !doc.contains("id");
  auto params = doc.find("params");
  if (params != doc.end()) {
    if (!params->is_object() && !params->is_array() && !params->is_null())
      return invalid("Invalid Request: \"params\" must be an object", id);
    m.params = *params;
  }
  return m;
}

std::string dump_compact(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string make_result(const json& id, json result) {
  return dump_compact(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string make_error_response(const json& id, const RpcError& error) {
  json e = {{"code", error.code}, {"message", error.message}};
  if (!error.data.is_null()) e["data"] = error.data;
  return dump_compact(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}});
}

std::string make_notification(const std::string& method, json params) {
  return dump_compact(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

}  // namespace causeway::mcp
