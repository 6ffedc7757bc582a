// The request gate of the HTTPS transport (the middleware, in the MCP go-sdk's
// handler/middleware split): what a request head must pass before the router hands it to a
// handler — the Host and Origin checks (DNS rebinding), the one path, the bearer token, the
// per-client rate limits and the body framing. It decides from the head alone (no cpp-httplib
// here: tests/unit/test_mcp_security.cpp calls it directly); the connection gate in front of it
// is mcp/https_gate.h, the router and the answer are mcp/transport_https.cpp and
// mcp/https_answer.h. docs/MCP.md (HTTPS), docs/SECURITY.md.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcp/rate_limit.h"

namespace causeway::mcp {

// A request head as the gate reads it.
struct RequestHead {
  std::string_view method;       // "POST", …
  std::string_view path;         // "/mcp"
  std::string_view remote_addr;  // the client's address (rate-limit key)
  std::function<std::optional<std::string>(const char* name)> header;  // the value, nullopt when absent
};

// How a refused request is answered: always with Connection: close.
struct Refusal {
  int status = 400;
  std::string message;  // a JSON-RPC error (kInvalidRequest) with this message, or plain text
  bool plain_text = false;
  std::vector<std::pair<std::string, std::string>> headers;  // Retry-After, WWW-Authenticate, Allow
};

struct Admission {
  std::optional<Refusal> refusal;  // nullopt: to the router
  bool authenticated = false;      // the request carried a valid token (even when then refused)
};

struct AdmissionPolicy {
  std::vector<std::string> tokens;  // every accepted bearer token
  std::string allowed_origins;      // comma-separated, besides the localhost origins
  bool loopback = true;             // listening on loopback only: Host must name it
  size_t max_body_bytes = 1 << 20;
  int rate_per_minute = 600;
};

class RequestAdmission {
 public:
  explicit RequestAdmission(AdmissionPolicy policy);
  // Thread-safe (the rate limiters lock).
  Admission check(const RequestHead& head);

 private:
  AdmissionPolicy policy_;
  RateLimiter limiter_;
  // Failed authentication gets its own budget per address, so guessing tokens is slow and
  // cannot drain a real user's bucket.
  RateLimiter auth_failures_;
};

// Whether an Origin header value may call us: localhost origins always, else the allow-list.
bool origin_allowed(const std::string& origin, const std::string& allowed_csv);

// Whether a Host header names this machine's loopback (localhost, 127.0.0.1, [::1], any port).
// Checked when the server listens on loopback only.
bool localhost_name(const std::string& host_header);

// Whether a listen host is loopback.
bool loopback_address(const std::string& host);

// ASCII lower case (header values compared case-insensitively).
std::string https_lower(std::string s);

}  // namespace causeway::mcp
