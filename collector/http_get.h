// A small, bounded HTTP/1.0 GET for an engine's /metrics on this host (docs/INFERENCE.md
// "Engine metrics"): one connection per request, closed by the server; a deadline on the
// whole exchange and a cap on the bytes read, so a stuck or hostile endpoint costs at most
// that. HTTP/1.0 rules out chunked bodies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace causeway::collector {

struct HttpGetOptions {
  int64_t deadline_ns = 1'000'000'000;
  size_t max_bytes = 8u << 20;  // head and body together
  // Called with the connection's local port once connected, before the request is sent:
  // the traced server will see this connection, and the caller tells it apart.
  void (*on_local_port)(void* ctx, uint16_t port) = nullptr;
  void* ctx = nullptr;
};

// The body of a 200 response. Errors: "connect", "timeout", "too_large", "http" (not a 200,
// or not HTTP).
Result<std::string> http_get_local(uint16_t port, std::string_view path, const HttpGetOptions& o);

// The body of a raw HTTP/1.x response read until close (pure: tested on hostile bytes).
Result<std::string> http_response_body(std::string_view raw);

}  // namespace causeway::collector
