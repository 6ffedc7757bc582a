// A small, bounded HTTP/1.0 GET for an engine's /metrics on this host (docs/INFERENCE.md
// "Engine metrics"): one connection per request, closed by the server, made from inside the
// server's network namespace (a container's); a deadline on the whole exchange and a cap on
// the bytes read, so a stuck or hostile endpoint costs at most that. HTTP/1.0 rules out
// chunked bodies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collector/endpoint.h"
#include "common/result.h"

namespace causeway::collector {

struct HttpGetOptions {
  int64_t deadline_ns = 1'000'000'000;
  size_t max_bytes = 8u << 20;  // head and body together
  // Our end is bound (to the server's own address, port 0) before it connects, so its 4-tuple
  // is known before the server can accept it: on_open is called with the server's address and
  // ours then, on_close with the same just before the socket is closed. The traced server
  // sees this connection; the caller tells it apart by exactly this tuple while it is open
  // (collector/engine_scraper.h). `answered`: the server's answer was read to its close, so
  // the server had accepted the connection; else (a timeout, a refusal) it may still accept
  // it from its backlog after we closed. An address that cannot be bound to (a link-local
  // one without its scope): connected unbound and told once connected, before the request.
  void (*on_open)(void* ctx, const Endpoint& server, const Endpoint& local) = nullptr;
  void (*on_close)(void* ctx, const Endpoint& server, const Endpoint& local, bool answered) = nullptr;
  void* ctx = nullptr;
};

// The body of a 200 response from `at`, connected to from pid's network namespace. Errors:
// "netns", "netns_stuck" (socket_in_namespace_of), "connect", "timeout", "too_large", "http"
// (not a 200, or not HTTP).
Result<std::string> http_get(uint32_t pid, const Endpoint& at, std::string_view path, const HttpGetOptions& o);

// The body of a raw HTTP/1.x response read until close (pure: tested on hostile bytes).
Result<std::string> http_response_body(std::string_view raw);

}  // namespace causeway::collector
