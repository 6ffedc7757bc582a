// Streamable HTTP at https://HOST:PORT/mcp (cpp-httplib + OpenSSL), stateless:
// POST carries one JSON-RPC message; the answer is JSON (or an SSE stream when a tools/call
// asks for progress); notifications get 202; GET/DELETE get 405. TLS 1.3 only, bearer token
// required, Origin checked, body size and per-client rate limited, one audit line per request.
// Its parts: the connection gate (mcp/https_gate.h), the request gate (mcp/https_admission.h),
// the router (mcp/transport_https.cpp) and the answer (mcp/https_answer.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "common/result.h"
#include "mcp/protocol.h"

namespace causeway::mcp {

struct HttpsOptions {
  std::string listen = "127.0.0.1:8443";  // HOST:PORT, [v6]:PORT, or PORT (= 127.0.0.1:PORT)
  std::string tls_cert;
  std::string tls_key;
  std::string token_file;
  std::string allowed_origins;  // comma-separated, besides http(s)://localhost|127.0.0.1|[::1][:port]
  std::string audit_log;        // "" = stderr
  std::string state_dir;        // generated certificate; "" = default_state_dir()
  int rate_per_minute = 600;
  size_t max_body_bytes = 1 << 20;
  size_t threads = 8;
  // Called once listening, with the bound port (tests bind port 0).
  std::function<void(int port)> on_listening;
};

// Serves until stop() turns true. Fails on bad options, TLS material or a busy port.
Result<void> serve_https(Server& server, const HttpsOptions& options, const std::function<bool()>& stop);

}  // namespace causeway::mcp
