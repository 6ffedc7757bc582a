#include "mcp/https_answer.h"

#include "common/untrusted_json.h"
#include "mcp/https_admission.h"
#include "mcp/jsonrpc.h"

namespace causeway::mcp {

bool McpAnswer::streams(const std::string& body, std::string_view accept) {
  if (body.find("progressToken") == std::string::npos) return false;
  json doc = parse_untrusted_json_or_null(body);
  const bool progress = doc.is_object() && doc.value("method", "") == "tools/call" && doc.contains("params") &&
                        doc["params"].is_object() && doc["params"].contains("_meta") && doc["params"]["_meta"].is_object() &&
                        doc["params"]["_meta"].contains("progressToken");
  return progress && https_lower(std::string(accept)).find("text/event-stream") != std::string::npos;
}

std::optional<std::string> McpAnswer::handle(const std::string& body, Exchange& ex, AnswerFacts& facts) {
  ex.answer_cancelled = true;
  auto reply = server_.handle(body, ex);
  facts.rpc_method = ex.method;
  facts.tool = ex.tool;
  facts.rpc_error = ex.rpc_error;
  facts.tool_error = ex.tool_error;
  return reply;
}

JsonAnswer McpAnswer::reply_json(const std::string& body, const std::string& scope, const RequestHeaders& headers,
                           AnswerFacts& facts) {
  Exchange ex{.scope = scope, .headers = headers};
  auto reply = handle(body, ex, facts);
  if (!reply) return JsonAnswer{202, std::nullopt};  // notification or client response: accepted, no body
  // 2026-07-28 maps refusals onto HTTP statuses; legacy clients read every answer from a 200
  // (a 404 means "session expired" to them).
  const int status = ex.bad_request ? 400 : (ex.modern && ex.rpc_error == kMethodNotFound) ? 404 : 200;
  return JsonAnswer{status, std::move(reply)};
}

std::optional<std::string> McpAnswer::stream_refusal(const std::string& body, const RequestHeaders& headers,
                                                     AnswerFacts& facts) {
  Exchange check;
  check.headers = headers;
  auto refused = server_.refusal(body, check);
  if (refused) {
    facts.rpc_method = check.method;
    facts.rpc_error = check.rpc_error;
  }
  return refused;
}

void McpAnswer::stream(const std::string& body, const std::string& scope, const RequestHeaders& headers,
                       const std::function<void(const std::string&)>& send, AnswerFacts& facts) {
  Exchange ex{.notify = send, .scope = scope, .headers = headers};
  if (auto reply = handle(body, ex, facts)) send(*reply);
}

std::string McpAnswer::sse_event(const std::string& line) { return "event: message\ndata: " + line + "\n\n"; }

}  // namespace causeway::mcp
