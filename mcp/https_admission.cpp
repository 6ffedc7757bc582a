#include "mcp/https_admission.h"

#include <cctype>
#include <sstream>

#include "mcp/auth.h"

namespace causeway::mcp {

std::string https_lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool localhost_name(const std::string& host_header) {
  std::string h = https_lower(host_header);
  for (const char* name : {"localhost", "127.0.0.1", "[::1]"}) {
    std::string n = name;
    if (h == n) return true;
    if (h.rfind(n + ":", 0) == 0 && h.size() > n.size() + 1 && h.find_first_not_of("0123456789", n.size() + 1) == std::string::npos)
      return true;
  }
  return false;
}

bool loopback_address(const std::string& host) { return host == "127.0.0.1" || host == "::1" || host == "localhost"; }

bool origin_allowed(const std::string& origin, const std::string& allowed_csv) {
  std::string o = https_lower(origin);
  for (const char* scheme : {"http://", "https://"}) {
    for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
      std::string base = std::string(scheme) + host;
      if (o == base) return true;
      if (o.rfind(base + ":", 0) == 0 && o.size() > base.size() + 1 &&
          o.find_first_not_of("0123456789", base.size() + 1) == std::string::npos)
        return true;
    }
  }
  std::stringstream ss(allowed_csv);
  for (std::string a; std::getline(ss, a, ',');) {
    size_t b = a.find_first_not_of(' '), e = a.find_last_not_of(' ');
    if (b != std::string::npos && o == https_lower(a.substr(b, e - b + 1))) return true;
  }
  return false;
}

RequestAdmission::RequestAdmission(AdmissionPolicy policy)
    : policy_(std::move(policy)),
      limiter_(RateLimiter::per_minute(policy_.rate_per_minute)),
      auth_failures_(RateLimiter::per_minute(policy_.rate_per_minute)) {}

namespace https_admission_detail {

Refusal refused(int status, std::string message) { return Refusal{status, std::move(message), false, {}}; }

Refusal too_many_requests() {
  Refusal r = refused(429, "Too many requests: slow down (per-client rate limit)");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

// Bodies are framed by Content-Length or chunked, nothing else (no read-until-close, no
// smuggling with both), and a declared length over --max-body is refused unread.
std::optional<Refusal> framing_refusal(const RequestHead& head, size_t max_body) {
  const auto transfer_encoding = head.header("Transfer-Encoding");
  const auto content_length = head.header("Content-Length");
  if (head.method != "POST" && head.method != "GET" && head.method != "DELETE") {
    Refusal r = refused(405, "Method not allowed: POST JSON-RPC messages to /mcp");
    r.headers.emplace_back("Allow", "POST");
    return r;
  }
  const bool has_body = transfer_encoding || (content_length && *content_length != "0");
  if (head.method != "POST" && has_body) return refused(400, "Only POST requests carry a body here");
  const bool chunked = transfer_encoding.has_value();
  if (chunked && https_lower(*transfer_encoding) != "chunked")
    return refused(501, "Transfer-Encoding not supported (chunked only)");
  if (chunked && content_length) return refused(400, "Both Content-Length and Transfer-Encoding");
  if (head.method == "POST" && !chunked && !content_length) return refused(411, "Content-Length required");
  if (content_length) {
    uint64_t length = 0;
    try {
      length = std::stoull(*content_length);
    } catch (...) {
      return refused(400, "Bad Content-Length");
    }
    if (length > max_body) return refused(413, "Request body larger than --max-body");
  }
  return std::nullopt;
}

}  // namespace https_admission_detail

Admission RequestAdmission::check(const RequestHead& head) {
  using namespace https_admission_detail;
  // A browser page on another site must not reach a local server (DNS rebinding).
  // Bound to loopback, only loopback names may appear in Host (DNS rebinding again).
  if (policy_.loopback && !localhost_name(head.header("Host").value_or("")))
    return {refused(403, "Forbidden: Host not allowed"), false};
  if (auto origin = head.header("Origin"); origin && !origin_allowed(*origin, policy_.allowed_origins))
    return {refused(403, "Forbidden: Origin not allowed"), false};
  if (head.path != "/mcp") {
    // No OAuth here: a 404 on /.well-known/oauth-* and /register (not a 401) tells an
    // OAuth-capable client there is nothing to discover or register, and the 401 on /mcp
    // says a bearer token is expected (RFC 9728 §5, RFC 6750 §3). docs/MCP.md.
    return {Refusal{404,
                    "Not found. This server serves MCP at /mcp and takes a static bearer token (Authorization: Bearer "
                    "<token>); it has no OAuth endpoints.\n",
                    true,
                    {}},
            false};
  }
  const auto authorization = head.header("Authorization");
  auto who = matching_token(authorization.value_or(""), policy_.tokens);
  if (!who) {
    if (!auth_failures_.allow(std::string(head.remote_addr))) return {too_many_requests(), false};
    // RFC 6750 §3.1: no error code when no credentials were sent; invalid_token otherwise.
    Refusal r = refused(401, "Unauthorized: send Authorization: Bearer <token>");
    r.headers.emplace_back("WWW-Authenticate",
                           authorization ? "Bearer realm=\"causeway\", error=\"invalid_token\", error_description=\"unknown bearer token\""
                                         : "Bearer realm=\"causeway\"");
    return {std::move(r), false};
  }
  if (!limiter_.allow("token " + std::to_string(*who) + " from " + std::string(head.remote_addr)))
    return {too_many_requests(), true};
  return {framing_refusal(head, policy_.max_body_bytes), true};
}

}  // namespace causeway::mcp
